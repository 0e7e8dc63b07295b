// The run's last check (Playwright's global teardown): the logs of both apps under test, kept by
// e2e/server-log.mjs, hold no password, agent token, session cookie or denied file content. The
// specs sign in with the seeded users' passwords, call the API with agent tokens and capture a
// checkout whose `.env` holds DENIED_SECRET (e2e/worker.spec.ts), so each has had its chance to
// leak. A log that holds no request line at all fails too: then nothing was checked.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { DENIED_SECRET } from "./secrets.ts";

const DATA_DIRS = [".strata-e2e", ".strata-e2e-worker"]; // also in playwright.config.ts
const TOKEN = /strata_[A-Za-z0-9_-]{40,}/;
const SESSION_COOKIE = /session_token=[^;\s"\\]{8,}/;

export default function checkServerLogs(): void {
  const problems: string[] = [];
  const users = JSON.parse(readFileSync(path.join(DATA_DIRS[0]!, "e2e-users.json"), "utf8")) as Record<
    string,
    { password: string }
  >;
  const secrets = [...Object.values(users).map((u) => u.password), DENIED_SECRET];
  for (const dir of DATA_DIRS) {
    const file = path.join(dir, "server.log");
    if (!existsSync(file)) {
      problems.push(`${file} is missing`);
      continue;
    }
    const log = readFileSync(file, "utf8");
    if (!/"msg":"request"/.test(log)) problems.push(`${file} has no request line`);
    const lines = log.split("\n");
    lines.forEach((line, i) => {
      const where = `${file}:${i + 1}`;
      if (secrets.some((s) => line.includes(s))) problems.push(`${where} holds a password or a denied file's content`);
      if (TOKEN.test(line)) problems.push(`${where} holds an agent token`);
      if (SESSION_COOKIE.test(line)) problems.push(`${where} holds a session cookie`);
    });
  }
  // Where, never what: the message must not repeat the secret.
  if (problems.length > 0) throw new Error(`The apps' logs are not clean:\n  ${problems.join("\n  ")}`);
}
