import AxeBuilder from "@axe-core/playwright";
import { expect, test } from "./fixtures.ts";
import { signIn } from "./users.ts";

// The API page renders the REST surface's OpenAPI document, served by the app itself: every
// operation grouped by its router, with its parameters, body and answers, and nothing fetched from
// anywhere but the app (the machine may be offline).
test.use({ viewport: { width: 1440, height: 900 } });

test("the API page shows every REST operation of the OpenAPI document, by router", async ({ page }) => {
  // axe walks the whole page, two operations open: on a loaded machine that takes a while.
  test.setTimeout(240_000);
  const foreign: string[] = [];
  page.on("request", (request) => {
    if (!request.url().startsWith("http://127.0.0.1:")) foreign.push(request.url());
  });
  await signIn(page, "support");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API", exact: true }).click();
  // The page renders the whole document on the server: give a loaded machine time.
  await expect(page).toHaveURL(/\/api-docs$/, { timeout: 30_000 });
  await expect(page.getByRole("heading", { level: 1, name: "API" })).toBeVisible();

  const document = (await (await page.request.get("/api/v1/openapi.json")).json()) as {
    paths: Record<string, Record<string, { tags: string[] }>>;
  };
  const operations = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method, path, tag: op.tags[0]! })),
  );
  expect(operations.length).toBeGreaterThan(20);
  const main = page.getByRole("main");
  // One section per router, each listing its operations: all of them, and only them.
  for (const tag of new Set(operations.map((o) => o.tag))) {
    const section = main.getByRole("region", { name: tag, exact: true });
    await expect(section).toBeVisible();
    const expected = operations.filter((o) => o.tag === tag).map((o) => `${o.method.toUpperCase()} /api/v1${o.path}`);
    await expect(section.locator("details > summary")).toHaveText(expected.map((text) => new RegExp(`^${text}\\b`)));
  }
  await expect(main.locator("details > summary")).toHaveCount(operations.length);

  // A creating call: its key, its body's fields, its answers.
  const append = main.locator("details", { has: page.getByText("POST /api/v1/checkpoint/append") });
  await append.locator("summary").click();
  await expect(append.locator("summary")).toContainText("Idempotency-Key");
  await expect(append.getByRole("row", { name: /Idempotency-Key header/ })).toBeVisible();
  await expect(append.getByRole("heading", { name: "Request body" })).toBeVisible();
  await expect(append.getByTestId("request-body").getByText(/^manifest required/)).toBeVisible();
  await expect(append.getByRole("cell", { name: "401", exact: true })).toBeVisible();
  await expect(append.getByRole("cell", { name: "503", exact: true })).toBeVisible();
  await page.screenshot({ path: "e2e/screenshots/api-docs.png" });

  // A query: its fields as query parameters, its answer's schema (dates as date-time strings).
  const list = main.locator("details", { has: page.getByText("GET /api/v1/snapshot/list") });
  await list.locator("summary").click();
  await expect(list.getByRole("row", { name: /^limit query/ })).toBeVisible();
  await expect(list.getByText("string (date-time)").first()).toBeVisible();
  await expect(main.getByText("GET /api/v1/snapshot/diff")).toBeVisible();
  await expect(main.getByRole("region", { name: "Error" })).toContainText("retryable");
  await page.screenshot({ path: "e2e/screenshots/api-docs-full.png", fullPage: true });

  const axe = await new AxeBuilder({ page }).analyze();
  expect(axe.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)).toEqual([]);
  expect(foreign).toEqual([]);
});
