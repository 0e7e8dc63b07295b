import { BaseSequencer, type TestSpecification } from "vitest/node";
import { defineConfig } from "vitest/config";

/**
 * Files named `*-timing.test.ts` wait on real clocks (lease-timing.test.ts sleeps 100 s) and
 * start first, so their waiting overlaps the other files' work. Vitest otherwise starts the
 * largest files first when it has no durations from an earlier run (a clean clone, as in CI),
 * and the small, slow file started last: the run ended with 100 s of it alone.
 */
class WaitingFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const waits = (file: TestSpecification) => file.moduleId.endsWith("-timing.test.ts");
    return [...sorted.filter(waits), ...sorted.filter((file) => !waits(file))];
  }
}

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
    sequence: { sequencer: WaitingFirst },
  },
});
