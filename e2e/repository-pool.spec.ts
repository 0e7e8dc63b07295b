// The repository page's pooled worktrees: the e2e server's host and pool directory, the web-app
// worktrees serve.mjs pooled (server/testing/seed-pool-process.ts: one held, one idle and clean,
// linking the snapshot it last held), and the empty state of a repository this host has none of.
import path from "node:path";
import { callTrpc, expect, test } from "./fixtures.ts";
import { agentToken, signIn } from "./users.ts";

const POOL_DIR = path.resolve(".strata-e2e", "worktrees"); // playwright.config.ts's data directory

test("a repository page shows this host's pooled worktrees of the repository", async ({ page }) => {
  await signIn(page, "support");
  await page.getByRole("link", { name: "web-app" }).click();
  const pool = page.getByRole("region", { name: "Pooled worktrees" });
  await expect(pool.getByTestId("pool-host")).toContainText(`in ${POOL_DIR}.`);

  const held = pool.getByRole("row", { name: /web-app-1/ });
  await expect(held.locator(".badge")).toHaveText("held");
  await expect(held).toContainText(/pid \d+ on \S+/);
  await expect(held).toContainText(/refreshed (just now|\d+ (s|min) ago)/);
  await expect(held).toContainText("issue-501-flaky-e2e");
  const idle = pool.getByRole("row", { name: /web-app-2/ });
  await expect(idle.locator(".badge")).toHaveText("idle-clean");
  await expect(idle).toContainText(/released (just now|\d+ (s|min) ago)/);
  await pool.screenshot({ path: "e2e/screenshots/repository-pool.png" });

  // The idle worktree's last snapshot is a catalog snapshot: its link opens that snapshot's page.
  await idle.getByRole("link").click();
  await expect(page).toHaveURL(/\/snapshots\/[^/]+$/);
  await expect(page.getByRole("heading", { level: 1, name: /^(Baseline|Checkpoint)/ })).toBeVisible();

  await page.goto("/repositories");
  await page.getByRole("link", { name: "payments-api" }).click();
  const none = page.getByRole("region", { name: "Pooled worktrees" });
  await expect(none.getByRole("heading", { name: "No pooled worktrees on this host" })).toBeVisible();
  await expect(none).toContainText("has no pooled worktrees for this repository");
});

test("the pool is a dashboard read: an agent token is refused", async ({ playwright, baseURL }) => {
  const agent = await playwright.request.newContext({
    baseURL,
    extraHTTPHeaders: { authorization: `Bearer ${agentToken()}` },
  });
  const { status, error } = await callTrpc(agent, "dashboard.repositoryPool", { repositoryId: "any" }, "query");
  expect({ status, code: error?.data.code }).toEqual({ status: 401, code: "UNAUTHORIZED" });
  await agent.dispose();
});
