import { expect, test } from "./fixtures.ts";
import { signIn } from "./users.ts";

test("an operator opens a repository's lineage graph, expands a folded chain, filters it, and opens a snapshot from it", async ({
  page,
}) => {
  await signIn(page, "operator");
  await page.getByRole("link", { name: "web-app" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "web-app" })).toBeVisible();
  const graph = page.getByTestId("lineage-graph");
  await expect(graph.locator(".react-flow__node").first()).toBeVisible();
  // The page marks when its data arrived and when the graph was first drawn.
  await page.waitForFunction(() => performance.getEntriesByName("strata:graph-rendered").length === 1);
  const total = Number(await graph.getAttribute("data-graph-nodes"));
  expect(total).toBeGreaterThan(20);

  // Baselines, checkpoints and the edges between them, each labelled.
  await expect(graph.getByRole("button", { name: /^baseline main @ \w+, superseded/ }).first()).toBeVisible();
  await expect(graph.getByRole("button", { name: /^checkpoint issue-412-login-timeout #1/ })).toBeVisible();
  await expect(graph.locator(".react-flow__edge-text", { hasText: "seeded" }).first()).toBeVisible();
  await expect(graph.locator(".react-flow__edge-text", { hasText: "superseded by" }).first()).toBeVisible();
  await page.screenshot({ path: "e2e/screenshots/repository-graph.png", fullPage: true });

  // The long flaky-test chain is folded into one node; expanding it draws every checkpoint.
  const folded = graph.getByRole("button", { name: /folded checkpoints of issue-501-flaky-e2e/ });
  await expect(folded).toHaveCount(1);
  await folded.click();
  const detail = page.getByRole("complementary", { name: "Selected node" });
  await expect(detail).toContainText("folded checkpoints");
  await detail.getByRole("button", { name: "Expand this chain" }).click();
  await expect(folded).toHaveCount(0);
  await expect(graph.getByRole("button", { name: /^checkpoint issue-501-flaky-e2e #7,/ })).toBeAttached();

  // Filters: one work context (and the baseline it began from, kept as context).
  await page.getByLabel("Work context").selectOption("issue-412-login-timeout");
  await expect(page.getByTestId("graph-summary")).toContainText(`4 of ${total} snapshots`);
  await page.getByRole("checkbox", { name: "ready" }).check();
  await expect(page.getByTestId("graph-summary")).toContainText(`1 of ${total} snapshots`);
  await page.getByRole("button", { name: "Clear filters" }).click();
  await expect(page.getByTestId("graph-summary")).toContainText(`${total} of ${total} snapshots`);

  // Keyboard: a node is a button; Enter shows its detail.
  const node = graph.getByRole("button", { name: /^checkpoint issue-412-login-timeout #2,/ });
  await node.focus();
  await page.keyboard.press("Enter");
  await expect(detail.getByRole("heading", { name: "issue-412-login-timeout #2" })).toBeVisible();
  await detail.getByRole("link", { name: "Open snapshot" }).click();

  await expect(page.getByRole("heading", { level: 1, name: /^Checkpoint/ })).toBeVisible();
  await expect(page.getByRole("main")).toContainText("work context issue-412-login-timeout, checkpoint #2");
  for (const section of [
    "Key",
    "State history",
    "Manifest",
    "Heads and the layer forest beneath them",
    "Pins",
    "Restores it seeded",
  ]) {
    await expect(page.getByRole("heading", { level: 2, name: section, exact: true })).toBeVisible();
  }
  const manifest = page.getByRole("region", { name: "Manifest" });
  await expect(manifest).toContainText("fix/login-timeout");
  await expect(manifest.getByRole("heading", { name: "Patch chain" })).toBeVisible();
  await expect(manifest).toContainText("denied");
  const forest = page.getByRole("region", { name: "Heads and the layer forest beneath them" });
  await expect(forest.locator(".badge.head")).toHaveCount(2);
  await page.screenshot({ path: "e2e/screenshots/snapshot-detail.png", fullPage: true });
});

test("a baseline's page shows its validation evidence and the restores it seeded", async ({ page }) => {
  await signIn(page, "support");
  await page.goto("/snapshots");
  await page.getByRole("checkbox", { name: "Show retired and deleted snapshots" }).check();
  const row = page.getByRole("row", { name: /baseline .* refs\/heads\/main/ }).last();
  await row.getByRole("link").first().click();
  await expect(page.getByRole("heading", { level: 1, name: /^Baseline/ })).toBeVisible();
  const evidence = page.getByRole("region", { name: "Baseline validation evidence" });
  await expect(evidence).toContainText("remoteTrackingRef");
  await expect(evidence).toContainText("refs/remotes/origin/main");
  await expect(page.getByRole("region", { name: "Restores it seeded" })).toContainText("restored");
  // Support browses but does not retire: no retirement controls.
  await expect(page.getByRole("button", { name: /Retire/ })).toHaveCount(0);
  await page.screenshot({ path: "e2e/screenshots/baseline-detail.png", fullPage: true });
});
