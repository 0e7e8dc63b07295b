import { defineConfig } from "vitest/config";

/**
 * The test files that change process-wide state (the environment, the app's global catalog and
 * auth handles) and so run each in a process of its own. Every other file shares its worker
 * process with the files before it ("shared", isolate: false): the server's modules are imported
 * once per worker instead of once per file, which took the run from 1,004 s to 763 s here.
 * A shared file that leaves such state changed fails (server/testing/process-state-guard.ts).
 */
const ISOLATED = [
  // The app's handles, opened on the outage's DATABASE_URL.
  "app/api/catalog-outage-*.test.ts",
  // STRATA_JOB_LEASE_SECONDS for the jobs they enqueue.
  "server/jobs/worker-processes.test.ts",
  "server/jobs/worker-reclaim.test.ts",
];
const EXCLUDE = ["node_modules/**", ".next/**", "e2e/**"];

export default defineConfig({
  // The `~/` alias of tsconfig.json (app/ and components/ import the server and each other by it).
  resolve: { tsconfigPaths: true },
  test: {
    // The tests run the compiled CLI (cli/strata.mjs → dist/cli); it is built first when stale.
    globalSetup: ["./server/testing/global-setup.ts", "./scripts/build-cli.mjs"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Three files at once on two cores: much of a test's time is spent waiting (git and worker
    // processes, the database, leases that expire in real time), and with two the cores idled
    // through it. The whole run took 1,101 s with two and 873 s with three on the same machine.
    maxWorkers: 3,
    // A project extends this config by merging its arrays into this one's, so include and
    // exclude are given per project only.
    projects: [
      {
        extends: true,
        test: {
          name: "shared",
          isolate: false,
          include: ["**/*.test.ts"],
          exclude: [...EXCLUDE, ...ISOLATED],
          setupFiles: ["./server/testing/process-state-guard.ts"],
        },
      },
      { extends: true, test: { name: "isolated", isolate: true, include: ISOLATED, exclude: EXCLUDE } },
    ],
  },
});
