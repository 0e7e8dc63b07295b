// The pool in one process, with shortened timings: naming, taking and releasing, re-taking and
// reuse, the per-worktree lock, compare-and-swap on records, listing and pruning. Two "hosts"
// are two pools opened on one directory with different host names (a host cannot see the other's
// processes, so only the lease's age counts between them). The tests with several real processes
// are in lease.test.ts.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { isStrataError } from "../domain/errors.ts";
import { commitAll, git, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { filesystemClock } from "./fs-clock.ts";
import type { LeaseTimings } from "./lease.ts";
import { listPool } from "./list-pool.ts";
import type { PoolRepository } from "./pool-key.ts";
import {
  ensurePoolLayout,
  openWorktreePool,
  readRecord,
  recordFile,
  replaceRecord,
  revised,
  type WorktreePool,
} from "./pool.ts";
import { prunePool } from "./prune-pool.ts";
import { assertStillHeld, checkStillHeld, releaseWorktree, takeWorktree, type HeldWorktree } from "./take-worktree.ts";
import { tryLockWorktree, withWorktreeLock } from "./worktree-lock.ts";

afterAll(removeTemporaryDirectories);

// Windows wide enough that a loaded machine (a slow listPool between two checks) still sees each state.
const FAST: Partial<LeaseTimings> = { refreshMs: 100, staleMs: 1_000, graceMs: 1_500, unverifiedKeepMs: 3_000 };
const APP: PoolRepository = { identity: "github.com/acme/app", name: "app" };
const OTHER_APP: PoolRepository = { identity: "github.com/other/app", name: "app" };

const holds: HeldWorktree[] = [];
afterEach(() => {
  for (const held of holds.splice(0)) held.lease.stop();
});

/** Two hosts' pools on one directory, and `advance`: moves both pools' time forward at once. */
async function pools(): Promise<{ dir: string; a: WorktreePool; b: WorktreePool; advance: (ms: number) => void }> {
  const dir = join(temporaryDirectory("strata-pool-"), "worktrees");
  let ahead = 0;
  const aheadMs = () => ahead;
  const a = await openWorktreePool({ dir, host: "host-a", timings: FAST, aheadMs });
  const b = await openWorktreePool({ dir, host: "host-b", timings: FAST, aheadMs });
  return { dir, a, b, advance: (ms) => void (ahead += ms) };
}

async function take(...args: Parameters<typeof takeWorktree>): Promise<HeldWorktree> {
  const held = await takeWorktree(...args);
  holds.push(held);
  return held;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Stops a lease's refreshing before the time is moved: a refresh already under way would
 * otherwise stamp the moved time, and the lease would look fresh.
 */
async function stopRefreshing(held: HeldWorktree): Promise<void> {
  held.lease.stop();
  await held.lease.refresh();
}

/** Past the stale time and the grace after it. */
const FREE_AFTER = (FAST.staleMs ?? 0) + (FAST.graceMs ?? 0) + 100;

/** Makes a pooled worktree a checkout, as a restore would (clean unless `dirty`). */
function fill(path: string, dirty = false): void {
  git(path, ["init", "--quiet", "--initial-branch=main"]);
  write(path, "README.md", "restored\n");
  commitAll(path, "restored");
  if (dirty) write(path, "notes.txt", "not recorded anywhere\n");
}

const names = async (pool: WorktreePool) => (await listPool(pool)).worktrees.map((w) => `${w.name}:${w.state}`);

describe("naming", () => {
  it("puts worktrees at <repository>-<n> with the lowest free n", async () => {
    const { dir, a } = await pools();
    const [one, two, three] = [await take(a, APP), await take(a, APP), await take(a, APP)];
    expect([one.name, two.name, three.name]).toEqual(["app-1", "app-2", "app-3"]);
    expect(one).toMatchObject({ path: join(dir, "app-1"), origin: "new" });
    // A new worktree is an empty directory to restore into.
    expect(readdirSync(one.path)).toEqual([]);

    expect(await releaseWorktree(two)).toBe("released");
    expect((await prunePool(a)).removed.map((w) => w.name)).toEqual(["app-2"]);
    expect(existsSync(two.path)).toBe(false);
    const again = await take(a, APP);
    expect(again).toMatchObject({ name: "app-2", origin: "new" });
  });

  it("shares worktrees only between checkouts of one repository", async () => {
    const { a } = await pools();
    const first = await take(a, APP, { owner: "task-1" });
    fill(first.path);
    await releaseWorktree(first);
    // Another repository named app: a name of its own, and never the free app-1.
    const other = await take(a, OTHER_APP, { reuse: () => true });
    expect(other).toMatchObject({ name: "app-2", origin: "new", repository: OTHER_APP });
    // A checkout of the same repository may reuse it when it accepts it.
    const same = await take(a, APP, { owner: "task-2", reuse: () => true });
    expect(same).toMatchObject({ name: "app-1", origin: "reused", owner: "task-2" });
  });
});

describe("taking and holding", () => {
  it("re-takes a task's own free worktree first, and reuses another's only when accepted", async () => {
    const { a } = await pools();
    const mine = await take(a, APP, { owner: "task-1", env: "env-1" });
    const theirs = await take(a, APP, { owner: "task-2", env: "env-1" });
    await releaseWorktree(theirs);
    await releaseWorktree(mine);

    // Without `reuse`, task-3 gets a new worktree although two are free.
    expect(await take(a, APP, { owner: "task-3" })).toMatchObject({ name: "app-3", origin: "new" });
    // task-1 gets its own back, though app-2 was released more recently.
    expect(await take(a, APP, { owner: "task-1", reuse: () => true })).toMatchObject({
      name: "app-1",
      origin: "retaken",
    });
    // task-4 is offered app-2 (the only free one) and may refuse it.
    const offered: string[] = [];
    const refused = await take(a, APP, { owner: "task-4", reuse: (c) => (offered.push(c.name), false) });
    expect(offered).toEqual(["app-2"]);
    expect(refused).toMatchObject({ name: "app-4", origin: "new" });
  });

  it("offers free worktrees of the same environment first, then the most recently released", async () => {
    const { a } = await pools();
    const held = [
      await take(a, APP, { env: "old" }),
      await take(a, APP, { env: "new" }),
      await take(a, APP, { env: "old" }),
    ];
    for (const h of held) await releaseWorktree(h);
    const offered: string[] = [];
    await take(a, APP, { env: "old", reuse: (c) => (offered.push(c.name), false) });
    expect(offered).toEqual(["app-3", "app-1", "app-2"]);
  });

  it("never hands out a held or stale worktree; a stale one is free only after the grace period", async () => {
    const { a, b, advance } = await pools();
    const held = await take(a, APP);
    await sleep(500);
    // Refreshed all along: held, however long.
    expect(await take(b, APP, { reuse: () => true })).toMatchObject({ name: "app-2", origin: "new" });
    await stopRefreshing(held);
    advance((FAST.staleMs ?? 0) + 50);
    expect((await listPool(b)).worktrees[0]).toMatchObject({ name: "app-1", state: "stale" });
    expect(await take(b, APP, { reuse: () => true })).toMatchObject({ name: "app-3", origin: "new" });
    advance(FREE_AFTER);
    expect((await listPool(b)).worktrees[0]).toMatchObject({
      name: "app-1",
      state: "free",
      holder: { host: "host-a" },
    });
    expect(await take(b, APP, { reuse: () => true })).toMatchObject({ name: "app-1", origin: "reused" });
  });

  it("a holder whose worktree was taken no longer holds it: stillHeld is false and the guard warns pooled-worktree-lost", async () => {
    const { a, b, advance } = await pools();
    const lostByRefresh: string[] = [];
    const held = await take(a, APP, { onLost: (w) => lostByRefresh.push(w.kind) });
    expect(await held.stillHeld()).toBe(true);
    await expect(assertStillHeld(held)).resolves.toBeUndefined();
    // Suspended: it stops refreshing, and another host takes the worktree once it is free.
    await stopRefreshing(held);
    advance(FREE_AFTER);
    const taker = await take(b, APP, { reuse: () => true });
    expect(taker.name).toBe(held.name);

    expect(await held.stillHeld()).toBe(false);
    expect(lostByRefresh).toEqual(["pooled-worktree-lost"]);
    const check = await checkStillHeld(held);
    expect(check).toEqual({
      held: false,
      warning: expect.objectContaining({ kind: "pooled-worktree-lost", name: "app-1", path: held.path }),
    });
    expect(check.held ? "" : check.warning.message).toMatch(/Stop changing files there/);
    const error = await assertStillHeld(held).catch((e: unknown) => e);
    expect(isStrataError(error, "POOLED_WORKTREE_LOST")).toBe(true);
    expect(await releaseWorktree(held)).toBe("lost");
    // The new holder is untouched by all of it.
    expect(await taker.stillHeld()).toBe(true);

    // A holder whose refresh loop runs finds out by itself.
    const second = await take(a, OTHER_APP, { onLost: (w) => lostByRefresh.push(`${w.kind} ${w.name}`) });
    const stolen = await readRecord(a, second.name);
    if (!stolen.found || !stolen.record.take) throw new Error("no record");
    await replaceRecord(
      a,
      stolen.record,
      revised(stolen.record, { take: { ...stolen.record.take, token: crypto.randomUUID() } }),
    );
    await sleep(200);
    expect(second.lease.lost).toBe(true);
    expect(lostByRefresh).toEqual(["pooled-worktree-lost", `pooled-worktree-lost ${second.name}`]);
    expect(await second.stillHeld()).toBe(false);
  });

  it("releases to free at once; the owner keeps it", async () => {
    const { a } = await pools();
    const held = await take(a, APP, { owner: "task-1" });
    expect(await releaseWorktree(held)).toBe("released");
    expect((await listPool(a)).worktrees).toEqual([
      expect.objectContaining({ name: "app-1", state: "free", holder: null, owner: "task-1" }),
    ]);
    expect(await held.stillHeld()).toBe(false);
  });
});

describe("records and locks", () => {
  it("changes a record only if it is still the revision judged", async () => {
    const { a } = await pools();
    const held = await take(a, APP);
    const read = await readRecord(a, held.name);
    if (!read.found) throw new Error("no record");
    const first = revised(read.record, { env: "one" });
    expect(await replaceRecord(a, read.record, first)).toBe(true);
    // A process that judged the old revision (and was suspended since) changes nothing.
    expect(await replaceRecord(a, read.record, revised(read.record, { env: "two" }))).toBe(false);
    const now = await readRecord(a, held.name);
    expect(now.found && now.record.env).toBe("one");
    expect(readdirSync(a.paths.aside)).toEqual([]);
  });

  it("lets one process hold a worktree's lock, breaks it once stale, and tells a holder that missed its refresh it lost it", async () => {
    const { a, b } = await pools();
    await ensurePoolLayout(a);
    const outer = await withWorktreeLock(a, "app-1", async (lock) => {
      const inner = await withWorktreeLock(b, "app-1", async () => "got it");
      expect(await lock.stillHeld()).toBe(true);
      return inner;
    });
    expect(outer).toEqual({ locked: true, value: { locked: false } });

    // A lock a process on another host took 10 s ago and has not refreshed since: broken.
    const lockFile = join(a.paths.locks, "app-1.lock");
    const leftBehind = {
      token: crypto.randomUUID(),
      holder: { ...b.me, host: "host-c" },
      lockedAt: Date.now() - 10_000,
    };
    writeFileSync(lockFile, JSON.stringify(leftBehind));
    const lock = await tryLockWorktree(b, "app-1");
    if (!lock) throw new Error("the stale lock was not broken");
    expect(JSON.parse(readFileSync(lockFile, "utf8"))).not.toMatchObject({ token: leftBehind.token });
    expect(await lock.stillHeld()).toBe(true);

    // This process is stuck past the stale time (nothing runs, not even its refresh timer): it
    // may have lost the lock, so it must not act on it.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, (FAST.staleMs ?? 0) + 50);
    expect(await lock.stillHeld()).toBe(false);
    await lock.release();
    expect(readdirSync(a.paths.locks)).toEqual([]);
    expect(readdirSync(a.paths.aside)).toEqual([]);
  });
});

describe("listing and pruning", () => {
  it("lists each worktree with its holder, lease age and state, and what is no worktree", async () => {
    const { dir, a, b, advance } = await pools();
    const held = await take(a, APP, { owner: "task-1" });
    const stale = await take(a, APP);
    const free = await take(a, APP);
    await releaseWorktree(free);
    await stopRefreshing(stale);
    mkdirSync(join(dir, "stray"));
    writeFileSync(recordFile(a, "broken-1"), "{ not json");
    advance((FAST.staleMs ?? 0) + 50);
    // The held one refreshes all along (every 100 ms): its refresh after the time moved.
    expect(await held.stillHeld()).toBe(true);

    const listing = await listPool(b);
    expect(listing.now).toBeGreaterThan(0);
    expect(listing.worktrees.map((w) => [w.name, w.state, w.holder?.host ?? null])).toEqual([
      ["app-1", "held", "host-a"],
      ["app-2", "stale", "host-a"],
      ["app-3", "free", null],
    ]);
    expect(listing.worktrees[0]).toMatchObject({ owner: "task-1", path: held.path, holder: { pid: process.pid } });
    expect(listing.worktrees[1]!.leaseAgeMs).toBeGreaterThanOrEqual(FAST.staleMs!);
    expect(listing.leftovers).toEqual([
      { kind: "unreadable-record", name: "broken-1", path: join(dir, "broken-1") },
      { kind: "unrecorded-directory", name: "stray", path: join(dir, "stray") },
    ]);
    expect(await names(b)).toEqual(["app-1:held", "app-2:stale", "app-3:free"]);
  });

  it("prunes free worktrees with nothing to lose, never a dirty or held one, and finishes interrupted removals", async () => {
    const { dir, a, b } = await pools();
    const held = await take(a, APP);
    const clean = await take(a, APP);
    const dirty = await take(a, APP);
    const empty = await take(a, APP);
    const foreign = await take(a, APP);
    const interrupted = await take(a, APP);
    fill(held.path);
    fill(clean.path);
    fill(dirty.path, true);
    write(foreign.path, "not-a-checkout.txt", "someone's files\n");
    fill(interrupted.path);
    for (const h of [clean, dirty, empty, foreign, interrupted]) await releaseWorktree(h);
    // A remover that crashed after taking the record away.
    renameSync(
      recordFile(a, interrupted.name),
      join(a.paths.removing, `${interrupted.name}.${crypto.randomUUID()}.json`),
    );
    // A claim that crashed before its record: an empty directory.
    mkdirSync(join(dir, "app-9"));

    const result = await prunePool(b);
    expect(result.removed.map((w) => w.name).sort()).toEqual(["app-2", "app-4"]);
    expect(result.kept.map((w) => [w.name, w.reason]).sort()).toEqual([
      ["app-1", "held"],
      ["app-3", "dirty"],
      ["app-5", "not-a-checkout"],
    ]);
    expect(result.leftoversCleaned).toBeGreaterThanOrEqual(2);
    for (const gone of [clean, empty, interrupted]) expect(existsSync(gone.path)).toBe(false);
    expect(existsSync(join(dir, "app-9"))).toBe(false);
    expect(existsSync(join(dirty.path, "notes.txt"))).toBe(true);
    expect(readdirSync(a.paths.removing)).toEqual([]);
    expect(await names(b)).toEqual(["app-1:held", "app-3:free", "app-5:free"]);
    // The lowest free n again.
    expect((await take(b, APP)).name).toBe("app-2");
  });
});

describe("the filesystem's clock", () => {
  it("is read through a probe file, whatever this process's clock says", async () => {
    const dir = temporaryDirectory("strata-clock-");
    const days = 3 * 24 * 3600 * 1000;
    for (const skew of [days, -days, 0]) {
      const clock = filesystemClock(dir, { localNow: () => Date.now() + skew });
      expect(Math.abs((await clock.offset()) + skew)).toBeLessThan(2_000);
      expect(Math.abs((await clock.now()) - Date.now())).toBeLessThan(2_000);
    }
    // Probes are short-lived.
    expect(readdirSync(dir)).toEqual([]);
  });
});
