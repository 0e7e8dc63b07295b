// Garbage collection as an admin runs it (dry run, then a confirmed real run whose figures agree
// with the preview, both in the run log, the schedule shown), and the operator-facing fixes of
// the same issue: names instead of ids, the audit log's why, times in the reader's zone.
import AxeBuilder from "@axe-core/playwright";
import type { Locator, Page } from "@playwright/test";
import { expect, test } from "./fixtures.ts";
import { credentials, signIn } from "./users.ts";

const SIZES = [
  { name: "desktop", width: 1440, height: 900 },
  { name: "phone", width: 390, height: 844 },
] as const;

/** The figures table's cells, row by row: [what, dry run, real run?]. */
async function figures(table: Locator): Promise<string[][]> {
  const rows = table.getByRole("row");
  const out: string[][] = [];
  for (let i = 1; i < (await rows.count()); i += 1) {
    out.push((await rows.nth(i).locator("th, td").allTextContents()).map((t) => t.trim()));
  }
  return out;
}

/** axe-core's serious and critical violations on the page as it is now. */
async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .flatMap((v) => v.nodes.map((n) => `${v.id} at ${n.target.join(" ")}`));
}

async function openCollectionPage(page: Page, size: (typeof SIZES)[number]) {
  await page.setViewportSize({ width: size.width, height: size.height });
  await signIn(page, "admin");
  await page.goto("/gc");
  await expect(page.getByRole("heading", { level: 1, name: "Garbage collection" })).toBeVisible();
}

for (const size of SIZES) {
  test(`${size.name}: an admin previews a collection, confirms the figures, and the run agrees with them`, async ({
    page,
  }) => {
    await openCollectionPage(page, size);
    // The schedule: this app runs no worker, so its own setting (one hour) and the next slot.
    const schedule = page.getByTestId("gc-schedule");
    await expect(schedule).toContainText("Every");
    await expect(schedule).toContainText("1 h");
    await expect(schedule).toContainText("Next run");
    await expect(schedule.locator("time")).not.toHaveCount(0);

    await page.getByRole("button", { name: "Preview a collection (dry run)" }).click();
    const preview = page.getByTestId("gc-preview");
    await expect(preview).toContainText("nothing changed");
    const dry = await figures(preview.getByTestId("gc-figures"));
    const row = (rows: string[][], what: string) => rows.find((r) => r[0] === what) ?? [];
    expect(dry.map((r) => r[0])).toEqual([
      "Expired pins closed",
      "Retired snapshots released",
      "Heads released",
      "Layers deleted",
      "Blobs deleted",
      "Abandoned uploads reclaimed",
      "Space freed",
    ]);
    if (size.name === "desktop") {
      // The seeded history leaves retired checkpoints for the next run: it deletes their layers
      // and frees their bytes (not "3 layers deleted, 0 B freed").
      expect(row(dry, "Layers deleted")[1]).not.toMatch(/^0 /);
      expect(row(dry, "Space freed")[1]).not.toBe("0 B");
    }
    await page.screenshot({ path: `e2e/screenshots/gc-dry-run-${size.name}.png`, fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole("button", { name: "Run collection…" }).click();
    const dialog = page.getByRole("dialog", { name: "Run garbage collection?" });
    await expect(dialog).toBeVisible();
    const freed = row(dry, "Space freed")[1]!;
    await expect(dialog.getByTestId("gc-confirm-figures")).toContainText(`${freed} freed`);
    expect((await figures(dialog.getByTestId("gc-figures"))).map((r) => r.slice(0, 2))).toEqual(dry);
    await page.screenshot({ path: `e2e/screenshots/gc-confirm-${size.name}.png` });
    expect(await seriousViolations(page)).toEqual([]);
    await dialog.getByRole("button", { name: `Delete and free ${freed}` }).click();
    await expect(dialog).toBeHidden();

    await expect(page.getByTestId("gc-agreement")).toContainText("The run did what the preview said");
    const both = await figures(preview.getByTestId("gc-figures"));
    expect(both.map((r) => [r[0], r[1]])).toEqual(dry);
    expect(both.map((r) => r[2])).toEqual(dry.map((r) => r[1]));

    // Both runs in the run log, newest first, started by this admin.
    const log = page.getByTestId("gc-run-log");
    const runs = log.getByRole("row");
    await expect(runs.nth(1)).toContainText("real");
    await expect(runs.nth(1)).toContainText(credentials("admin").email);
    await expect(runs.nth(1)).toContainText(freed);
    await expect(runs.nth(2)).toContainText("dry run");
    await expect(runs.nth(2)).toContainText(credentials("admin").email);
    await expect(runs.nth(2)).toContainText(freed);
    await log.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `e2e/screenshots/gc-run-log-${size.name}.png`, fullPage: true });

    // The real run is in the audit log, with the admin who confirmed it.
    await page.goto("/audit");
    await expect(page.getByRole("row", { name: /gc\.collect/ }).first()).toContainText(credentials("admin").email);
  });
}

