// `strata capture` as an agent runs it, against a catalog of each kind: real process, real exit codes.
import { spawn, spawnSync } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { STRATA_BIN } from "../../server/testing/cli.ts";
import { describeEachDatabase } from "../../server/testing/databases.ts";
import {
  commitAll,
  git,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../../server/testing/repos.ts";
import { makeAgent, uniqueName } from "../../server/testing/lineage.ts";
import { openWorktreePool, poolDirectory, readRecord } from "../../server/worktrees/pool.ts";
import { processOnThisMachine } from "../../server/worktrees/process-identity.ts";
import { releaseWorktree, takeWorktree } from "../../server/worktrees/take-worktree.ts";
import { judgeCleanliness } from "../../server/worktrees/worktree-cleanliness.ts";

afterAll(removeTemporaryDirectories);

function strata(args: string[], env: Record<string, string>) {
  const run = spawnSync(process.execPath, [STRATA_BIN, "capture", ...args], {
    encoding: "utf8",
    env: { NODE_ENV: "test", PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    timeout: 60_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describeEachDatabase("strata capture", (catalog) => {
  it("appends a checkpoint, then finds it unchanged; exit codes tell failures apart", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db);
    const env = { DATABASE_URL: catalog().url, STRATA_TOKEN: agent.token };
    const root = initRepository({ "a.txt": "a\n" });
    write(root, "a.txt", "changed\n");
    const repository = `example.invalid/${uniqueName("cli")}`;
    const args = [root, "--context", uniqueName("wc"), "--repository", repository, "--json"];

    const first = strata(args, env);
    expect(first.code).toBe(0);
    const result = JSON.parse(first.stdout) as { outcome: string; snapshotId: string };
    expect(result.outcome).toBe("appended");
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: result.snapshotId } })).state).toBe("ready");

    const second = strata(args, env);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ outcome: "unchanged", snapshotId: result.snapshotId });

    const dirty = strata([root, "--baseline", "--repository", repository], env);
    expect(dirty.code).toBe(6);
    expect(dirty.stderr).toContain("EVIDENCE_INVALID");

    const badToken = strata([root, "--context", "x", "--repository", repository], {
      ...env,
      STRATA_TOKEN: "strata_bad",
    });
    expect(badToken.code).toBe(8);

    // The CLI reads the catalog over the driver (quick-catalog.ts) and records a token's use
    // there, as Prisma would write it, at most once a minute.
    const agentId = agent.scope.agentId;
    const lastUsed = async () => (await db.agentToken.findFirstOrThrow({ where: { agentId } })).lastUsedAt;
    expect(Math.abs((await lastUsed())!.getTime() - Date.now())).toBeLessThan(60_000);
    const longAgo = new Date(Date.now() - 5 * 60_000);
    await db.agentToken.updateMany({ where: { agentId }, data: { lastUsedAt: longAgo } });
    expect(strata(args, env).code).toBe(0);
    expect(Math.abs((await lastUsed())!.getTime() - Date.now())).toBeLessThan(60_000);
    const recent = new Date(Date.now() - 10_000);
    await db.agentToken.updateMany({ where: { agentId }, data: { lastUsedAt: recent } });
    expect(strata(args, env).code).toBe(0);
    expect((await lastUsed())!.getTime()).toBe(recent.getTime());

    await db.agentToken.updateMany({ where: { agentId }, data: { revokedAt: new Date() } });
    const revoked = strata(args, env);
    expect(revoked.code).toBe(8);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ outcome: "failed", error: { code: "UNAUTHORIZED" } });
    const local = { DATABASE_URL: catalog().url };
    expect(strata(args, local).code).toBe(2);
    const named = strata([...args, "--agent", agent.name], local);
    expect(named.code).toBe(0);
    expect(JSON.parse(named.stdout)).toMatchObject({ outcome: "unchanged", snapshotId: result.snapshotId });
    await db.agent.update({ where: { id: agentId }, data: { disabledAt: new Date() } });
    expect(strata([...args, "--agent", agent.name], local).code).toBe(8);
  }, 180_000);
});

