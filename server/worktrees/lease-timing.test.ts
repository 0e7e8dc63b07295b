// The lease rules with their real timings (10 s refresh, stale after 30 s, free 60 s after that)
// and real processes: a holder suspended (SIGSTOP) for 60 s keeps its worktree, one suspended for
// 100 s loses it to another host sharing the pool, and learns it when it runs again. The pool's
// time is moved forward (openWorktreePool's aheadMs, the children's "advance") instead of waited
// for: the holders are suspended, so nothing refreshes while it moves, as in a real wait.
import { afterAll, afterEach, expect, it } from "vitest";
import { killPoolChildren, startPoolChild, type PoolChild } from "../testing/pool-children.ts";
import { removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";
import { DEFAULT_LEASE_TIMINGS } from "./lease.ts";
import { listPool } from "./list-pool.ts";
import type { PoolRepository } from "./pool-key.ts";
import { openWorktreePool } from "./pool.ts";
import { releaseWorktree, takeWorktree } from "./take-worktree.ts";

afterEach(killPoolChildren);
afterAll(removeTemporaryDirectories);

const APP: PoolRepository = { identity: "github.com/acme/app", name: "app" };

interface Taken {
  name: string;
  path: string;
}

it("keeps a worktree for a holder suspended 60 s, and loses it after 100 s", async () => {
  expect(DEFAULT_LEASE_TIMINGS).toMatchObject({ refreshMs: 10_000, staleMs: 30_000, graceMs: 60_000 });
  const dir = temporaryDirectory("strata-lease-timing-");
  const [short, long] = await Promise.all([startPoolChild({ dir }), startPoolChild({ dir })]);
  const shortTaken = await short.send<Taken>({ op: "take", repository: APP });
  const longTaken = await long.send<Taken>({ op: "take", repository: APP });
  short.suspend();
  long.suspend();
  // The time that has passed since the suspension, on every clock of the test.
  let elapsed = 0;
  const childAt = new Map<PoolChild, number>([
    [short, 0],
    [long, 0],
  ]);
  /** Resumes a child and brings its clock to `elapsed` (it was stopped while time moved). */
  const wake = async (child: PoolChild) => {
    child.resume();
    await child.send({ op: "advance", ms: elapsed - childAt.get(child)! });
    childAt.set(child, elapsed);
  };
  // Another host sharing the pool: it cannot see these processes, only their leases.
  const elsewhere = await openWorktreePool({ dir, host: "another-host", aheadMs: () => elapsed });
  // This machine: it sees that both processes still run.
  const here = await openWorktreePool({ dir, aheadMs: () => elapsed });
  const states = async () =>
    Object.fromEntries((await listPool(elsewhere)).worktrees.map((w) => [w.name, w.state] as const));

  elapsed = 60_000;
  expect(await states()).toEqual({ [shortTaken.name]: "stale", [longTaken.name]: "stale" });
  // Neither is handed to anyone: another host asking for a worktree it would reuse gets a new one.
  const meanwhile = await takeWorktree(elsewhere, APP, { reuse: () => true });
  expect(meanwhile).toMatchObject({ name: "app-3", origin: "new" });
  await releaseWorktree(meanwhile);
  await wake(short);
  expect(await short.send({ op: "check" })).toMatchObject({ held: true });

  elapsed = 100_000;
  // The holder that runs again refreshes every 10 s: its last refresh before 100 s.
  await wake(short);
  expect(await short.send({ op: "check" })).toMatchObject({ held: true });
  // 100 s without a refresh: free for another host; the holder that ran again meanwhile is held.
  expect(await states()).toMatchObject({ [shortTaken.name]: "held", [longTaken.name]: "free" });
  // On this machine the suspended process still runs, so here it keeps its worktree.
  expect((await listPool(here)).worktrees.find((w) => w.name === longTaken.name)).toMatchObject({
    state: "held",
    keptByProcess: true,
  });
  const taker = await takeWorktree(elsewhere, APP, { reuse: (c) => c.name === longTaken.name });
  expect(taker).toMatchObject({ name: longTaken.name, origin: "reused" });

  await wake(long);
  expect(await long.send({ op: "check" })).toMatchObject({
    held: false,
    warning: { kind: "pooled-worktree-lost", path: longTaken.path },
  });
  expect(await short.send({ op: "check" })).toMatchObject({ held: true });
  expect(await taker.stillHeld()).toBe(true);
  taker.lease.stop();
}, 60_000);
