// Live holds in the pool: a paused task keeps its pooled worktree. The catalog's hold
// (server/lineage/hold-workspace.ts) says the work context may resume in the worktree; this one
// keeps the pool from handing the worktree to another task, reusing it or pruning it meanwhile.
// The worktree's take gets an end (`until`, on the pool filesystem's clock) instead of a
// heartbeat: it is held until then whoever refreshes, and free afterwards, with nothing to
// clean up. Only its owner (the work context) may take it again, capture from it, or release
// the hold before its time.
import { randomUUID } from "node:crypto";
import { stillTheTasks } from "./capture-pooled.ts";
import { removeFile } from "./pool-files.ts";
import { leaseFile, readRecord, type WorktreePool } from "./pool.ts";
import { changeRecordWhileOurs } from "./take-worktree.ts";

/**
 * Keeps the pooled worktree `name` for `owner` for `durationMs` from now: `held`; `lost` when
 * another task holds it (or it is no longer the owner's); `busy` when its lock stayed taken;
 * `missing` when the pool has no such worktree.
 */
export async function holdWorktree(
  pool: WorktreePool,
  name: string,
  opts: { owner: string; durationMs: number },
): Promise<"held" | "lost" | "busy" | "missing"> {
  const before = await readRecord(pool, name);
  if (!before.found) return "missing";
  const outcome = await changeRecordWhileOurs(
    pool,
    name,
    (record) => stillTheTasks(pool, record, opts.owner),
    async () => {
      const now = await pool.clock.now();
      return {
        take: { token: randomUUID(), at: now, holder: pool.me, until: now + opts.durationMs },
        releasedAt: null,
      };
    },
  );
  if (outcome !== "changed") return outcome;
  // The take it replaced (the task's own process's) refreshes nothing any more.
  if (before.record.take) await removeFile(leaseFile(pool, name, before.record.take.token));
  return "held";
}

/**
 * Ends the owner's live hold on the worktree before its time: free at once, still the owner's
 * own. `not-held` when no live hold of the owner keeps it (expired, taken again, never held).
 */
export async function releaseWorktreeHold(
  pool: WorktreePool,
  name: string,
  opts: { owner: string },
): Promise<"released" | "not-held" | "busy"> {
  const outcome = await changeRecordWhileOurs(
    pool,
    name,
    async (record) =>
      record.take?.until !== undefined && record.take.until > (await pool.clock.now()) && record.owner === opts.owner,
    async () => ({ take: null, releasedAt: await pool.clock.now() }),
  );
  if (outcome === "changed") return "released";
  return outcome === "lost" ? "not-held" : "busy";
}
