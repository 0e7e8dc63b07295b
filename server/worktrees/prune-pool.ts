// prunePool(pool): removes the free worktrees that hold nothing to lose, and finishes what
// crashed processes left behind. A worktree is removed only when it is exactly the snapshot its
// record remembers (worktree-cleanliness.ts: no change, no untracked or denied file, no secret
// git ignores such as an ignored `.env`), or when an interrupted reset marked it (its files are
// no snapshot's); one with anything unrecorded is never removed. Each removal happens under the worktree's
// lock, re-checks the lock and takes the record away (moved aside, checked to be the one judged)
// before a file of the worktree goes, so a pruner suspended midway removes nothing another
// task took meanwhile.
import { readdir, rm, rmdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { isProbeFile } from "./fs-clock.ts";
import { listPool, type PoolWorktree } from "./list-pool.ts";
import { putBack, readJson, removeFile } from "./pool-files.ts";
import {
  judgeWorktree,
  leaseFile,
  readRecord,
  readRecords,
  recordFile,
  splitTokenFile,
  takeRecordAway,
  worktreePath,
  type WorktreePool,
  type WorktreeRecord,
} from "./pool.ts";
import { judgeCleanliness } from "./worktree-cleanliness.ts";
import { withWorktreeLock, type WorktreeLock } from "./worktree-lock.ts";

interface PrunedWorktree {
  name: string;
  path: string;
}

interface KeptWorktree extends PrunedWorktree {
  /**
   * - `held` / `stale`: a task holds it, or may still come back to it;
   * - `dirty`: changes git does not hold; `not-a-checkout`: a directory that is no checkout;
   * - `busy`: another process had its lock; `changed`: it was taken while being judged.
   */
  reason: "held" | "stale" | "dirty" | "not-a-checkout" | "busy" | "changed";
  /** What a dirty worktree holds that no snapshot recorded. */
  detail?: string;
}

type KeptReason = Pick<KeptWorktree, "reason" | "detail">;

export interface PruneResult {
  removed: PrunedWorktree[];
  kept: KeptWorktree[];
  /** Leftovers of crashed processes finished or removed (half-done removals, old heartbeats, probes). */
  leftoversCleaned: number;
}

/** Removes the worktree under its lock if it is still free and removable: the reason it stays otherwise. */
async function removeIfFree(
  pool: WorktreePool,
  lock: WorktreeLock,
  record: WorktreeRecord,
): Promise<KeptReason | null> {
  const judged = await judgeWorktree(pool, record, await pool.clock.now());
  if (judged.state !== "free") return { reason: judged.state };
  const path = worktreePath(pool, record.name);
  const { state, detail } = await judgeCleanliness(path, record.snapshot);
  if (state === "dirty" || state === "not-a-checkout") return detail ? { reason: state, detail } : { reason: state };
  if (!(await lock.stillHeld())) return { reason: "busy" };
  const aside = await takeRecordAway(pool, record);
  if (aside === null) return { reason: "changed" };
  // Nobody can take it now: it has no record, and its name stays used while the directory exists.
  await rm(path, { recursive: true, force: true });
  await removeFile(aside);
  if (record.take) await removeFile(leaseFile(pool, record.name, record.take.token));
  return null;
}

/**
 * Removes one worktree of the listing if it is free and has nothing to lose (or is marked): null
 * once removed, else why it stays. Pruning and the eviction of idle worktrees both use it.
 */
export async function removeFreeWorktree(pool: WorktreePool, worktree: PoolWorktree): Promise<KeptReason | null> {
  if (worktree.state !== "free") return { reason: worktree.state };
  const outcome = await withWorktreeLock(pool, worktree.name, async (lock) => {
    const read = await readRecord(pool, worktree.name);
    return read.found ? removeIfFree(pool, lock, read.record) : { reason: "changed" as const };
  });
  return outcome.locked ? outcome.value : { reason: "busy" };
}

/**
 * Records a crashed process left moved aside (in aside/ mid-change, in removing/ mid-removal):
 * under the worktree's lock, which that process held and which is stale now, a change is undone
 * (the record put back) and a removal finished. A live process still holds the lock: skipped.
 */
async function finishInterrupted(pool: WorktreePool, dir: string, finish: "put-back" | "remove"): Promise<number> {
  let cleaned = 0;
  for (const file of await readdir(dir).catch(() => [] as string[])) {
    const name = splitTokenFile(file, "json")?.name;
    if (!name) continue;
    const outcome = await withWorktreeLock(pool, name, async () => {
      const aside = join(dir, file);
      const current = await readRecord(pool, name);
      if (current.found || current.why === "unreadable") return removeFile(aside);
      if (finish === "put-back") return void (await putBack(aside, recordFile(pool, name)));
      await rm(worktreePath(pool, name), { recursive: true, force: true });
      await removeFile(aside);
    });
    if (outcome.locked) cleaned++;
  }
  return cleaned;
}

/**
 * Files older than the stale time that nothing refers to any more: heartbeats of past takes and
 * locks, locks a crashed process moved aside, probes and temporary files.
 */
async function removeStaleFiles(pool: WorktreePool): Promise<number> {
  const { records } = await readRecords(pool);
  const currentTakes = new Set(records.flatMap((r) => (r.take ? [`${r.name}.${r.take.token}`] : [])));
  const now = await pool.clock.now();
  const { leases, locks, aside, state, tmp } = pool.paths;
  const candidates = [
    ...(await filesIn(leases)).filter((f) => !currentTakes.has(f.replace(/\.json$/, ""))).map((f) => join(leases, f)),
    ...(await filesIn(locks)).filter((f) => f.endsWith(".beat")).map((f) => join(locks, f)),
    ...(await filesIn(aside)).filter((f) => f.endsWith(".lock")).map((f) => join(aside, f)),
    ...(await filesIn(state)).filter(isProbeFile).map((f) => join(state, f)),
    ...(await filesIn(tmp)).map((f) => join(tmp, f)),
  ];
  let cleaned = 0;
  for (const path of candidates) {
    // Heartbeats are rewritten on every refresh, so the modification time is the last one.
    const mtime = await stat(path).then(
      (s) => s.mtimeMs,
      () => now,
    );
    if (now - mtime < pool.timings.staleMs) continue;
    // A lock's heartbeat stays while its lock does (a holder on this machine may be suspended).
    if (path.endsWith(".beat") && (await lockNames(pool, path))) continue;
    await removeFile(path);
    cleaned++;
  }
  return cleaned;
}

function filesIn(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => [] as string[]);
}

