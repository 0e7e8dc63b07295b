import { expect, test } from "@playwright/test";
import { agentToken, credentials, signIn, type Role } from "./users.ts";

test("a signed-out visitor is sent to the sign-in page", async ({ page }) => {
  await page.goto("/snapshots");
  await expect(page).toHaveURL(/\/signin$/);
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await page.screenshot({ path: "e2e/screenshots/signin.png", fullPage: true });
});

for (const role of ["operator", "support", "admin"] as Role[]) {
  test(`a ${role} signs in, sees their role, and signs out`, async ({ page }) => {
    await signIn(page, role);
    await expect(page).toHaveURL(/\/repositories$/);
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page).toHaveURL(/\/signin$/);
    await page.goto("/repositories");
    await expect(page).toHaveURL(/\/signin$/);
  });
}

test("a wrong password is refused with a clear message", async ({ page }) => {
  await page.goto("/signin");
  await page.getByLabel("Email").fill(credentials("operator").email);
  await page.getByLabel("Password").fill("not-the-password-at-all");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "do not match" })).toBeVisible();
  await expect(page).toHaveURL(/\/signin$/);
});

test("dashboard data needs a signed-in user: no cookie, no data", async ({ request }) => {
  const response = await request.get("/api/trpc/browse.repositories");
  expect(response.status()).toBe(401);
});

test("an agent token is answered by the agent API as strata serve serves it, and gives no dashboard data", async ({
  request,
}) => {
  const headers = { authorization: `Bearer ${agentToken()}` };
  const acquired = await request.post("/api/trpc/workspace.acquire", {
    headers,
    data: {
      json: {
        repository: { identity: "e2e.strata.test/acme/agent-api" },
        backendKind: "local",
        baseImage: "img",
        canonicalRef: "main",
        workspace: "/w/e2e",
        host: "e2e-host",
      },
    },
  });
  expect(acquired.status()).toBe(200);
  const plan = (await acquired.json()) as { result: { data: { json: { rung: string; restoreId: string } } } };
  expect(plan.result.data.json).toMatchObject({ rung: "cold" });
  // A batch of two calls, as the CLI sends them, answered in order.
  const inputs = encodeURIComponent(JSON.stringify({ 0: { json: {} }, 1: { json: {} } }));
  const batch = await request.get(`/api/trpc/lineage.list,job.list?batch=1&input=${inputs}`, { headers });
  expect(batch.status()).toBe(200);
  const answers = (await batch.json()) as { result?: unknown }[];
  expect(answers.map((answer) => Boolean(answer.result))).toEqual([true, true]);
  // The same token is not a dashboard user.
  expect((await request.get("/api/trpc/browse.repositories", { headers })).status()).toBe(401);
  // A wrong token is refused with the typed error.
  const refused = await request.post("/api/trpc/workspace.acquire", {
    headers: { authorization: "Bearer not-a-token" },
    data: { json: {} },
  });
  expect(refused.status()).toBe(401);
});

test("nobody can sign up through the web", async ({ request }) => {
  const response = await request.post("/api/auth/sign-up/email", {
    data: { email: "intruder@strata.test", password: "long-enough-password", name: "x" },
    headers: { origin: "http://127.0.0.1:3210" },
  });
  expect(response.ok()).toBe(false);
});

test("on a phone, sign-in fits the screen and lands on the dashboard behind its Menu button", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("/signin");
  await expect(page.getByRole("button", { name: "Sign in" })).toBeVisible();
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await signIn(page, "support");
  await expect(page).toHaveURL(/\/repositories$/);
  await expect(page.getByRole("button", { name: "Menu" })).toBeVisible();
  await expect(page.getByRole("heading", { level: 1, name: "Repositories" })).toBeVisible();
  await page.screenshot({ path: "e2e/screenshots/signin-phone-signed-in.png" });
});
