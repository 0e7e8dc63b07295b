import { callTrpc, expect, test } from "./fixtures.ts";
import { credentials, signIn } from "./users.ts";

interface QueueItem {
  id: string;
  workContextId: string | null;
  pin: { pinId: string; active: boolean } | null;
}

test("support discards a degraded restore: it leaves the queue, its pin is released, the audit log says why", async ({
  page,
}) => {
  await signIn(page, "support");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Degraded restores" }).click();
  const cards = page.getByTestId("degraded-restore");
  const card = cards.filter({ hasText: "spike-redis-cache" });
  await expect(card).toHaveCount(1);
  const before = await cards.count();
  // What was restored, what is missing, and the next step.
  await expect(card).toContainText("Restored tree");
  await expect(card.getByRole("heading", { name: "Commits (1)" })).toBeVisible();
  await expect(card.getByRole("heading", { name: "Paths (2)" })).toBeVisible();
  await expect(card).toContainText("src/cache/redis.ts");
  await expect(card).toContainText("Next step:");
  const pinId = (await card.locator(".mono", { hasText: "restore:" }).textContent())!.trim();
  await page.screenshot({ path: "e2e/screenshots/degraded-restores.png", fullPage: true });

  await card.getByRole("button", { name: "Discard…" }).click();
  const dialog = page.getByRole("dialog", { name: "Discard this degraded restore" });
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText("pin that keeps the original snapshot");
  await page.screenshot({ path: "e2e/screenshots/discard-dialog.png" });
  await dialog.getByLabel("Reason (recorded in the audit log)").fill("Customer re-created the cache spike by hand");
  await dialog.getByRole("button", { name: "Discard restore" }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole("status").filter({ hasText: "its pin was released" })).toBeVisible();
  await expect(card).toHaveCount(0);
  await expect(cards).toHaveCount(before - 1);

  await page.getByRole("button", { name: "Discarded" }).click();
  const handled = cards.filter({ hasText: "spike-redis-cache" });
  await expect(handled).toContainText(
    `by ${credentials("support").email}: Customer re-created the cache spike by hand`,
  );

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Pins" }).click();
  await page.getByRole("radio", { name: "Closed (released or expired)" }).check();
  // The pins page shows the pin's kind and the start of its id; the whole id is its title.
  const pinRow = page.getByRole("row").filter({ has: page.locator(`[title="${pinId}"]`) });
  await expect(pinRow).toContainText(`restore:${pinId.slice("restore:".length, "restore:".length + 8)}…`);
  await expect(pinRow).toContainText("released");

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).click();
  const row = page.getByRole("row", { name: /restore\.discardDegraded/ });
  await expect(row).toContainText(`${credentials("support").email} (support)`);
  await expect(row).toContainText("Customer re-created the cache spike by hand");
});

test("an operator cannot discard: no button, and the server refuses the call", async ({ page, request }) => {
  await signIn(page, "operator");
  await page.goto("/degraded");
  await expect(page.getByTestId("degraded-restore").first()).toBeVisible();
  await expect(page.getByRole("button", { name: "Discard…" })).toHaveCount(0);

  const queue = await callTrpc(page, "degradedRestore.list", {}, "query");
  const open = (queue.result as QueueItem[])[0]!;
  expect(open.pin?.active).toBe(true);
  // Straight to the endpoint with the operator's session cookie.
  const refused = await callTrpc(
    page,
    "degradedRestore.discard",
    { restoreId: open.id, reason: "not my call" },
    "mutation",
  );
  expect(refused.status).toBe(403);
  expect(refused.error?.data.strata?.code).toBe("FORBIDDEN");

  const after = (await callTrpc(page, "degradedRestore.list", {}, "query")).result as QueueItem[];
  expect(after.find((r) => r.id === open.id)?.pin?.active).toBe(true);
  // No session at all: not even the queue.
  expect((await request.get("/api/trpc/degradedRestore.list")).status()).toBe(401);
});

test("pins: the holds that keep a retired snapshot's content alive", async ({ page }) => {
  await signIn(page, "operator");
  await page.goto("/pins");
  await page.getByRole("checkbox", { name: "Only pins that keep a retired snapshot alive" }).check();
  const row = page.getByRole("row").filter({ hasText: "support:case-1193" });
  await expect(row).toContainText("retired");
  await expect(row).toContainText("support case 1193");
  await expect(page.getByRole("row")).toHaveCount(2);
  await page.screenshot({ path: "e2e/screenshots/pins-keeping-retired.png", fullPage: true });
});
