import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, type Page } from "@playwright/test";

export type Role = "operator" | "support" | "admin";

const E2E_DATA_DIR = ".strata-e2e";

export function credentials(role: Role): { email: string; password: string } {
  const users = JSON.parse(readFileSync(path.join(E2E_DATA_DIR, "e2e-users.json"), "utf8")) as Record<
    Role,
    { email: string; password: string }
  >;
  return users[role];
}

/** The token of the agent serve.mjs created. */
export function agentToken(): string {
  return (JSON.parse(readFileSync(path.join(E2E_DATA_DIR, "e2e-agent.json"), "utf8")) as { token: string }).token;
}

/** Signs in through the sign-in page, as a person does. */
export async function signIn(page: Page, role: Role): Promise<void> {
  const { email, password } = credentials(role);
  await page.goto("/signin");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("whoami")).toContainText(`${email} · ${role}`);
}
