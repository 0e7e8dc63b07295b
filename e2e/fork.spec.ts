import { callTrpc, expect, test } from "./fixtures.ts";
import { credentials, signIn } from "./users.ts";

test("an operator forks work contexts from a ready checkpoint and sees them in the graph and the audit log", async ({
  page,
}) => {
  await signIn(page, "operator");
  await page.getByRole("link", { name: "payments-api" }).click();
  const graph = page.getByTestId("lineage-graph");
  await graph.getByRole("button", { name: /^checkpoint issue-80-ledger-export #1,/ }).click();
  await page.getByRole("complementary", { name: "Selected node" }).getByRole("link", { name: "Open snapshot" }).click();
  await expect(page.getByRole("heading", { level: 1, name: /^Checkpoint/ })).toContainText("ready");

  await page.getByRole("button", { name: "Fork…" }).click();
  const dialog = page.getByRole("dialog", { name: "Fork work contexts from checkpoint #1 of issue-80-ledger-export" });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByLabel(/^How many work contexts/)).toBeFocused();
  await dialog.getByLabel(/^How many work contexts/).fill("3");
  await dialog.getByLabel(/^Reason/).fill("Retry the export three ways after the CSV escaping bug");
  await page.screenshot({ path: "e2e/screenshots/fork-dialog.png" });
  await dialog.getByRole("button", { name: "Fork", exact: true }).click();
  const result = dialog.getByTestId("fork-result");
  await expect(result).toContainText("Forked 3 work contexts");
  await expect(result.getByRole("listitem")).toHaveCount(3);
  await dialog.getByRole("button", { name: "Done" }).click();
  await expect(dialog).toBeHidden();

  // The checkpoint is unchanged, and lists the work contexts forked from it.
  await expect(page.getByRole("heading", { level: 1 })).toContainText("ready");
  const forks = page.getByRole("region", { name: "Work contexts forked from it" });
  await expect(forks.getByRole("row")).toHaveCount(4);
  await expect(forks).toContainText("Retry the export three ways after the CSV escaping bug");

  // The graph draws each fork as a work context with a fork edge from the checkpoint.
  await page.getByRole("link", { name: "payments-api" }).first().click();
  await expect(graph.getByRole("button", { name: /^forked work context wc_.* \(forked\), active/ })).toHaveCount(3);
  await expect(graph.locator(".react-flow__edge-text", { hasText: "forked" }).first()).toBeVisible();
  await page.screenshot({ path: "e2e/screenshots/graph-with-forks.png", fullPage: true });

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).click();
  const row = page.getByRole("row", { name: /lineage\.fork/ }).filter({ hasText: credentials("operator").email });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText("Retry the export three ways after the CSV escaping bug");
});

test("support sees no Fork control, and the server refuses a fork from support", async ({ page }) => {
  await signIn(page, "support");
  await page.getByRole("link", { name: "payments-api" }).click();
  await page
    .getByTestId("lineage-graph")
    .getByRole("button", { name: /^checkpoint issue-80-ledger-export #1,/ })
    .click();
  await page.getByRole("complementary", { name: "Selected node" }).getByRole("link", { name: "Open snapshot" }).click();
  await expect(page.getByRole("heading", { level: 1, name: /^Checkpoint/ })).toBeVisible();
  await expect(page.getByRole("button", { name: "Fork…" })).toHaveCount(0);
  const fromCheckpoint = page.url().split("/").at(-1)!;
  const refused = await callTrpc(
    page,
    "dashboard.forkCheckpoint",
    { fromCheckpoint, count: 2, reason: "trying anyway" },
    "mutation",
  );
  expect(refused.status).toBe(403);
  expect(refused.error?.data.strata?.code).toBe("FORBIDDEN");
});