/** Whether the lock the heartbeat file belongs to is still in place with its token. */
async function lockNames(pool: WorktreePool, beatPath: string): Promise<boolean> {
  const parts = splitTokenFile(beatPath.slice(pool.paths.locks.length + 1), "beat");
  if (!parts) return false;
  const read = await readJson(join(pool.paths.locks, `${parts.name}.lock`));
  return read.found && (read.value as { token?: unknown } | null)?.token === parts.token;
}

/** Removes free worktrees with nothing to lose, and leftovers of crashed processes. */
export async function prunePool(pool: WorktreePool): Promise<PruneResult> {
  const listing = await listPool(pool);
  const result: PruneResult = { removed: [], kept: [], leftoversCleaned: 0 };
  if (listing.now === null) return result;
  for (const worktree of listing.worktrees) {
    const kept = await removeFreeWorktree(pool, worktree);
    if (kept === null) result.removed.push({ name: worktree.name, path: worktree.path });
    else result.kept.push({ name: worktree.name, path: worktree.path, ...kept });
  }
  result.leftoversCleaned += await finishInterrupted(pool, pool.paths.aside, "put-back");
  result.leftoversCleaned += await finishInterrupted(pool, pool.paths.removing, "remove");
  for (const leftover of listing.leftovers.filter((l) => l.kind === "unrecorded-directory")) {
    // Only an empty one (a claim that never got its record); anything else may be someone's files.
    if ((await readRecord(pool, leftover.name)).found) continue;
    if (
      await rmdir(leftover.path).then(
        () => true,
        () => false,
      )
    )
      result.leftoversCleaned++;
  }
  result.leftoversCleaned += await removeStaleFiles(pool);
  return result;
}
