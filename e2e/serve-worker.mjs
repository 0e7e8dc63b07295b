// Starts the app the way the quick start does: `strata serve` with its worker, on a fresh
// embedded catalog of its own. The worker spec drives jobs through it over HTTP.
import { spawn } from "node:child_process";
import { keepLog } from "./server-log.mjs";
import { mkdirSync, rmSync } from "node:fs";

const dataDir = process.env.STRATA_DATA_DIR;
if (!dataDir) throw new Error("STRATA_DATA_DIR must be set");
rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });

const server = spawn(process.execPath, ["cli/strata.mjs", "serve"], {
  stdio: ["inherit", "pipe", "pipe"],
  env: process.env,
});
keepLog(server, dataDir);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.kill(signal));
server.on("exit", (code) => process.exit(code ?? 0));
