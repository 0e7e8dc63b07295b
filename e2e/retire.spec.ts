import { callTrpc, expect, test } from "./fixtures.ts";
import { credentials, signIn } from "./users.ts";

test("an operator retires a lineage through the dialog and finds it in the audit log", async ({ page }) => {
  await signIn(page, "operator");
  await page.goto("/snapshots");
  await page
    .getByRole("row", { name: /issue-412-login-timeout #3/ })
    .getByRole("link")
    .first()
    .click();
  await expect(page.getByRole("heading", { level: 1, name: /^Checkpoint/ })).toBeVisible();

  const open = page.getByRole("button", { name: "Retire lineage…" });
  await open.click();
  const dialog = page.getByRole("dialog", { name: "Retire lineage: work context issue-412-login-timeout" });
  await expect(dialog).toBeVisible();
  // It says what will happen before anything does.
  const preview = dialog.getByTestId("retire-preview");
  await expect(preview).toContainText("1 snapshot becomes retired");
  await expect(preview.getByRole("heading", { name: "Stays protected by pins" })).toBeVisible();
  await expect(preview.getByRole("heading", { name: "What collection may reclaim" })).toBeVisible();
  await expect(preview).toContainText("2 earlier checkpoints are already superseded");

  // Keyboard: focus starts in the reason, Tab stays inside, Escape closes without retiring.
  await expect(dialog.getByLabel("Reason (recorded in the audit log)")).toBeFocused();
  const insideDialog = () => page.evaluate(() => document.activeElement?.closest("dialog[open]") !== null);
  for (let i = 0; i < 8; i += 1) {
    await page.keyboard.press("Tab");
    expect(await insideDialog()).toBe(true);
  }
  for (let i = 0; i < 8; i += 1) {
    await page.keyboard.press("Shift+Tab");
    expect(await insideDialog()).toBe(true);
  }
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await expect(open).toBeFocused();

  await open.click();
  await expect(dialog).toBeVisible();
  await page.screenshot({ path: "e2e/screenshots/retire-lineage-dialog.png" });
  await dialog.getByLabel("Reason (recorded in the audit log)").fill("Ticket closed; the fix shipped in 2.14");
  await dialog.getByRole("button", { name: "Retire lineage" }).click();
  await expect(dialog).toBeHidden();
  await expect(
    page.getByRole("status").filter({ hasText: "Retired work context issue-412-login-timeout" }),
  ).toBeVisible();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("retired");
  await expect(page.getByRole("button", { name: "Retire lineage…" })).toHaveCount(0);

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).click();
  const row = page.getByRole("row", { name: /lineage\.retire/ }).filter({ hasText: credentials("operator").email });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText("operator");
  // The person's words in the Why column; "operator" is the kind of retirement, under the action.
  await expect(row.getByTestId("audit-why")).toHaveText("Ticket closed; the fix shipped in 2.14");
  await expect(row).toContainText("issue-412-login-timeout");
  await page.screenshot({ path: "e2e/screenshots/audit-log-after-retire.png", fullPage: true });
});

test("support sees no retirement controls, and the server refuses a retirement from support", async ({ page }) => {
  await signIn(page, "support");
  await page.goto("/snapshots");
  await page
    .getByRole("row", { name: /batch-lint-fixes #4/ })
    .getByRole("link")
    .first()
    .click();
  await expect(page.getByRole("heading", { level: 1, name: /^Checkpoint/ })).toBeVisible();
  await expect(page.getByRole("button", { name: /Retire/ })).toHaveCount(0);
  const snapshotId = page.url().split("/").at(-1)!;
  const refused = await callTrpc(page, "dashboard.retireSnapshot", { snapshotId, reason: "trying anyway" }, "mutation");
  expect(refused.status).toBe(403);
  expect(refused.error?.data.strata?.code).toBe("FORBIDDEN");
  await page.reload();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("ready");
});
