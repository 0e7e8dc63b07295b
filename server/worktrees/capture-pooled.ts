// A capture of a checkout that is a pooled worktree: the capture first checks that the capturing
// task still holds the worktree, and after the publish records the snapshot in the worktree's
// record, under its lock, so the worktree counts as clean at that snapshot (reuse, pruning, the
// dashboard) instead of dirty against the one it was restored to.
//
// The task holds it when the record's take names this process or one of its ancestors (an agent
// that ran `strata resume --hold-pid`, then `strata capture`), or when nobody holds it and it is
// still the task's own (released by a `strata resume` that exited), or a live hold keeps it for
// the task (hold-worktree.ts). Anything else means another task took it: `pooled-worktree-lost`,
// and nothing is recorded.
//
// Whether a checkout is pooled at all is a path test first (pool-directory.ts), done before this
// module is loaded, so a capture anywhere else costs nothing more.
import { readFile } from "node:fs/promises";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { holderRuns, type ProcessIdentity } from "./process-identity.ts";
import {
  judgeWorktree,
  openWorktreePool,
  readRecord,
  recordedSnapshotOf,
  worktreePath,
  type WorktreePool,
  type WorktreeRecord,
} from "./pool.ts";
import { changeRecordWhileOurs, pooledWorktreeLost, type PooledWorktreeLost } from "./take-worktree.ts";

/** The pooled worktree a checkout is, as a capture sees it. */
export interface CapturedWorktree {
  pool: WorktreePool;
  name: string;
  /** The work context capturing (`--context`): a free worktree that is still its own is its to record. */
  owner: string | null;
}

/** This process and its ancestors (Linux: /proc's parent pids; elsewhere this process and its parent). */
async function processLine(): Promise<Set<number>> {
  const pids = new Set([process.pid, process.ppid]);
  for (let pid = process.ppid; pid > 1 && pids.size < 64;) {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last ")".
    const ppid = stat ? Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) : NaN;
    if (!Number.isSafeInteger(ppid) || ppid <= 1) break;
    pids.add(ppid);
    pid = ppid;
  }
  return pids;
}

/** Whether the take's holder is this process or an ancestor that still runs (the same process, not a reused pid). */
async function heldByThisLine(holder: ProcessIdentity, pool: WorktreePool): Promise<boolean> {
  if (!(await processLine()).has(holder.pid)) return false;
  const runs = await holderRuns(holder, pool.me);
  return runs === "running" || runs === "running-unverified";
}

/**
 * Whether the task `owner` (this process's line) still holds the worktree its record describes:
 * its take names this process or an ancestor, a live hold keeps it for the task, or nobody holds
 * it and it is still the task's own.
 */
export async function stillTheTasks(
  pool: WorktreePool,
  record: WorktreeRecord,
  owner: string | null,
): Promise<boolean> {
  const judged = await judgeWorktree(pool, record, await pool.clock.now());
  if (judged.keptUntil !== null) return owner !== null && record.owner === owner;
  if (record.take && judged.state !== "free") return heldByThisLine(record.take.holder, pool);
  return owner !== null && record.owner === owner;
}

/**
 * The pooled worktree `name` of the pool at `poolDir` (pooledWorktreeName), when a record names
 * it, and whether the capturing task still holds it: `lost` with the warning when another task took it.
 */
export async function capturedWorktree(
  name: string,
  opts: { poolDir: string; host?: string; owner: string | null },
): Promise<null | { held: CapturedWorktree } | { lost: PooledWorktreeLost }> {
  const pool = await openWorktreePool({ dir: opts.poolDir, host: opts.host });
  const read = await readRecord(pool, name);
  if (!read.found) return null;
  const path = worktreePath(pool, name);
  if (!(await stillTheTasks(pool, read.record, opts.owner))) return { lost: pooledWorktreeLost({ name, path }) };
  return { held: { pool, name, owner: opts.owner } };
}

/**
 * Records a snapshot captured from the worktree in its record, under its lock and only while
 * the task still holds it: the warning instead when another task took it, `busy` when its lock
 * stayed taken (nothing recorded either way).
 */
export async function recordCapturedSnapshot(
  worktree: CapturedWorktree,
  snapshot: { id: string; manifest: CaptureManifest },
): Promise<"recorded" | "busy" | PooledWorktreeLost> {
  const { pool, name } = worktree;
  const outcome = await changeRecordWhileOurs(
    pool,
    name,
    (record) => stillTheTasks(pool, record, worktree.owner),
    async () => ({ snapshot: recordedSnapshotOf(snapshot.id, snapshot.manifest), env: snapshot.manifest.envHash }),
  );
  if (outcome === "lost") return pooledWorktreeLost({ name, path: worktreePath(pool, name) });
  return outcome === "changed" ? "recorded" : outcome;
}
