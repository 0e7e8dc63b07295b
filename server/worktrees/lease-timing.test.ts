// The lease rules with their real timings (10 s refresh, stale after 30 s, free 60 s after that)
// and real processes: a holder suspended (SIGSTOP) for 60 s keeps its worktree, one suspended for
// 100 s loses it to another host sharing the pool, and learns it when it runs again. Both
// holders are suspended at once, so the test takes about 100 s.
import { afterAll, afterEach, expect, it } from "vitest";
import { killPoolChildren, startPoolChild } from "../testing/pool-children.ts";
import { removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";
import { DEFAULT_LEASE_TIMINGS } from "./lease.ts";
import { listPool } from "./list-pool.ts";
import type { PoolRepository } from "./pool-key.ts";
import { openWorktreePool } from "./pool.ts";
import { releaseWorktree, takeWorktree } from "./take-worktree.ts";

afterEach(killPoolChildren);
afterAll(removeTemporaryDirectories);

const APP: PoolRepository = { identity: "github.com/acme/app", name: "app" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  const since = Date.now();
  const until = (ms: number) => sleep(Math.max(0, since + ms - Date.now()));
  // Another host sharing the pool: it cannot see these processes, only their leases.
  const elsewhere = await openWorktreePool({ dir, host: "another-host" });
  // This machine: it sees that both processes still run.
  const here = await openWorktreePool({ dir });
  const states = async () =>
    Object.fromEntries((await listPool(elsewhere)).worktrees.map((w) => [w.name, w.state] as const));

  await until(60_000);
  expect(await states()).toEqual({ [shortTaken.name]: "stale", [longTaken.name]: "stale" });
  // Neither is handed to anyone: another host asking for a worktree it would reuse gets a new one.
  const meanwhile = await takeWorktree(elsewhere, APP, { reuse: () => true });
  expect(meanwhile).toMatchObject({ name: "app-3", origin: "new" });
  await releaseWorktree(meanwhile);
  short.resume();
  expect(await short.send({ op: "check" })).toMatchObject({ held: true });

  await until(100_000);
  // 100 s without a refresh: free for another host; the holder that ran again meanwhile is held.
  expect(await states()).toMatchObject({ [shortTaken.name]: "held", [longTaken.name]: "free" });
  // On this machine the suspended process still runs, so here it keeps its worktree.
  expect((await listPool(here)).worktrees.find((w) => w.name === longTaken.name)).toMatchObject({
    state: "held",
    keptByProcess: true,
  });
  const taker = await takeWorktree(elsewhere, APP, { reuse: (c) => c.name === longTaken.name });
  expect(taker).toMatchObject({ name: longTaken.name, origin: "reused" });

  long.resume();
  expect(await long.send({ op: "check" })).toMatchObject({
    held: false,
    warning: { kind: "pooled-worktree-lost", path: longTaken.path },
  });
  expect(await short.send({ op: "check" })).toMatchObject({ held: true });
  expect(await taker.stillHeld()).toBe(true);
  taker.lease.stop();
}, 150_000);
