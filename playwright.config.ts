import { defineConfig } from "@playwright/test";

// The app under test runs on its own port with its own fresh embedded database.
const PORT = Number(process.env.E2E_PORT ?? 3210);
const DATA_DIR = ".strata-e2e"; // also in e2e/users.ts
// A second app, with its worker, for the job specs (also in e2e/worker.spec.ts).
const WORKER_PORT = PORT + 1;
const WORKER_DATA_DIR = ".strata-e2e-worker";
const WORKER_HOST = "e2e-worker-host";

export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results",
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: true,
  reporter: [["list"]],
  // After every spec: the apps' logs hold no password, token, cookie or denied file content.
  globalTeardown: "./e2e/log-check.ts",
  timeout: 60_000,
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    browserName: "chromium",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      // Keep Chromium off the network: these machines have none, and it would keep trying.
      args: ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    },
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
  },
  webServer: [
    {
      command: "node e2e/serve.mjs",
      url: `http://127.0.0.1:${PORT}/api/trpc/health`,
      reuseExistingServer: false,
      timeout: 180_000,
      stdout: "pipe",
      stderr: "pipe",
      env: { PORT: String(PORT), STRATA_DATA_DIR: DATA_DIR, STRATA_BIND: "127.0.0.1", NEXT_TELEMETRY_DISABLED: "1" },
    },
    {
      // `strata serve` with its worker (the first server runs without one), for e2e/worker.spec.ts.
      command: "node e2e/serve-worker.mjs",
      url: `http://127.0.0.1:${WORKER_PORT}/api/trpc/health`,
      reuseExistingServer: false,
      timeout: 180_000,
      stdout: "pipe",
      stderr: "pipe",
      env: {
        PORT: String(WORKER_PORT),
        STRATA_DATA_DIR: WORKER_DATA_DIR,
        STRATA_BIND: "127.0.0.1",
        STRATA_HOST: WORKER_HOST,
        NEXT_TELEMETRY_DISABLED: "1",
      },
    },
  ],
});
