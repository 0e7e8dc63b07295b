// `npm test`: every check, in order, stopping at the first failure.
// the CLI's build -> typecheck and lint (ESLint, knip, Prettier), side by side -> vitest (SQLite
// and PostgreSQL) -> next build -> Playwright (Chromium).
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";

/**
 * Each entry is a check, or checks run side by side: tsc and ESLint use one core each, so on two
 * cores they take the time of the longer (about 45 s) instead of their sum (about 70 s). The
 * output of checks run side by side is printed per check when each ends, not interleaved.
 */
const steps = [
  ["the CLI, compiled to JavaScript (dist/cli)", "node", ["scripts/build-cli.mjs"]],
  [
    ["typecheck", "npx", ["tsc", "--noEmit"]],
    ["lint (ESLint, knip, Prettier)", "npm", ["run", "--silent", "lint"]],
  ],
  ["unit and database tests (SQLite + PostgreSQL)", "npx", ["vitest", "run"]],
  ["build", "npx", ["next", "build"]],
  ["browser tests (Chromium)", "npx", ["playwright", "test"]],
];

const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", CHECKPOINT_DISABLE: "1" };

/** Runs one check; its output goes straight through, or is collected when `quiet`. */
function run([name, command, args], quiet) {
  const t0 = Date.now();
  if (!quiet) process.stdout.write(`\n=== ${name}\n`);
  const child = spawn(command, args, { stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit", env });
  const output = [];
  child.stdout?.on("data", (chunk) => output.push(chunk));
  child.stderr?.on("data", (chunk) => output.push(chunk));
  return new Promise((resolve) => {
    child.on("error", (error) => output.push(Buffer.from(`${error.message}\n`)));
    child.on("close", (code) => {
      if (quiet) process.stdout.write(`\n=== ${name}\n${Buffer.concat(output).toString("utf8")}`);
      const seconds = ((Date.now() - t0) / 1000).toFixed(1);
      if (code === 0) process.stdout.write(`✓ ${name} (${seconds}s)\n`);
      else process.stderr.write(`\n✗ ${name} failed after ${seconds}s\n`);
      resolve(code === 0);
    });
  });
}

const started = Date.now();
for (const step of steps) {
  const group = Array.isArray(step[0]) ? step : [step];
  const passed = await Promise.all(group.map((check) => run(check, group.length > 1)));
  if (passed.includes(false)) process.exit(1);
}
process.stdout.write(`\nAll checks passed in ${((Date.now() - started) / 1000).toFixed(0)}s\n`);
