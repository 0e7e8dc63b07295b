// listPool(pool): every worktree of the pool with its repository, its holder and how its lease
// stands (held, stale or free, with its age on the pool filesystem's clock), the snapshot last
// restored into it and whether an interrupted reset marked it, and what the pool
// holds that is no worktree of it: directories without a record, records that do not parse,
// removals a crashed process left half done.
import { readdir, stat } from "node:fs/promises";
import type { LeaseState } from "./lease.ts";
import { isErrno } from "./pool-files.ts";
import type { PoolRepository } from "./pool-key.ts";
import {
  judgeWorktree,
  readRecords,
  splitTokenFile,
  worktreePath,
  type RecordedSnapshot,
  type WorktreePool,
  type WorktreeRecord,
} from "./pool.ts";
import { isMarked } from "./worktree-cleanliness.ts";

export interface PoolWorktree {
  name: string;
  n: number;
  /** The worktree's directory (absolute). */
  path: string;
  repository: PoolRepository;
  /** The task it belongs to (it is re-taken first by that task). */
  owner: string | null;
  env: string | null;
  /** The snapshot last restored into it (null in records written before reuse). */
  snapshot: RecordedSnapshot | null;
  /** A reset to another snapshot began there and never finished: never reused, pruned. */
  marked: boolean;
  state: LeaseState;
  /** Who holds it, or held it last (null once released). */
  holder: { pid: number; host: string } | null;
  /** Since the lease's last refresh, or since the release; on the pool filesystem's clock. */
  leaseAgeMs: number;
  /** Held although not refreshed lately: its process still runs on this machine. */
  keptByProcess: boolean;
  /** Held for its owner by a live hold until then (the pool filesystem's clock); null otherwise. */
  keptUntil: number | null;
  createdAt: number;
  releasedAt: number | null;
}

interface PoolLeftover {
  kind: "unrecorded-directory" | "unreadable-record" | "interrupted-removal";
  name: string;
  path: string;
}

export interface PoolListing {
  dir: string;
  /** The pool filesystem's time the states were judged at (null when the pool has no state yet). */
  now: number | null;
  worktrees: PoolWorktree[];
  leftovers: PoolLeftover[];
}

/** A listing entry from a record judged at `now`. */
export async function describeWorktree(pool: WorktreePool, record: WorktreeRecord, now: number): Promise<PoolWorktree> {
  const judged = await judgeWorktree(pool, record, now);
  const path = worktreePath(pool, record.name);
  return {
    name: record.name,
    n: record.n,
    path,
    repository: record.repository,
    owner: record.owner,
    env: record.env,
    snapshot: record.snapshot,
    marked: await isMarked(path),
    state: judged.state,
    holder: record.take ? { pid: record.take.holder.pid, host: record.take.holder.host } : null,
    leaseAgeMs: judged.ageMs,
    keptByProcess: judged.keptByProcess,
    keptUntil: judged.keptUntil,
    createdAt: record.createdAt,
    releasedAt: record.releasedAt,
  };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    (error: unknown) => {
      if (isErrno(error, "ENOENT")) return false;
      throw error;
    },
  );
}

async function leftoversOf(
  pool: WorktreePool,
  records: WorktreeRecord[],
  unreadable: string[],
): Promise<PoolLeftover[]> {
  const recorded = new Set([...records.map((r) => r.name), ...unreadable]);
  const entries = await readdir(pool.dir, { withFileTypes: true });
  const unrecorded = entries.filter((e) => e.isDirectory() && e.name !== ".pool" && !recorded.has(e.name));
  const removing = await readdir(pool.paths.removing).catch(() => [] as string[]);
  return [
    ...unrecorded.map((e) => ({
      kind: "unrecorded-directory" as const,
      name: e.name,
      path: worktreePath(pool, e.name),
    })),
    ...unreadable.map((name) => ({ kind: "unreadable-record" as const, name, path: worktreePath(pool, name) })),
    ...removing.flatMap((file) => {
      const name = splitTokenFile(file, "json")?.name;
      return name ? [{ kind: "interrupted-removal" as const, name, path: worktreePath(pool, name) }] : [];
    }),
  ].sort((a, b) => a.name.localeCompare(b.name));
}

/** The pool's worktrees (only one repository's with `repository`, an identity), by name. */
export async function listPool(pool: WorktreePool, opts: { repository?: string } = {}): Promise<PoolListing> {
  if (!(await exists(pool.paths.records))) return { dir: pool.dir, now: null, worktrees: [], leftovers: [] };
  const { records, unreadable } = await readRecords(pool);
  const now = await pool.clock.now();
  const chosen = records.filter((r) => opts.repository === undefined || r.repository.identity === opts.repository);
  const worktrees = await Promise.all(chosen.map((record) => describeWorktree(pool, record, now)));
  worktrees.sort((a, b) => a.repository.name.localeCompare(b.repository.name) || a.n - b.n);
  const leftovers = opts.repository === undefined ? await leftoversOf(pool, records, unreadable) : [];
  return { dir: pool.dir, now, worktrees, leftovers };
}
