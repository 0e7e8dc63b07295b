// axe-core on every dashboard page, the sign-in page and the 404, at desktop and phone sizes, in
// the light theme (every rule) and the dark one (the colour rules): no serious or critical
// violation anywhere.
import AxeBuilder from "@axe-core/playwright";
// The base test, not fixtures.ts: a 404 is logged by the browser as a console error, on purpose here.
import { expect, test, type Page } from "@playwright/test";
import { dashboardPages, openSettled } from "./dashboard-pages.ts";
import { signIn } from "./users.ts";

const SIZES = [
  { name: "desktop", viewport: { width: 1440, height: 900 } },
  { name: "phone", viewport: { width: 390, height: 844 } },
] as const;
const SCHEMES = ["light", "dark"] as const;

/**
 * The rules whose outcome depends on colours. The dark theme changes colours only (the custom
 * properties and graph badges in app/globals.css's prefers-color-scheme blocks): the page's
 * structure, names and roles are the light theme's, which every rule checks.
 */
const COLOUR_RULES = ["color-contrast", "link-in-text-block"];

/** The serious and critical violations on the page as it is now, one line each. */
async function seriousViolations(page: Page, label: string, rules?: string[]): Promise<string[]> {
  const builder = new AxeBuilder({ page });
  const results = await (rules ? builder.withRules(rules) : builder).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .flatMap((v) =>
      v.nodes.map(
        (node) => `${label}: ${v.id} (${v.impact}) at ${node.target.join(" ")}: ${node.failureSummary ?? ""}`,
      ),
    );
}

/** The page as it is now, in both themes (the system setting, emulated); a screenshot of the dark one. */
async function inBothThemes(page: Page, label: string, darkShot?: string): Promise<string[]> {
  const found: string[] = [];
  for (const colorScheme of SCHEMES) {
    await page.emulateMedia({ colorScheme });
    const rules = colorScheme === "dark" ? COLOUR_RULES : undefined;
    found.push(...(await seriousViolations(page, `${label} (${colorScheme})`, rules)));
    if (colorScheme === "dark" && darkShot) await page.screenshot({ path: `e2e/screenshots/${darkShot}.png` });
  }
  await page.emulateMedia({ colorScheme: "light" });
  return found;
}

for (const size of SIZES) {
  test.describe(size.name, () => {
    test.use({ viewport: size.viewport });

    test("every dashboard page and the 404, light and dark: no serious or critical axe violation", async ({ page }) => {
      test.setTimeout(600_000);
      await signIn(page, "operator");
      const pages = await dashboardPages(page);
      expect(pages.length).toBeGreaterThanOrEqual(10);
      const found: string[] = [];
      for (const p of pages) {
        await openSettled(page, p.path);
        const slug = p.route.slice(1).replace(/[[\]]/g, "").replace(/\//g, "-");
        found.push(...(await inBothThemes(page, p.route, `dark-${size.name}-${slug}`)));
      }
      // The navigation opened on a phone (the menu over the page) is checked too.
      if (size.name === "phone") {
        await openSettled(page, "/pins");
        await page.getByRole("button", { name: "Menu" }).click();
        await expect(page.getByRole("navigation", { name: "Main" })).toBeVisible();
        found.push(...(await inBothThemes(page, "/pins with the menu open")));
      }
      await openSettled(page, "/no-such-page");
      found.push(...(await inBothThemes(page, "404")));
      await page.goto("/snapshots/not-a-snapshot");
      await expect(page.getByTestId("error-panel")).toBeVisible();
      found.push(...(await inBothThemes(page, "a snapshot id that names nothing")));
      expect(found).toEqual([]);
    });

    test("the sign-in page and the signed-out 404, light and dark: no serious or critical axe violation", async ({
      page,
    }) => {
      await page.goto("/signin");
      await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
      const found = await inBothThemes(page, "/signin");
      await page.goto("/no-such-page/at-all");
      await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
      found.push(...(await inBothThemes(page, "signed-out 404")));
      expect(found).toEqual([]);
    });
  });
}
