// The CLI as a user runs it: a real process, real exit codes, real output.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { readMigrations } from "../server/db/migrate.ts";
import { STRATA_BIN } from "../server/testing/cli.ts";
import pkg from "../package.json" with { type: "json" };

const dataDir = mkdtempSync(path.join(os.tmpdir(), "strata-cli-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function strata(args: string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [STRATA_BIN, ...args], {
    encoding: "utf8",
    env: {
      NODE_ENV: "test",
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      STRATA_DATA_DIR: dataDir,
      ...env,
    },
    timeout: 60_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("strata CLI", () => {
  it("prints its version (package.json's) and its commands without opening a catalog", () => {
    for (const flag of ["--version", "-V"]) {
      const run = strata([flag], { DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none" });
      expect(run.code).toBe(0);
      expect(run.stdout).toBe(`${pkg.version}\n`);
    }
    const help = strata(["--help"], { DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none" });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/capture \[options\] \[dir\]\s+capture a git checkout/);
    const commandHelp = strata(["help", "capture"]);
    expect(commandHelp.code).toBe(0);
    expect(commandHelp.stdout).toContain("--context <id>");
  });

  it("migrates the embedded catalog, then reports it up to date", () => {
    const first = strata(["migrate", "--json"]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      kind: "sqlite",
      applied: readMigrations("sqlite").map((m) => m.name),
    });
    const second = strata(["migrate"]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("up to date");
  });

  it("stops on bad configuration with exit code 3 and names the variable", () => {
    const run = strata(["migrate"], { PORT: "not-a-port" });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain("PORT");
  });

  it("exits 4 when the database cannot be reached, without printing its password", () => {
    const run = strata(["migrate"], { DATABASE_URL: "postgresql://strata:hunter2-secret@127.0.0.1:1/none" });
    expect(run.code).toBe(4);
    expect(run.stderr).toMatch(/could not migrate/);
    expect(run.stderr).not.toContain("hunter2-secret");
  });

  it("creates an agent, shows its token once, and stores only a hash", () => {
    const created = strata(["agent", "create", "ci-bot", "--json"]);
    expect(created.code).toBe(0);
    const issued = JSON.parse(created.stdout) as { token: string; prefix: string };
    expect(issued.token).toMatch(/^strata_[A-Za-z0-9_-]{40,}$/);
    const listed = strata(["agent", "list", "--json"]);
    expect(listed.stdout).toContain(issued.prefix);
    expect(listed.stdout).not.toContain(issued.token);
    const db = new Database(path.join(dataDir, "strata.db"), { readonly: true });
    const rows = db.prepare("SELECT * FROM agent_tokens").all() as Record<string, unknown>[];
    db.close();
    expect(rows.map((r) => r.token_hash)).toContain(createHash("sha256").update(issued.token).digest("hex"));
    expect(JSON.stringify(rows)).not.toContain(issued.token);
    const again = strata(["agent", "create", "ci-bot"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already exists");
  });

  it("rejects unknown commands as usage errors", () => {
    expect(strata(["frobnicate"]).code).toBe(2);
  });
});
