// `npm test`: every check, in order, stopping at the first failure.
// the CLI's build -> typecheck -> lint (ESLint, knip, Prettier) -> vitest (SQLite and PostgreSQL) -> next build ->
// Playwright (Chromium).
import { spawnSync } from "node:child_process";

const steps = [
  ["the CLI, compiled to JavaScript (dist/cli)", "node", ["scripts/build-cli.mjs"]],
  ["typecheck", "npx", ["tsc", "--noEmit"]],
  ["lint (ESLint, knip, Prettier)", "npm", ["run", "--silent", "lint"]],
  ["unit and database tests (SQLite + PostgreSQL)", "npx", ["vitest", "run"]],
  ["build", "npx", ["next", "build"]],
  ["browser tests (Chromium)", "npx", ["playwright", "test"]],
];

const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", CHECKPOINT_DISABLE: "1" };
const started = Date.now();
for (const [name, command, args] of steps) {
  const t0 = Date.now();
  process.stdout.write(`\n=== ${name}\n`);
  const run = spawnSync(command, args, { stdio: "inherit", env });
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  if (run.status !== 0) {
    process.stderr.write(`\n✗ ${name} failed after ${seconds}s\n`);
    process.exit(run.status ?? 1);
  }
  process.stdout.write(`✓ ${name} (${seconds}s)\n`);
}
process.stdout.write(`\nAll checks passed in ${((Date.now() - started) / 1000).toFixed(0)}s\n`);