describeEachDatabase("strata capture in a pooled worktree", (catalog) => {
  it("records the snapshot in the worktree's record while the task holds it, nothing once another took it", async () => {
    const agent = await makeAgent(catalog().db);
    const dataDir = temporaryDirectory("strata-data-");
    const host = "pool-host";
    const env = { DATABASE_URL: catalog().url, STRATA_TOKEN: agent.token, STRATA_DATA_DIR: dataDir, STRATA_HOST: host };
    const pool = await openWorktreePool({ dir: poolDirectory(dataDir), host });
    const repository = { identity: `example.invalid/acme/${uniqueName("app")}`, name: "app" };
    const context = uniqueName("wc");
    // Held by this process, which runs the capture: the capture's ancestor holds it.
    const held = await takeWorktree(pool, repository, { owner: context });
    git(held.path, ["init", "--quiet", "--initial-branch=main"]);
    write(held.path, "a.txt", "a\n");
    commitAll(held.path, "first");
    write(held.path, "a.txt", "a, edited in the pool\n");
    const args = [held.path, "--context", context, "--repository", repository.identity, "--json"];

    const captured = strata(args, env);
    expect(captured.code).toBe(0);
    const { snapshotId } = JSON.parse(captured.stdout) as { snapshotId: string };
    const record = async () => {
      const read = await readRecord(pool, held.name);
      if (!read.found) throw new Error("no record");
      return read.record;
    };
    expect((await record()).snapshot).toMatchObject({
      id: snapshotId,
      head: git(held.path, ["rev-parse", "HEAD"]).trim(),
    });
    expect(await releaseWorktree(held)).toBe("released");
    expect(await judgeCleanliness(held.path, (await record()).snapshot)).toEqual({ state: "clean", detail: null });

    // Another task (a process that is not the capture's ancestor) took it meanwhile.
    const other = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      const taken = await takeWorktree(pool, repository, {
        owner: "another-task",
        reuse: () => true,
        holder: await processOnThisMachine(other.pid!, host),
      });
      expect(taken.name).toBe(held.name);
      taken.lease.stop();
      write(held.path, "a.txt", "edited after the worktree was lost\n");
      const snapshots = await catalog().db.snapshot.count();
      const lost = strata(
        args.filter((a) => a !== "--json"),
        env,
      );
      expect(lost.code).toBe(6);
      expect(lost.stderr).toContain("warning (pooled-worktree-lost)");
      expect(await catalog().db.snapshot.count()).toBe(snapshots);
      expect(await record()).toMatchObject({ owner: "another-task", snapshot: { id: snapshotId } });
    } finally {
      other.kill();
    }
  }, 180_000);
});

describe("strata capture before any catalog is involved", () => {
  it("exits 5 outside a repository, 2 on usage errors and 7 when the server cannot be reached", () => {
    const env = { STRATA_DATA_DIR: temporaryDirectory(), STRATA_TOKEN: "strata_unused" };
    const outside = strata([temporaryDirectory(), "--context", "x", "--repository", "r", "--json"], env);
    expect(outside.code).toBe(5);
    expect(JSON.parse(outside.stdout)).toMatchObject({ outcome: "failed", error: { code: "NOT_A_REPOSITORY" } });

    const root = initRepository();
    expect(strata([root, "--repository", "r"], env).code).toBe(2);
    const unreachable = strata([root, "--context", "x", "--repository", "r"], {
      ...env,
      STRATA_SERVER_URL: "http://127.0.0.1:9",
    });
    expect(unreachable.code).toBe(7);
    expect(unreachable.stderr).toContain("BLOB_STORE_FAILED");
  }, 120_000);

  it("refuses a malformed server address before doing anything: 3 from the environment, 2 from the flag", () => {
    const root = initRepository();
    const args = [root, "--context", "x", "--repository", "r"];
    const fromEnv = strata(args, { STRATA_TOKEN: "strata_unused", STRATA_SERVER_URL: "strata.example.test" });
    expect(fromEnv.code).toBe(3);
    expect(fromEnv.stderr).toContain("STRATA_SERVER_URL");

    const withPassword = strata(args, {
      STRATA_TOKEN: "strata_unused",
      STRATA_SERVER_URL: "https://agent:hunter2-secret@strata.example.test",
    });
    expect(withPassword.code).toBe(3);
    expect(withPassword.stderr).not.toContain("hunter2-secret");

    const fromFlag = strata([...args, "--server", "ftp://strata.example.test"], { STRATA_TOKEN: "strata_unused" });
    expect(fromFlag.code).toBe(2);
    expect(fromFlag.stderr).toContain("--server");

    const noToken = strata([...args, "--server", "https://strata.example.test"], {});
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain("STRATA_TOKEN");
  }, 60_000);
});
