// The server stopped mid-session, as an operator sees it: a dialog's action says the server is
// unreachable (not "Failed to fetch"), a banner says so and retries, the health footer says so, a
// navigation click stays on the page instead of the browser's own error page; when the server is
// back, everything recovers by itself and the page asked for meanwhile opens.
// This spec runs its own `strata serve` (own port, own data directory) so that stopping it
// disturbs no other spec.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { freePort } from "../server/testing/ports.ts";

const STRATA = "cli/strata.mjs";
const EMAIL = "operator@offline.test";

test.describe.configure({ mode: "serial" });

test.describe("the server stopped mid-session", () => {
  let work: string;
  let base: string;
  let env: Record<string, string>;
  let password: string;
  let app: ChildProcess | undefined;
  let output = "";

  async function startApp() {
    app = spawn(process.execPath, [STRATA, "serve", "--no-worker"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    const keep = (chunk: Buffer) => (output += chunk.toString());
    app.stdout!.on("data", keep);
    app.stderr!.on("data", keep);
    const started = app;
    await expect
      .poll(
        async () => {
          if (started.exitCode !== null) throw new Error(`strata serve exited (${started.exitCode}):\n${output}`);
          return fetch(`${base}/api/trpc/health`).then(
            (r) => r.status,
            () => 0,
          );
        },
        { timeout: 180_000, intervals: [250] },
      )
      .toBe(200);
  }

  async function stopApp() {
    const running = app;
    if (!running || running.exitCode !== null) return;
    running.kill("SIGTERM");
    await new Promise((resolve) => running.once("exit", resolve));
  }

  test.beforeAll(async () => {
    test.setTimeout(240_000);
    work = mkdtempSync(path.join(tmpdir(), "strata-e2e-offline-"));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = {
      STRATA_DATA_DIR: work,
      STRATA_BIND: "127.0.0.1",
      PORT: String(port),
      STRATA_SIGNIN_ATTEMPTS_PER_MINUTE: "1000",
      NEXT_TELEMETRY_DISABLED: "1",
    };
    const strata = (args: string[]) =>
      execFileSync(process.execPath, args, { encoding: "utf8", env: { ...process.env, ...env } });
    strata([STRATA, "migrate"]);
    password = (
      JSON.parse(strata([STRATA, "user", "create", EMAIL, "--role", "operator", "--json"])) as {
        password: string;
      }
    ).password;
    strata(["--import", "tsx", "scripts/dashboard-seed.ts", "example"]);
    await startApp();
  });

  test.afterAll(async () => {
    await stopApp();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test("banner, dialog and footer say so; a nav click waits; all recovers once it is back", async ({ page }) => {
    test.setTimeout(180_000);
    // Failed requests are logged by the browser itself while the server is down; what must not
    // happen is an uncaught exception in the page.
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));

    await page.goto(`${base}/signin`);
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("whoami")).toContainText(EMAIL);
    await expect(page.getByTestId("health")).toContainText("sqlite");

    // A snapshot's page, its retire dialog open with the preview read while the server was up.
    await page.goto(`${base}/snapshots`);
    await page.locator('main a[href^="/snapshots/"]').first().click();
    await expect(page.getByRole("heading", { level: 1, name: /^(Baseline|Checkpoint)/ })).toBeVisible();
    const snapshotUrl = page.url();
    await page.getByRole("button", { name: "Retire snapshot…" }).click();
    const dialog = page.getByRole("dialog");
    await expect(dialog.getByTestId("retire-preview")).toBeVisible();
    await dialog.getByLabel("Reason (recorded in the audit log)").fill("cleaning up after the spike");

    await stopApp();

    // The dialog's action: the server is unreachable, in words, and the button stays for a retry.
    await dialog.getByRole("button", { name: "Retire snapshot" }).click();
    const failure = dialog.getByRole("alert");
    await expect(failure).toContainText("Server unreachable");
    await expect(failure).not.toContainText("Failed to fetch");
    await expect(dialog.getByRole("button", { name: "Retire snapshot" })).toBeEnabled();
    const banner = page.getByTestId("offline-banner");
    await expect(banner).toContainText("Server unreachable, retrying…");
    await expect(banner.getByRole("button", { name: "Retry now" })).toBeVisible();
    await expect(page.getByTestId("health")).toHaveText("server unreachable");
    await page.screenshot({ path: "e2e/screenshots/offline-dialog.png" });
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect(dialog).toBeHidden();

    // A navigation click: the page stays (no browser error page) and says the page opens later.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Pins" }).click();
    await expect(banner).toContainText("The page you asked for (/pins) opens once it is back.");
    expect(page.url()).toBe(snapshotUrl);
    await expect(page.getByRole("heading", { level: 1, name: /^(Baseline|Checkpoint)/ })).toBeVisible();
    await banner.getByRole("button", { name: "Retry now" }).click();
    await expect(banner).toContainText("Server unreachable, retrying…");
    expect(page.url()).toBe(snapshotUrl);
    await page.screenshot({ path: "e2e/screenshots/offline-banner.png", fullPage: true });

    await startApp();

    // Back: the held page opens by itself, the banner goes, the footer reads the catalog again.
    await expect(page).toHaveURL(`${base}/pins`, { timeout: 30_000 });
    await expect(page.getByRole("heading", { level: 1, name: "Pins" })).toBeVisible();
    await expect(banner).toBeEmpty();
    await expect(page.getByTestId("health")).toContainText("sqlite");
    await expect(page.getByRole("main")).toContainText("active pins");
    await page.screenshot({ path: "e2e/screenshots/offline-recovered.png", fullPage: true });
    expect(pageErrors).toEqual([]);
  });
});
