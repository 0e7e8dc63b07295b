// axe-core on every dashboard page, the sign-in page and the 404, at desktop and phone sizes, in
// the light and the dark theme: no serious or critical violation anywhere.
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

/** The serious and critical violations on the page as it is now, one line each. */
async function seriousViolations(page: Page, label: string): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .flatMap((v) =>
      v.nodes.map(
        (node) => `${label}: ${v.id} (${v.impact}) at ${node.target.join(" ")}: ${node.failureSummary ?? ""}`,
      ),
    );
}

for (const size of SIZES) {
  for (const scheme of SCHEMES) {
    test.describe(`${size.name}, ${scheme} theme`, () => {
      test.use({ viewport: size.viewport, colorScheme: scheme });

      test("every dashboard page and the 404 have no serious or critical axe violation", async ({ page }) => {
        test.setTimeout(240_000);
        await signIn(page, "operator");
        const pages = await dashboardPages(page);
        expect(pages.length).toBeGreaterThanOrEqual(10);
        const found: string[] = [];
        for (const p of pages) {
          await openSettled(page, p.path);
          found.push(...(await seriousViolations(page, p.route)));
        }
        // The navigation opened on a phone (a dialog-like panel over the page) is checked too.
        if (size.name === "phone") {
          await openSettled(page, "/pins");
          await page.getByRole("button", { name: "Menu" }).click();
          await expect(page.getByRole("navigation", { name: "Main" })).toBeVisible();
          found.push(...(await seriousViolations(page, "/pins with the menu open")));
        }
        await openSettled(page, "/no-such-page");
        found.push(...(await seriousViolations(page, "404")));
        expect(found).toEqual([]);
      });

      test("the sign-in page and the signed-out 404 have no serious or critical axe violation", async ({ page }) => {
        await page.goto("/signin");
        await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
        const found = await seriousViolations(page, "/signin");
        await page.goto("/no-such-page/at-all");
        await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
        found.push(...(await seriousViolations(page, "signed-out 404")));
        expect(found).toEqual([]);
      });
    });
  }
}
