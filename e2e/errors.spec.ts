// Addresses that name nothing: an unknown route is a styled 404 with a way back (inside the
// dashboard when signed in), and a snapshot id the catalog does not hold is said in words with
// links back, not a bare red line.
import { expect, test as base } from "@playwright/test";
import { signIn } from "./users.ts";

// The browser logs each 404 answer as a console error, on purpose here; uncaught exceptions still fail.
const test = base.extend<{ pageErrors: string[] }>({
  pageErrors: [
    async ({ page }, use) => {
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(`${page.url()}: ${error.message}`));
      await use(errors);
      expect(errors, "uncaught exceptions on the pages this test opened").toEqual([]);
    },
    { auto: true },
  ],
});

test("an unknown route, signed in: a 404 inside the dashboard, with its navigation and links back", async ({
  page,
}) => {
  await signIn(page, "operator");
  const response = await page.goto("/no-such-page/anywhere");
  expect(response?.status()).toBe(404);
  const notFound = page.getByTestId("not-found");
  await expect(notFound.getByRole("heading", { level: 1, name: "Page not found" })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Main" })).toBeAttached();
  await expect(page.getByTestId("whoami")).toContainText("operator@strata.test");
  await page.screenshot({ path: "e2e/screenshots/not-found.png", fullPage: true });
  await notFound.getByRole("link", { name: "Snapshots" }).click();
  await expect(page).toHaveURL(/\/snapshots$/);
  await expect(page.getByRole("heading", { level: 1, name: "Snapshots" })).toBeVisible();
});

test("an unknown route, signed out: a 404 page of its own with a way to sign in", async ({ page }) => {
  const response = await page.goto("/no-such-page");
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("heading", { level: 1, name: "Page not found" })).toBeVisible();
  await page.getByRole("link", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
});

test("a snapshot id the catalog does not hold: 'No such snapshot', the server's words, and links back", async ({
  page,
}) => {
  await signIn(page, "operator");
  for (const id of ["0b6f1c2e-9a4d-4c1b-8f3e-000000000000", "not a snapshot id"]) {
    await page.goto(`/snapshots/${encodeURIComponent(id)}`);
    const problem = page.getByTestId("error-panel");
    await expect(problem.getByRole("heading", { name: /^(No such snapshot|Not a snapshot address)$/ })).toBeVisible();
    await expect(problem.getByRole("link", { name: "Snapshots" })).toBeVisible();
    // A final answer: nothing to retry.
    await expect(problem.getByRole("button", { name: "Retry" })).toHaveCount(0);
  }
  await page.goto("/snapshots/0b6f1c2e-9a4d-4c1b-8f3e-000000000000");
  await expect(page.getByTestId("error-panel")).toContainText("was not found");
  await page.screenshot({ path: "e2e/screenshots/snapshot-not-found.png", fullPage: true });
  await page.getByTestId("error-panel").getByRole("link", { name: "Snapshots" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Snapshots" })).toBeVisible();
});
