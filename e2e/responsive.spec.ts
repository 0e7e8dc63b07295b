// Every dashboard page on a phone (390x844) and a desktop (1440x900): nothing makes the page wider
// than the screen, no text is squeezed into a column a few characters wide, and the navigation
// collapses behind a Menu button on the phone. Screenshots of each go to e2e/screenshots/.
import type { Page } from "@playwright/test";
import { dashboardPages, openSettled } from "./dashboard-pages.ts";
import { expect, test } from "./fixtures.ts";
import { signIn } from "./users.ts";

const SIZES = [
  { name: "phone", viewport: { width: 390, height: 844 } },
  { name: "desktop", viewport: { width: 1440, height: 900 } },
] as const;

/** How far the page is wider than the window (0 when it fits), and what sticks out. */
async function horizontalOverflow(page: Page): Promise<{ overflow: number; widest: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const overflow = document.documentElement.scrollWidth - width;
    const widest: string[] = [];
    if (overflow > 0) {
      for (const el of document.querySelectorAll<HTMLElement>("body *")) {
        const box = el.getBoundingClientRect();
        if (box.right > width + 1 && widest.length < 5)
          widest.push(`${el.tagName.toLowerCase()}.${el.className} (right edge ${Math.round(box.right)} px)`);
      }
    }
    return { overflow, widest };
  });
}

/**
 * Text wrapped into a column a few characters wide (a card squeezed to one character per line):
 * any element holding a dozen or more characters of its own text that is under 48 px wide yet
 * taller than three lines.
 */
async function squeezedText(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    for (const el of document.querySelectorAll<HTMLElement>("main *")) {
      const own = [...el.childNodes]
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent ?? "")
        .join("")
        .trim();
      if (own.length < 12) continue;
      const box = el.getBoundingClientRect();
      const line = parseFloat(getComputedStyle(el).lineHeight) || 18;
      if (box.width > 0 && box.width < 48 && box.height > 3 * line) found.push(`${el.tagName}: "${own.slice(0, 30)}"`);
    }
    return found;
  });
}

function screenshotName(size: string, route: string): string {
  const slug = route.replace(/^\//, "").replace(/[[\]]/g, "").replace(/\//g, "-");
  return `e2e/screenshots/responsive-${size}-${slug || "home"}.png`;
}

for (const size of SIZES) {
  test.describe(size.name, () => {
    test.use({ viewport: size.viewport });

    test(`every dashboard page fits a ${size.viewport.width} px screen`, async ({ page }) => {
      test.setTimeout(180_000);
      await signIn(page, "operator");
      const problems: string[] = [];
      for (const p of await dashboardPages(page)) {
        await openSettled(page, p.path);
        const { overflow, widest } = await horizontalOverflow(page);
        if (overflow > 0) problems.push(`${p.route}: ${overflow} px wider than the screen: ${widest.join(", ")}`);
        for (const s of await squeezedText(page)) problems.push(`${p.route}: squeezed ${s}`);
        // The main area uses the screen: the whole width less its padding on a phone.
        const main = await page.getByRole("main").boundingBox();
        if (size.name === "phone") expect(main!.width, p.route).toBeGreaterThanOrEqual(size.viewport.width - 1);
        await page.screenshot({ path: screenshotName(size.name, p.route), fullPage: true });
      }
      expect(problems).toEqual([]);
    });
  });
}

test.describe("phone navigation", () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test("the sidebar collapses behind a Menu button that opens, navigates, and closes by keyboard", async ({ page }) => {
    await signIn(page, "operator");
    const menu = page.getByRole("button", { name: "Menu" });
    const nav = page.getByRole("navigation", { name: "Main" });
    await expect(menu).toBeVisible();
    await expect(menu).toHaveAttribute("aria-expanded", "false");
    await expect(nav).toBeHidden();
    // The page's content starts near the top: the bar is one line, not the 220 px sidebar.
    const heading = await page.getByRole("heading", { level: 1 }).boundingBox();
    expect(heading!.y).toBeLessThan(120);

    await menu.click();
    await expect(menu).toHaveAttribute("aria-expanded", "true");
    await expect(nav).toBeVisible();
    await expect(page.getByTestId("health")).toContainText("sqlite");
    await page.screenshot({ path: "e2e/screenshots/responsive-phone-menu-open.png" });
    await nav.getByRole("link", { name: "Pins" }).click();
    await expect(page).toHaveURL(/\/pins$/);
    await expect(page.getByRole("heading", { level: 1, name: "Pins" })).toBeVisible();
    // Opening a page closes the menu.
    await expect(nav).toBeHidden();
    await expect(menu).toHaveAttribute("aria-expanded", "false");

    // Keyboard: Enter opens it, Tab reaches its links, Escape closes it and focus returns to the button.
    await menu.focus();
    await page.keyboard.press("Enter");
    await expect(nav).toBeVisible();
    await page.keyboard.press("Tab");
    await expect(nav.getByRole("link", { name: "Repositories" })).toBeFocused();
    await page.keyboard.press("Escape");
    await expect(nav).toBeHidden();
    await expect(menu).toBeFocused();
  });

  test("on a desktop the navigation is always shown and there is no Menu button", async ({ page }) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await signIn(page, "operator");
    await expect(page.getByRole("navigation", { name: "Main" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Menu" })).toBeHidden();
  });
});
