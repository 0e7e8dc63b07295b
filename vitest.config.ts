import { defineConfig } from "vitest/config";

export default defineConfig({
  // The `~/` alias of tsconfig.json (app/ and components/ import the server and each other by it).
  resolve: { tsconfigPaths: true },
  test: {
    include: ["**/*.test.ts"],
    exclude: ["node_modules/**", ".next/**", "e2e/**"],
    // The tests run the compiled CLI (cli/strata.mjs → dist/cli); it is built first when stale.
    globalSetup: ["./server/testing/global-setup.ts", "./scripts/build-cli.mjs"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Three files at once on two cores: much of a test's time is spent waiting (git and worker
    // processes, the database, leases that expire in real time), and with two the cores idled
    // through it. The whole run took 1,101 s with two and 873 s with three on the same machine.
    maxWorkers: 3,
  },
});
