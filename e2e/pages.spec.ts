import { expect, test } from "@playwright/test";
import { signIn } from "./users.ts";

// A fresh catalog: every page must load, read the catalog, and explain what will appear there.
const PAGES = [
  { path: "/repositories", heading: "Repositories", empty: "No repositories yet" },
  { path: "/snapshots", heading: "Snapshots", empty: "No snapshots yet" },
  { path: "/pins", heading: "Pins", empty: "No pins" },
  { path: "/restores", heading: "Restores", empty: "No restores yet" },
  { path: "/gc", heading: "Garbage collection", empty: "No collection runs yet" },
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
    test(`${p.heading} page shows its empty state`, async ({ page }) => {
      await page.goto(p.path);
      await expect(page.getByRole("heading", { level: 1, name: p.heading })).toBeVisible();
      await expect(page.getByTestId("empty-state")).toContainText(p.empty);
      // The footer reads the health query: the catalog is the embedded SQLite default.
      await expect(page.getByTestId("health")).toContainText("sqlite");
      await expect(page.getByRole("link", { name: p.heading })).toHaveAttribute("aria-current", "page");
      await page.screenshot({ path: `e2e/screenshots/${p.path.slice(1)}.png`, fullPage: true });
    });
  }

  test("navigation reaches every page", async ({ page }) => {
    await page.goto("/repositories");
    for (const p of PAGES) {
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: p.heading }).click();
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
