// A process that uses a worktree pool, for the pool tests: real processes holding leases,
// suspended with SIGSTOP, racing for a worktree, judging with a clock days off.
// Run: node --import tsx server/testing/pool-process.ts '<json>' with
// json = { dir, host?, skewMs?, timings? }. It prints {"ready":…} once, then answers each JSON
// line on stdin ({ op: "take" | "check" | "assert" | "release" | "list" | "prune" | "offset" |
// "advance", … }) with one JSON line.
import { createInterface } from "node:readline";
import type { LeaseTimings } from "../worktrees/lease.ts";
import { listPool } from "../worktrees/list-pool.ts";
import type { PoolRepository } from "../worktrees/pool-key.ts";
import { openWorktreePool } from "../worktrees/pool.ts";
import { prunePool } from "../worktrees/prune-pool.ts";
import {
  assertStillHeld,
  checkStillHeld,
  releaseWorktree,
  takeWorktree,
  type HeldWorktree,
  type PooledWorktreeLost,
} from "../worktrees/take-worktree.ts";
import { judgeCleanliness } from "../worktrees/worktree-cleanliness.ts";

interface Args {
  dir: string;
  host?: string;
  /** How far this process's clock is off (ms): it sees the pool only through its probe. */
  skewMs?: number;
  timings?: Partial<LeaseTimings>;
}

type Request =
  | {
      op: "take";
      repository: PoolRepository;
      owner?: string;
      env?: string;
      reuse?: "all" | "clean";
      /** How long the reuse check takes (it runs under the worktree's lock): widens a race. */
      reuseMs?: number;
    }
  | { op: "check" | "assert" | "release" | "list" | "prune" | "offset" }
  /** Moves this process's pool time forward by `ms` (lease-timing.test.ts), as if it had passed. */
  | { op: "advance"; ms: number };

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const skew = args.skewMs ?? 0;
let ahead = 0;
const pool = await openWorktreePool({
  dir: args.dir,
  host: args.host,
  timings: args.timings,
  localNow: () => Date.now() + skew,
  aheadMs: () => ahead,
});
let held: HeldWorktree | null = null;
const lost: PooledWorktreeLost[] = [];

function reply(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

async function answer(request: Request): Promise<unknown> {
  switch (request.op) {
    case "take": {
      const accept = async (c: { path: string }) =>
        request.reuse === "all" || (await judgeCleanliness(c.path, null)).state === "clean";
      const reuse = request.reuse
        ? async (c: { path: string }) => {
            await new Promise((r) => setTimeout(r, request.reuseMs ?? 0));
            return accept(c);
          }
        : undefined;
      held = await takeWorktree(pool, request.repository, {
        owner: request.owner,
        env: request.env,
        reuse,
        onLost: (warning) => lost.push(warning),
      });
      return { name: held.name, path: held.path, origin: held.origin, token: held.lease.token };
    }
    case "check":
      return { ...(await checkStillHeld(held!)), lostByRefresh: lost };
    case "assert":
      try {
        await assertStillHeld(held!);
        return { ok: true };
      } catch (error) {
        return { ok: false, error: (error as { toJSON(): unknown }).toJSON() };
      }
    case "release":
      return { outcome: await releaseWorktree(held!) };
    case "list":
      return { ...(await listPool(pool)), offsetMs: await pool.clock.offset() };
    case "prune":
      return prunePool(pool);
    case "offset":
      return { offsetMs: await pool.clock.offset() };
    case "advance":
      ahead += request.ms;
      return { aheadMs: ahead };
  }
}

reply({ ready: true, pid: process.pid, startTime: pool.me.startTime });
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  try {
    reply(await answer(JSON.parse(line) as Request));
  } catch (error) {
    reply({ failed: String(error) });
  }
}
