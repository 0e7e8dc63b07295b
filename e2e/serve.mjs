// Starts the app under test on a fresh embedded catalog with one user per role and a seeded
// history (scripts/dashboard-seed.ts). The users' generated passwords go to a file in the test
// data directory, where the specs read them.
import { execFileSync, spawn } from "node:child_process";
import { keepLog } from "./server-log.mjs";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

const dataDir = process.env.STRATA_DATA_DIR;
if (!dataDir) throw new Error("STRATA_DATA_DIR must be set");
rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });

const users = {};
for (const role of ["operator", "support", "admin"]) {
  const email = `${role}@strata.test`;
  const out = execFileSync(process.execPath, ["cli/strata.mjs", "user", "create", email, "--role", role, "--json"], {
    encoding: "utf8",
  });
  users[role] = { email, password: JSON.parse(out).password };
}
writeFileSync(path.join(dataDir, "e2e-users.json"), JSON.stringify(users), { mode: 0o600 });
// One agent, for the API as agents call it (its token answers the agent API, not the dashboard).
const agent = JSON.parse(
  execFileSync(process.execPath, ["cli/strata.mjs", "agent", "create", "e2e-agent", "--json"], { encoding: "utf8" }),
);
writeFileSync(path.join(dataDir, "e2e-agent.json"), JSON.stringify({ token: agent.token }), { mode: 0o600 });

// A few weeks of realistic history, written through the services, for every page to show.
execFileSync(process.execPath, ["--import", "tsx", "scripts/dashboard-seed.ts", "example"], { stdio: "inherit" });
// Pooled worktrees of web-app on this host, one held by this process, for the repository page.
const seedPool = "server/testing/seed-pool-process.ts";
execFileSync(process.execPath, ["--import", "tsx", seedPool, String(process.pid)], { stdio: "inherit" });

// The specs sign in many times a minute from one address. No worker: the specs run collection
// themselves, and the seeded history stays as written while they look at it.
const server = spawn(process.execPath, ["cli/strata.mjs", "serve", "--no-worker"], {
  stdio: ["inherit", "pipe", "pipe"],
  env: { ...process.env, STRATA_SIGNIN_ATTEMPTS_PER_MINUTE: "1000" },
});
keepLog(server, dataDir);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.kill(signal));
server.on("exit", (code) => process.exit(code ?? 0));
