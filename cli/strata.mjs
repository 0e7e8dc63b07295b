#!/usr/bin/env node
// The `strata` command: the CLI compiled to JavaScript in dist/cli by scripts/build-cli.mjs
// (`npm install`, `npm test` and `npm start` build it). Nothing is compiled at run time, except
// that a checkout whose sources changed since the last build is built again first (one stat per
// source file tells).
import { performance } from "node:perf_hooks";
import { buildCli, buildState, OUT_DIR } from "../scripts/build-cli.mjs";

/** Commands that run until stopped. */
const LONG_RUNNING = new Set(["serve", "worker", "mcp"]);

const state = buildState();
if (state !== null) {
  try {
    await buildCli();
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    if (state === "missing") {
      process.stderr.write(
        `strata: the CLI is not built (${OUT_DIR} is missing or incomplete) and could not be built now:\n` +
          `  ${why}\n  Build it with \`npm run build:cli\` (npm install does, too).\n`,
      );
      process.exit(1);
    }
    process.stderr.write(`strata: warning: running the CLI built before its sources last changed (${why})\n`);
  }
}
// The stacks a long-running command logs name the TypeScript sources (the build's linked source
// maps). A short command maps only the stack of an unexpected error, when it prints it
// (cli/source-mapped-stack.ts): enabling source maps here costs every start about 15 ms.
if (LONG_RUNNING.has(process.argv[2] ?? "")) process.setSourceMapsEnabled(true);
// A phase of the start (server/log/start-phases.ts): the bundle was found current (or rebuilt).
performance.mark("strata:start:build-checked");
await import("../dist/cli/main.mjs");
