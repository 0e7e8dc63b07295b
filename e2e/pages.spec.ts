import { expect, test } from "./fixtures.ts";
import { signIn } from "./users.ts";

// Every page loads on the seeded catalog, reads it, and shows what it holds.
const PAGES = [
  { path: "/repositories", heading: "Repositories", shows: "web-app" },
  { path: "/snapshots", heading: "Snapshots", shows: "issue-501-flaky-e2e" },
  { path: "/pins", heading: "Pins", shows: "active pins" },
  { path: "/holds", heading: "Live holds", shows: "issue-530-awaiting-review" },
  { path: "/restores", heading: "Restores", shows: "degraded" },
  { path: "/degraded", heading: "Degraded restores", shows: "Next step" },
  { path: "/gc", heading: "Garbage collection", shows: "Space held by retired snapshots" },
  { path: "/audit", heading: "Audit log", shows: "snapshot.retire" },
];

test.describe("signed in as an operator", () => {
  test.beforeEach(async ({ page }) => {
    await signIn(page, "operator");
  });

  test("the home page opens the repositories page", async ({ page }) => {
    await page.goto("/");
    await expect(page).toHaveURL(/\/repositories$/);
  });

  for (const p of PAGES) {
    test(`${p.heading} page shows the catalog`, async ({ page }) => {
      await page.goto(p.path);
      await expect(page.getByRole("heading", { level: 1, name: p.heading })).toBeVisible();
      await expect(page.getByRole("main")).toContainText(p.shows);
      await expect(page.getByTestId("empty-state")).toHaveCount(0);
      // The footer reads the health query: the catalog is the embedded SQLite default.
      await expect(page.getByTestId("health")).toContainText("sqlite");
      await expect(page.getByRole("link", { name: p.heading, exact: true })).toHaveAttribute("aria-current", "page");
      await page.screenshot({ path: `e2e/screenshots/${p.path.slice(1)}.png`, fullPage: true });
    });
  }

  test("navigation reaches every page", async ({ page }) => {
    await page.goto("/repositories");
    for (const p of PAGES) {
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: p.heading, exact: true }).click();
      await expect(page).toHaveURL(new RegExp(`${p.path}$`));
      await expect(page.getByRole("heading", { level: 1, name: p.heading })).toBeVisible();
    }
  });
});

test("the health query answers over HTTP with the database kind and migration", async ({ request }) => {
  const response = await request.get("/api/trpc/health");
  expect(response.ok()).toBe(true);
  const body = (await response.json()) as { result: { data: { json: { database: string; migration: string } } } };
  expect(body.result.data.json.database).toBe("sqlite");
  expect(body.result.data.json.migration).toMatch(/^\d{14}_/);
});

test("the app's manifest and icon are served to anyone, and every page links them", async ({ page, request }) => {
  const manifest = await request.get("/manifest.webmanifest");
  expect(manifest.ok()).toBe(true);
  const body = (await manifest.json()) as { name: string; icons: { src: string }[] };
  expect(body.name).toBe("Strata");
  for (const icon of body.icons) {
    const served = await request.get(icon.src);
    expect(served.ok(), icon.src).toBe(true);
    expect(served.headers()["content-type"]).toContain("image/svg+xml");
  }
  await page.goto("/signin");
  await expect(page.locator('link[rel="manifest"]')).toHaveAttribute("href", "/manifest.webmanifest");
  await expect(page.locator('link[rel="icon"]').first()).toHaveAttribute("href", /\/icon\.svg/);
});
