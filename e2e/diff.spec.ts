// An operator compares two snapshots of the seeded history (scripts/diff-seed.ts): one click
// from a checkpoint's page to the diff with its predecessor, then pasting ids by hand, on a
// desktop and on a phone.
import AxeBuilder from "@axe-core/playwright";
import type { Page } from "@playwright/test";
import { callTrpc, expect, test } from "./fixtures.ts";
import { signIn } from "./users.ts";

const WORK_CONTEXT = "issue-530-avatar-upload";

/** The seeded checkpoints of the diff's work context, oldest first. */
async function seededCheckpoints(page: Page): Promise<string[]> {
  const found: { id: string; sequence: number }[] = [];
  let cursor: string | null = null;
  do {
    const { result } = await callTrpc(
      page,
      "browse.snapshots",
      { limit: 200, includeRetired: true, ...(cursor ? { cursor } : {}) },
      "query",
    );
    const page_ = result as {
      items: { id: string; workContextId: string | null; sequence: number | null }[];
      nextCursor: string | null;
    };
    for (const s of page_.items)
      if (s.workContextId === WORK_CONTEXT) found.push({ id: s.id, sequence: s.sequence ?? 0 });
    cursor = page_.nextCursor;
  } while (cursor);
  return found.sort((a, b) => a.sequence - b.sequence).map((s) => s.id);
}

/** Serious and critical axe-core violations of the page, in the light and the dark theme. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  const found: string[] = [];
  for (const colorScheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme });
    const { violations } = await new AxeBuilder({ page }).analyze();
    for (const v of violations)
      if (v.impact === "serious" || v.impact === "critical")
        found.push(`${colorScheme}: ${v.id} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
  return found;
}

async function expectSeededDiff(page: Page) {
  const main = page.getByRole("main");
  await expect(page.getByTestId("diff-stat")).toHaveText("4 file(s): 1 added, 2 modified, 1 deleted · +7 −3 lines");
  const files = page.getByRole("region", { name: "Files" });
  await expect(files.getByRole("row")).toHaveCount(5);
  // The binary image is named with its sizes, never shown.
  await expect(files.getByRole("row", { name: /public\/avatar-placeholder\.png/ })).toContainText(
    "binary, 12.3 KiB -> 12.9 KiB",
  );
  const image = page.getByRole("region", { name: "public/avatar-placeholder.png, modified" });
  await expect(image).toContainText("Binary file: binary, 12.3 KiB -> 12.9 KiB. Not shown.");
  await expect(image.locator("table")).toHaveCount(0);
  // The text change: the removed line and the added one, coloured apart, with their line numbers.
  const avatar = page.getByRole("region", { name: "src/profile/avatar.ts, modified" });
  await expect(avatar.locator("tr.diff-hunk")).toHaveText(["@@ -8,5 +8,5 @@"]);
  await expect(avatar.locator("tr.diff-del")).toHaveText(["11-  return image;"]);
  await expect(avatar.locator("tr.diff-add")).toHaveText(["11+  return storeAvatar(userId, image);"]);
  const added = await avatar.locator("tr.diff-add td.diff-text").evaluate((el) => getComputedStyle(el).backgroundColor);
  const removed = await avatar
    .locator("tr.diff-del td.diff-text")
    .evaluate((el) => getComputedStyle(el).backgroundColor);
  expect(added).not.toBe(removed);
  await expect(page.getByRole("region", { name: "src/profile/upload.ts, added" }).locator("tr.diff-add")).toHaveCount(
    6,
  );
  await expect(page.getByRole("region", { name: "docs/avatar-notes.md, deleted" }).locator("tr.diff-del")).toHaveCount(
    2,
  );
  // The denied file is named as left out, and nothing of it is shown.
  await expect(main).toContainText("Left out of the captures as secrets, never compared: .env.local");
  await expect(page.getByRole("region", { name: /\.env\.local/ })).toHaveCount(0);
}

test("an operator compares a checkpoint with its predecessor in one click, then two pasted snapshots", async ({
  page,
}) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await signIn(page, "operator");
  const [first, second] = await seededCheckpoints(page);
  expect(first && second).toBeTruthy();

  await page.goto(`/snapshots/${second}`);
  await expect(page.getByRole("heading", { level: 1, name: /^Checkpoint/ })).toBeVisible();
  await page.getByRole("link", { name: "Compare with predecessor" }).click();
  await expect(page).toHaveURL(new RegExp(`/diff\\?from=${first}&to=${second}$`));
  await expect(page.getByRole("heading", { level: 1, name: "Compare snapshots" })).toBeVisible();
  await expectSeededDiff(page);
  await page.screenshot({ path: "e2e/screenshots/diff-desktop.png", fullPage: true });
  expect(await accessibilityProblems(page)).toEqual([]);

  // Pasted by hand: a link to a snapshot's page and a bare id, swapped round.
  await page.goto("/diff");
  await expect(page.getByTestId("empty-state")).toContainText("Choose two snapshots");
  await page.getByRole("textbox", { name: "From", exact: true }).fill(`  ${second}  `);
  await page.getByRole("textbox", { name: "To", exact: true }).fill(`http://127.0.0.1/snapshots/${first}`);
  await page.getByRole("button", { name: "Swap from and to" }).click();
  await page.getByRole("button", { name: "Compare" }).click();
  await expect(page).toHaveURL(new RegExp(`/diff\\?from=${first}&to=${second}$`));
  await expectSeededDiff(page);

  // A snapshot that does not exist is said, not a blank page.
  await page.goto(`/diff?from=${first}&to=0d3c1a52-8d0e-4a4e-9a56-3f1e8b2c9d71`);
  await expect(page.getByRole("main")).toContainText("was not found");
});

test("the diff on a phone: the page keeps to the screen, the diff scrolls in its own box", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page, "operator");
  const [first, second] = await seededCheckpoints(page);
  await page.goto(`/diff?from=${first}&to=${second}`);
  await expectSeededDiff(page);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  await expect(page.getByRole("textbox", { name: "To", exact: true })).toBeInViewport();
  await page.screenshot({ path: "e2e/screenshots/diff-phone.png", fullPage: true });
  expect(await accessibilityProblems(page)).toEqual([]);
  await page.emulateMedia({ colorScheme: "dark" });
  await page.screenshot({ path: "e2e/screenshots/diff-phone-dark.png", fullPage: true });
});
