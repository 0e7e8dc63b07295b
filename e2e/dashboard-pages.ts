// Every dashboard page, found on disk (each page.tsx under app/(dashboard)), so a page added later
// is checked by the responsive and accessibility specs without anyone editing a list here.
import { readdirSync } from "node:fs";
import path from "node:path";
import { expect, type Page } from "@playwright/test";

const DASHBOARD_DIR = path.join("app", "(dashboard)");

/** The dashboard's routes as the file system names them: "/pins", "/snapshots/[snapshotId]", … */
function dashboardRoutes(): string[] {
  const routes: string[] = [];
  const walk = (dir: string, route: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(path.join(dir, entry.name), `${route}/${entry.name}`);
      else if (entry.name === "page.tsx") routes.push(route);
    }
  };
  walk(DASHBOARD_DIR, "");
  // "/" only redirects to /repositories; a catch-all ([...x]) is the 404, checked on its own.
  return routes.filter((route) => route !== "" && !/\[\.\.\./.test(route)).sort();
}

/** The first link on `listPath` whose address starts with `prefix` (and that `name` names): a real id from the seed. */
async function firstLinkUnder(page: Page, listPath: string, prefix: string, name?: string): Promise<string> {
  await page.goto(listPath);
  const links = page.locator(`main a[href^="${prefix}"]`);
  const link = (name ? links.filter({ hasText: new RegExp(`^${name}$`) }) : links).first();
  await expect(link).toBeVisible();
  return (await link.getAttribute("href"))!;
}

/**
 * The address to open for each route: dynamic segments filled with ids from the seeded catalog.
 * A dynamic segment this does not know fails the spec, so a new one is never silently skipped.
 */
export async function dashboardPages(page: Page): Promise<{ route: string; path: string }[]> {
  const samples = new Map<string, () => Promise<string>>([
    // The seeded web-app (other specs add repositories without snapshots, whose page is an empty state).
    ["/repositories/[repositoryId]", () => firstLinkUnder(page, "/repositories", "/repositories/", "web-app")],
    ["/snapshots/[snapshotId]", () => firstLinkUnder(page, "/snapshots", "/snapshots/")],
  ]);
  const pages: { route: string; path: string }[] = [];
  for (const route of dashboardRoutes()) {
    if (!route.includes("[")) {
      pages.push({ route, path: route });
      continue;
    }
    const sample = samples.get(route);
    if (!sample) throw new Error(`no sample address for the dynamic route ${route}: add one in e2e/dashboard-pages.ts`);
    pages.push({ route, path: await sample() });
  }
  return pages;
}

/**
 * Opens a page and waits until its data is shown: its heading, and nothing still loading. (Not
 * "network idle": the app router keeps prefetching the pages the links name, which can take long
 * on a busy machine and changes nothing on this page.)
 */
export async function openSettled(page: Page, address: string): Promise<void> {
  await page.goto(address);
  await expect(page.getByRole("heading", { level: 1 }).first()).toBeVisible();
  await expect(page.getByText("Loading…", { exact: true })).toHaveCount(0);
  // Nor any other status still at work ("Laying out the graph…", "Reading what this would do…").
  await expect(page.locator('main [role="status"]').filter({ hasText: /…$/ })).toHaveCount(0);
}
