// Test support: runs the `strata` command as a user would, in a process of its own, without
// blocking the test's process (a test may serve HTTP to it from here). That is the CLI as it
// ships, compiled to dist/cli: vitest's global setup builds it when a source is newer.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The `strata` command (package.json's bin). */
export const STRATA_BIN = fileURLToPath(new URL("../../cli/strata.mjs", import.meta.url));

export interface StrataRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `strata ARGS` with only the given environment (and PATH, HOME); killed after 90 s. */
export function runStrata(args: string[], env: Record<string, string>): Promise<StrataRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [STRATA_BIN, ...args], {
      env: { NODE_ENV: "test", PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