test("nobody but an admin sees the collection buttons; the schedule and run log are there for all", async ({
  page,
}) => {
  await signIn(page, "operator");
  await page.goto("/gc");
  await expect(page.getByTestId("gc-schedule")).toContainText("Next run");
  await expect(page.getByTestId("gc-run-log")).toBeVisible();
  await expect(page.getByRole("button", { name: /Preview a collection|Run collection/ })).toHaveCount(0);
});

for (const size of SIZES) {
  test(`${size.name}: pin holders and actors by name, the audit log's why, the pin column whole`, async ({ page }) => {
    await page.setViewportSize({ width: size.width, height: size.height });
    await signIn(page, "operator");

    // Pins an agent's restores took name the agent, not agent:<uuid>.
    await page.goto("/pins?size=25");
    await page.getByRole("radio", { name: "All" }).check();
    const restorePin = page.getByRole("row").filter({ hasText: "restore:" }).first();
    await expect(restorePin).toContainText(/agent (claude-runner-1|codex-batch)/);
    await expect(page.getByRole("main")).not.toContainText(/agent:[0-9a-f]{8}-/);
    await expect(page.getByRole("combobox", { name: "Rows per page" })).toHaveValue("25");
    await page.screenshot({ path: `e2e/screenshots/pins-names-${size.name}.png`, fullPage: true });

    // The audit log: an agent's retirement says why in words, its kind under the action.
    await page.goto("/audit");
    const retired = page
      .getByRole("row", { name: /lineage\.retire/ })
      .filter({ hasText: "agent claude-runner-1" })
      .first();
    await expect(retired.getByTestId("audit-why")).toHaveText("the work completed");
    await expect(retired).toContainText("completed");
    await expect(page.getByRole("main")).not.toContainText(/agent:[0-9a-f]{8}-/);
    await page.screenshot({ path: `e2e/screenshots/audit-why-${size.name}.png`, fullPage: true });

    // The retire dialog of a snapshot an in-flight restore pins: the pin's kind and id, the holder's name.
    await page.goto("/pins");
    const inFlight = page.getByRole("row").filter({ hasText: "restore:" }).filter({ hasText: "codex-batch" }).first();
    await inFlight.getByRole("link").first().click();
    await page.getByRole("button", { name: "Retire snapshot…" }).click();
    const dialog = page.getByRole("dialog", { name: /^Retire snapshot/ });
    const pinRow = dialog.getByRole("row").filter({ hasText: "restore:" });
    await expect(pinRow).toHaveCount(1);
    await expect(pinRow.getByRole("cell").first()).toHaveText(/^restore:[0-9a-f]{8}…$/);
    await expect(pinRow).toContainText("agent codex-batch");
    await page.screenshot({ path: `e2e/screenshots/retire-dialog-pins-${size.name}.png` });
    await page.keyboard.press("Escape");
  });
}

test.describe("times in the reader's zone", () => {
  test.use({ timezoneId: "Europe/Berlin" });

  test("local time with its zone, every time in UTC one click away, and back", async ({ page }) => {
    await signIn(page, "operator");
    await page.goto("/restores");
    const first = page.getByRole("main").locator("button.time").first();
    await expect(first).toHaveText(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (GMT\+1|CET)$/);
    await first.click();
    const all = page.getByRole("main").locator("button.time");
    await expect(all.first()).toHaveText(/ UTC$/);
    for (const text of await all.allInnerTexts()) expect(text).toMatch(/ UTC$/);
    // The choice holds on the next page.
    await page.goto("/audit");
    await expect(page.getByRole("main").locator("button.time").first()).toHaveText(/ UTC$/);
    await page.getByRole("main").locator("button.time").first().click();
    await expect(page.getByRole("main").locator("button.time").first()).toHaveText(/(GMT\+1|CET)$/);
  });
});
