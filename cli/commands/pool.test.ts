// `strata pool list|prune` on a real pool under STRATA_DATA_DIR: a worktree this test's process
// holds, a free clean one, a free one with changes, and one whose holder on another host stopped
// refreshing 45 s ago (stale, forged on the pool's own clock).
import { existsSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { runStrata } from "../../server/testing/cli.ts";
import { commitAll, git, removeTemporaryDirectories, temporaryDirectory, write } from "../../server/testing/repos.ts";
import { writeHeartbeat } from "../../server/worktrees/lease.ts";
import type { PoolListing } from "../../server/worktrees/list-pool.ts";
import {
  leaseFile,
  openWorktreePool,
  poolDirectory,
  readRecord,
  replaceRecord,
  revised,
} from "../../server/worktrees/pool.ts";
import type { PruneResult } from "../../server/worktrees/prune-pool.ts";
import { releaseWorktree, takeWorktree, type HeldWorktree } from "../../server/worktrees/take-worktree.ts";

afterAll(removeTemporaryDirectories);
const holds: HeldWorktree[] = [];
afterEach(() => {
  for (const held of holds.splice(0)) held.lease.stop();
});

const APP = { identity: "github.com/acme/app", name: "app" };

function fill(path: string, dirty = false): void {
  git(path, ["init", "--quiet", "--initial-branch=main"]);
  write(path, "README.md", "restored\n");
  commitAll(path, "restored");
  if (dirty) write(path, "notes.txt", "not recorded anywhere\n");
}

async function poolWithEveryState(dataDir: string) {
  const pool = await openWorktreePool({ dir: poolDirectory(dataDir) });
  const take = async () => {
    const held = await takeWorktree(pool, APP);
    holds.push(held);
    return held;
  };
  const [held, clean, dirty, stale] = [await take(), await take(), await take(), await take()];
  for (const w of [held, clean, dirty]) fill(w.path, w === dirty);
  await releaseWorktree(clean);
  await releaseWorktree(dirty);
  // A holder on another host whose last refresh was 45 s ago, by the pool's clock.
  stale.lease.stop();
  const read = await readRecord(pool, stale.name);
  if (!read.found || !read.record.take) throw new Error("no take");
  const longAgo = (await pool.clock.now()) - 45_000;
  const forged = { ...read.record.take, at: longAgo, holder: { ...read.record.take.holder, host: "another-host" } };
  const beat = { token: forged.token, refreshedAt: longAgo };
  await writeHeartbeat(leaseFile(pool, stale.name, forged.token), beat, pool.paths.tmp);
  await replaceRecord(pool, read.record, revised(read.record, { take: forged }));
  return { held, clean, dirty, stale };
}

describe("strata pool", () => {
  it("lists the pool's worktrees with holder, lease age and state, and prunes the free clean ones", async () => {
    const dataDir = temporaryDirectory("strata-pool-cli-");
    const env = { STRATA_DATA_DIR: dataDir };
    const { held, clean, dirty, stale } = await poolWithEveryState(dataDir);

    const list = await runStrata(["pool", "list", "--json"], env);
    expect(list.code, list.stderr).toBe(0);
    const listing = JSON.parse(list.stdout) as PoolListing;
    expect(listing.dir).toBe(poolDirectory(dataDir));
    expect(listing.worktrees.map((w) => [w.name, w.state, w.holder?.host ?? null])).toEqual([
      [held.name, "held", expect.any(String)],
      [clean.name, "free", null],
      [dirty.name, "free", null],
      [stale.name, "stale", "another-host"],
    ]);
    expect(listing.worktrees[0]).toMatchObject({ path: held.path, holder: { pid: process.pid }, repository: APP });
    expect(listing.worktrees[3]!.leaseAgeMs).toBeGreaterThanOrEqual(45_000);
    expect(listing.worktrees[3]!.leaseAgeMs).toBeLessThan(60_000);

    const human = await runStrata(["pool", "list"], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^app-1 +held +pid ${process.pid} on .*github\\.com/acme/app$`, "m"));
    expect(human.stdout).toMatch(/^app-4 +stale +pid \d+ on another-host, refreshed 4\d s ago/m);

    const prune = await runStrata(["pool", "prune", "--json"], env);
    expect(prune.code, prune.stderr).toBe(0);
    const result = JSON.parse(prune.stdout) as PruneResult;
    expect(result.removed).toEqual([{ name: clean.name, path: clean.path }]);
    expect(result.kept.map((k) => [k.name, k.reason])).toEqual([
      [held.name, "held"],
      [dirty.name, "dirty"],
      [stale.name, "stale"],
    ]);
    expect(existsSync(clean.path)).toBe(false);
    expect(existsSync(`${dirty.path}/notes.txt`)).toBe(true);

    const again = await runStrata(["pool", "prune"], env);
    expect(again.stdout).toMatch(/^kept {4}.*app-3 \(dirty\)$/m);
    expect(again.stdout).toMatch(/Removed 0, kept 3/);
  }, 60_000);

  it("says so when there is no pool yet", async () => {
    const env = { STRATA_DATA_DIR: temporaryDirectory("strata-pool-cli-") };
    const human = await runStrata(["pool", "list"], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^No pooled worktrees in .*worktrees\.$/m);
    const json = await runStrata(["pool", "list", "--json"], env);
    expect(JSON.parse(json.stdout)).toMatchObject({ now: null, worktrees: [], leftovers: [] });
    expect(JSON.parse((await runStrata(["pool", "prune", "--json"], env)).stdout)).toEqual({
      removed: [],
      kept: [],
      leftoversCleaned: 0,
    });
  }, 30_000);
});
