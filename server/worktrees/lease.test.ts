// Leases between real processes (server/testing/pool-process.ts), with shortened timings: hosts
// whose clocks run days apart judge a lease alike, a pid that now belongs to another process
// keeps nothing, two processes racing for the last free worktree never both get it, and a holder
// that was suspended past its lease learns that it lost its worktree. lease-timing.test.ts runs
// the real timings. Time is moved forward (aheadMs, the children's "advance"), not waited for.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killPoolChildren, startPoolChild } from "../testing/pool-children.ts";
import { commitAll, git, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import type { LeaseTimings } from "./lease.ts";
import { listPool, type PoolListing } from "./list-pool.ts";
import type { PoolRepository } from "./pool-key.ts";
import { openWorktreePool, readRecord, replaceRecord, revised, type WorktreePool } from "./pool.ts";
import { prunePool } from "./prune-pool.ts";
import { releaseWorktree, takeWorktree } from "./take-worktree.ts";

afterEach(killPoolChildren);
afterAll(removeTemporaryDirectories);

const FAST: LeaseTimings = { refreshMs: 200, staleMs: 1_500, graceMs: 1_500, unverifiedKeepMs: 3_000 };
const APP: PoolRepository = { identity: "github.com/acme/app", name: "app" };
const DAYS_3 = 3 * 24 * 3600 * 1000;

interface Taken {
  name: string;
  path: string;
  origin: string;
}

const poolDir = () => temporaryDirectory("strata-lease-");

function stateOf(listing: PoolListing, name: string) {
  const w = listing.worktrees.find((x) => x.name === name);
  if (!w) throw new Error(`${name} is not listed`);
  return w;
}

/** Makes a pooled worktree a clean checkout, as a restore would. */
function fill(path: string): void {
  git(path, ["init", "--quiet", "--initial-branch=main"]);
  write(path, "README.md", "restored\n");
  commitAll(path, "restored");
}

describe("leases between processes", () => {
  it("judges a lease alike from hosts whose clocks run 3 days ahead and 3 days behind", async () => {
    const dir = poolDir();
    const holder = await startPoolChild({ dir, host: "holder", skewMs: DAYS_3, timings: FAST });
    const judges = await Promise.all(
      [0, DAYS_3, -DAYS_3].map((skewMs, i) => startPoolChild({ dir, host: `judge-${i}`, skewMs, timings: FAST })),
    );
    const taken = await holder.send<Taken>({ op: "take", repository: APP });
    // The holder is suspended right after taking: its last refresh is now.
    holder.suspend();
    let advanced = 0;
    const judge = async () => {
      const listings = await Promise.all(judges.map((j) => j.send<PoolListing & { offsetMs: number }>({ op: "list" })));
      return listings.map((l) => ({ ...stateOf(l, taken.name), offsetMs: l.offsetMs }));
    };
    /** The judges' view `ms` after the holder's last refresh (their clocks moved forward to it). */
    const at = async (ms: number) => {
      await Promise.all(judges.map((j) => j.send({ op: "advance", ms: ms - advanced })));
      advanced = ms;
      return judge();
    };

    const fresh = await at(300);
    // Each judge measured how far the filesystem's clock is from its own.
    const expected = [0, -DAYS_3, DAYS_3];
    expect(fresh.map((j, i) => Math.abs(j.offsetMs - expected[i]!) < 2_000)).toEqual([true, true, true]);
    expect(fresh.map((j) => j.state)).toEqual(["held", "held", "held"]);
    // Their own clocks are 6 days apart; the ages they measure are not.
    const ages = fresh.map((j) => j.leaseAgeMs);
    expect(Math.max(...ages) - Math.min(...ages)).toBeLessThan(500);
    expect(Math.max(...ages)).toBeLessThan(FAST.staleMs);

    expect((await at(FAST.staleMs + 700)).map((j) => j.state)).toEqual(["stale", "stale", "stale"]);
    expect((await at(FAST.staleMs + FAST.graceMs + 700)).map((j) => j.state)).toEqual(["free", "free", "free"]);
  }, 30_000);

  it("keeps nothing for a pid that now belongs to another process", async () => {
    const dir = poolDir();
    // The judge runs on the holder's machine: it can see which processes run.
    let ahead = 0;
    const judge = await openWorktreePool({ dir, timings: FAST, aheadMs: () => ahead });
    const holder = await startPoolChild({ dir, timings: FAST });
    const other = await startPoolChild({ dir, timings: FAST });
    expect(holder.startTime).not.toBeNull();
    expect(other.startTime).not.toBe(holder.startTime);
    const taken = await holder.send<Taken>({ op: "take", repository: APP });
    await holder.kill();
    const lease = async () => {
      const listing = await listPool(judge);
      return stateOf(listing, taken.name);
    };
    /** Rewrites the take's holder, as if the holder had been the process now running as `pid`. */
    const recordHolder = async (holderChange: { pid: number; startTime: string | null }) => {
      const read = await readRecord(judge, taken.name);
      if (!read.found || !read.record.take) throw new Error("no take");
      const take = { ...read.record.take, holder: { ...read.record.take.holder, ...holderChange } };
      expect(await replaceRecord(judge, read.record, revised(read.record, { take }))).toBe(true);
    };
    ahead = FAST.staleMs + FAST.graceMs + 200;

    // The holder is gone: its worktree is free 3 s after its last refresh.
    expect(await lease()).toMatchObject({ state: "free", keptByProcess: false });
    // Its pid now belongs to another process, started at another time: still free.
    await recordHolder({ pid: other.pid, startTime: holder.startTime });
    expect(await lease()).toMatchObject({ state: "free", keptByProcess: false });
    // The same process (same pid, same start time), suspended or busy, keeps it however long.
    await recordHolder({ pid: other.pid, startTime: other.startTime });
    expect(await lease()).toMatchObject({ state: "held", keptByProcess: true });
    // Where the start time cannot be read (not Linux), a live pid keeps it for a while only.
    await recordHolder({ pid: other.pid, startTime: null });
    expect((await lease()).state).toBe("free");
    const unverified = await openWorktreePool({
      dir,
      timings: { ...FAST, unverifiedKeepMs: 60_000 },
      aheadMs: () => ahead,
    });
    expect(stateOf(await listPool(unverified), taken.name)).toMatchObject({
      state: "held",
      keptByProcess: true,
    });
  }, 30_000);

  it("hands the last free worktree to exactly one of two racing processes; the other gets a new one", async () => {
    const dir = poolDir();
    const pool = await openWorktreePool({ dir, timings: FAST });
    const racers = await Promise.all([startPoolChild({ dir, timings: FAST }), startPoolChild({ dir, timings: FAST })]);
    const blocker = await takeWorktree(pool, APP);
    try {
      for (let round = 0; round < 5; round++) {
        // app-1 is held all along; app-2 is the last free worktree (clean, so reusable).
        const last = await takeWorktree(pool, APP);
        expect(last.name).toBe("app-2");
        fill(last.path);
        await releaseWorktree(last);

        const got = await Promise.all(
          racers.map((r) => r.send<Taken>({ op: "take", repository: APP, reuse: "clean", reuseMs: 100 })),
        );
        expect(got.map((g) => `${g.name} ${g.origin}`).sort()).toEqual(["app-2 reused", "app-3 new"]);

        await Promise.all(racers.map((r) => r.send({ op: "release" })));
        const pruned = await prunePool(pool);
        expect(pruned.removed.map((w) => w.name).sort()).toEqual(["app-2", "app-3"]);
      }
    } finally {
      blocker.lease.stop();
    }
  }, 60_000);

  it("tells a holder suspended past its lease that it lost its worktree, once another host took it", async () => {
    const dir = poolDir();
    const holder = await startPoolChild({ dir, timings: FAST });
    const taken = await holder.send<Taken>({ op: "take", repository: APP, owner: "task-1" });
    expect(await holder.send({ op: "check" })).toMatchObject({ held: true });
    holder.suspend();
    // The holder's lease, as the other processes see it, is 3.3 s old.
    const aheadMs = () => FAST.staleMs + FAST.graceMs + 300;

    // On the holder's own machine its process still runs (suspended): nobody may take the worktree.
    const here: WorktreePool = await openWorktreePool({ dir, timings: FAST, aheadMs });
    const sameMachine = await takeWorktree(here, APP, { reuse: () => true });
    expect(sameMachine).toMatchObject({ name: "app-2", origin: "new" });
    sameMachine.lease.stop();
    // Another host sharing the pool sees only the lease, 90 s (here 3 s) past its last refresh.
    const elsewhere = await openWorktreePool({ dir, host: "another-host", timings: FAST, aheadMs });
    const taker = await takeWorktree(elsewhere, APP, { owner: "task-2", reuse: () => true });
    expect(taker).toMatchObject({ name: taken.name, origin: "reused" });

    holder.resume();
    const check = await holder.send<{ held: boolean; warning?: { kind: string; path: string } }>({ op: "check" });
    expect(check).toMatchObject({ held: false, warning: { kind: "pooled-worktree-lost", path: taken.path } });
    expect(await holder.send({ op: "assert" })).toMatchObject({ ok: false, error: { code: "POOLED_WORKTREE_LOST" } });
    expect(await holder.send({ op: "release" })).toEqual({ outcome: "lost" });
    // The taker was never disturbed.
    expect(await taker.stillHeld()).toBe(true);
    taker.lease.stop();
  }, 30_000);
});
