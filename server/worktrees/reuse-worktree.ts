// Reusing idle pooled worktrees instead of restoring into new ones. An idle worktree another task
// left is reused only when it is exactly the snapshot its record remembers, with nothing
// unrecorded and no ignored secret (worktree-cleanliness.ts); its tracked files are then reset to
// the snapshot being resumed (server/restore/engine/reset-worktree.ts) and verified, and its ignored files
// (node_modules, target, .venv) stay, so dependency installs have little to redo.
//
// A reset is marked (a file in the worktree's git directory) before it starts and unmarked only
// once it verified, or when it was declined before a file changed. A reset interrupted in
// between (a crash, a kill) leaves the mark: takeWorktree never offers the worktree again and
// pruning removes it, since its files are no snapshot's.
//
// After a restore, the oldest idle worktrees of the repository with nothing to lose are removed
// while more than `maxIdlePerRepository` are idle; one with unrecorded changes always stays.
import type { RestoreRecord } from "../domain/restore-record.ts";
import { resetWorktree, type ResetOptions, type ResetReport } from "../restore/engine/reset-worktree.ts";
import { listPool, type PoolWorktree } from "./list-pool.ts";
import { removeFile, writeJsonAtomic } from "./pool-files.ts";
import type { PoolRepository } from "./pool-key.ts";
import type { RecordedSnapshot, WorktreePool } from "./pool.ts";
import { removeFreeWorktree } from "./prune-pool.ts";
import type { HeldWorktree } from "./take-worktree.ts";
import { judgeCleanliness, resetMarkFile } from "./worktree-cleanliness.ts";

/** How many idle worktrees of one repository a pool keeps by default. */
export const DEFAULT_MAX_IDLE_PER_REPOSITORY = 4;

/** Whether a free worktree another task left may be reset for this one (takeWorktree's `reuse`). */
export async function isReusable(candidate: PoolWorktree): Promise<boolean> {
  if (candidate.snapshot === null || candidate.marked) return false;
  return (await judgeCleanliness(candidate.path, candidate.snapshot)).state === "clean";
}

/**
 * Resets a held worktree that is exactly `from` to the snapshot `record`, marked meanwhile. The
 * report says how it went; a declined reset that may have touched files leaves the mark.
 */
export async function resetHeldWorktree(
  held: HeldWorktree,
  record: RestoreRecord,
  from: RecordedSnapshot,
  opts: ResetOptions,
): Promise<ResetReport> {
  const mark = resetMarkFile(held.path);
  const since = await held.pool.clock.now();
  await writeJsonAtomic(
    mark,
    { snapshotId: record.snapshotId, from: from.id, since, holder: held.pool.me },
    { tmpDir: held.pool.paths.tmp, syncDir: true },
  );
  const report = await resetWorktree(record, held.path, { head: from.head, tree: from.tree }, opts);
  if (report.status === "reset" || !report.touched) await removeFile(mark);
  return report;
}

/**
 * While more than `maxIdle` worktrees of the repository are idle (free), removes the oldest ones
 * that have nothing to lose or are marked; a dirty one is never removed. Returns the names removed.
 */
export async function evictIdleWorktrees(
  pool: WorktreePool,
  repository: PoolRepository,
  maxIdle: number = DEFAULT_MAX_IDLE_PER_REPOSITORY,
): Promise<string[]> {
  const idle = (await listPool(pool, { repository: repository.identity })).worktrees
    .filter((w) => w.state === "free")
    .sort((a, b) => (a.releasedAt ?? a.createdAt) - (b.releasedAt ?? b.createdAt) || a.n - b.n);
  const removed: string[] = [];
  for (const worktree of idle) {
    if (idle.length - removed.length <= maxIdle) break;
    if ((await removeFreeWorktree(pool, worktree)) === null) removed.push(worktree.name);
  }
  return removed;
}
