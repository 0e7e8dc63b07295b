// Taking a pooled worktree for a task, holding it, and letting it go. takeWorktree re-takes the
// task's own worktree when it is free, else reuses a free one the caller accepts, else claims a
// new one at `<repository>-<n>` with the lowest free n. Re-taking and reusing happen under the
// worktree's lock and only if the record is still the one judged (pool.ts); a new name is
// claimed by creating its directory, which only one process can do.
//
// The task's process then holds the worktree through a lease it refreshes every 10 s. Before
// it records a snapshot and before it continues in the worktree, it checks that it still holds
// it (checkStillHeld / assertStillHeld): a process suspended past its lease may find that
// another task took the worktree; it then records nothing and gets `pooled-worktree-lost`.
import { randomUUID } from "node:crypto";
import { mkdir, readdir, rmdir } from "node:fs/promises";
import { StrataError } from "../domain/errors.ts";
import { startHeartbeat, writeHeartbeat, type Heartbeat } from "./lease.ts";
import { describeWorktree, listPool, type PoolWorktree } from "./list-pool.ts";
import { isErrno, removeFile } from "./pool-files.ts";
import type { PoolRepository } from "./pool-key.ts";
import type { ProcessIdentity } from "./process-identity.ts";
import {
  createRecord,
  ensurePoolLayout,
  leaseFile,
  readRecord,
  readRecordSettled,
  replaceRecord,
  revised,
  worktreeName,
  worktreePath,
  type RecordedSnapshot,
  type WorktreePool,
  type WorktreeRecord,
} from "./pool.ts";
import { withWorktreeLock } from "./worktree-lock.ts";

/** The warning of a task that no longer holds its pooled worktree. */
export interface PooledWorktreeLost {
  kind: "pooled-worktree-lost";
  message: string;
  name: string;
  path: string;
}

/** A worktree this process holds. */
export interface HeldWorktree {
  readonly pool: WorktreePool;
  readonly name: string;
  readonly path: string;
  readonly repository: PoolRepository;
  readonly owner: string | null;
  /** `new`: an empty directory to restore into; `retaken`: the owner's own; `reused`: another task's, accepted. */
  readonly origin: "new" | "retaken" | "reused";
  /** The snapshot the worktree held when it was taken, as its record remembered it. */
  readonly previous: RecordedSnapshot | null;
  /** The lease: refreshed every `timings.refreshMs` until released or lost. */
  readonly lease: Heartbeat;
  /** Refreshes the lease, then answers whether the worktree is still this take's. */
  stillHeld(): Promise<boolean>;
}

export interface TakeWorktreeOptions {
  /** The task the worktree is for (a work context, a session): it re-takes its own worktree first. */
  owner?: string | null;
  /** The environment hash of the snapshot to restore (reuse prefers worktrees of the same). */
  env?: string | null;
  /**
   * Whether a free worktree another task left may be reused; asked under the worktree's lock,
   * same environment first, then the most recently released. No reuse without it.
   */
  reuse?: (candidate: PoolWorktree) => boolean | Promise<boolean>;
  /** Called once when the refresh loop finds the worktree taken by another task. */
  onLost?: (warning: PooledWorktreeLost) => void;
  /** Claim a new worktree, neither re-taking nor reusing one (after a reuse that failed). */
  fresh?: boolean;
  /**
   * The process the take names as its holder: this one by default. Another process of this
   * machine (an agent that ran `strata resume --hold-pid`) keeps the worktree while it runs, after
   * this process stopped refreshing the lease.
   */
  holder?: ProcessIdentity;
}

export function pooledWorktreeLost(held: Pick<HeldWorktree, "name" | "path">): PooledWorktreeLost {
  return {
    kind: "pooled-worktree-lost",
    message:
      `Another task took the pooled worktree ${held.path} while this one was not refreshing its lease; ` +
      "nothing from it is recorded. Stop changing files there: the next resume restores the latest snapshot into a fresh worktree.",
    name: held.name,
    path: held.path,
  };
}

function hold(
  pool: WorktreePool,
  record: WorktreeRecord,
  origin: HeldWorktree["origin"],
  opts: TakeWorktreeOptions,
): HeldWorktree {
  const take = record.take!;
  const path = worktreePath(pool, record.name);
  const lease = startHeartbeat({
    file: leaseFile(pool, record.name, take.token),
    token: take.token,
    tmpDir: pool.paths.tmp,
    clock: pool.clock,
    timings: pool.timings,
    refreshedAt: take.at,
    stillMine: async () => {
      const read = await readRecordSettled(pool, record.name);
      if (!read.found) return read.why === "missing" ? false : "unknown";
      return read.record.take?.token === take.token;
    },
    onLost: () => opts.onLost?.(pooledWorktreeLost({ name: record.name, path })),
  });
  return {
    pool,
    name: record.name,
    path,
    repository: record.repository,
    owner: record.owner,
    origin,
    previous: record.snapshot,
    lease,
    stillHeld: () => lease.refresh(),
  };
}

/** A new take of this process: its token, time and first heartbeat. */
async function newTake(
  pool: WorktreePool,
  name: string,
  holder: ProcessIdentity = pool.me,
): Promise<NonNullable<WorktreeRecord["take"]>> {
  const token = randomUUID();
  const at = await pool.clock.now();
  await writeHeartbeat(leaseFile(pool, name, token), { token, refreshedAt: at }, pool.paths.tmp);
  return { token, at, holder };
}

/** Takes the existing worktree `name` if it is free and acceptable, under its lock. */
async function retake(
  pool: WorktreePool,
  name: string,
  repository: PoolRepository,
  opts: TakeWorktreeOptions,
): Promise<HeldWorktree | null> {
  const outcome = await withWorktreeLock(pool, name, async (lock) => {
    const read = await readRecord(pool, name);
    if (!read.found || read.record.repository.identity !== repository.identity) return null;
    const record = read.record;
    const candidate = await describeWorktree(pool, record, await pool.clock.now());
    const own = opts.owner != null && record.owner === opts.owner;
    // A marked worktree is half reset: not its owner's state, nor anyone's snapshot. One a live
    // hold keeps is its owner's to take again, and nobody else's.
    if ((candidate.state !== "free" && !(own && candidate.keptUntil !== null)) || candidate.marked) return null;
    if (!own && !(opts.reuse && (await opts.reuse(candidate)))) return null;
    if (!(await lock.stillHeld())) return null;
    const take = await newTake(pool, name, opts.holder);
    const next = revised(record, { owner: opts.owner ?? null, env: opts.env ?? record.env, take, releasedAt: null });
    if (!(await replaceRecord(pool, record, next))) {
      await removeFile(leaseFile(pool, name, take.token));
      return null;
    }
    if (record.take) await removeFile(leaseFile(pool, name, record.take.token));
    return hold(pool, next, own ? "retaken" : "reused", opts);
  });
  return outcome.locked ? outcome.value : null;
}

/** Claims `<repository>-<n>` with the lowest n no directory or record uses. */
async function claimNew(
  pool: WorktreePool,
  repository: PoolRepository,
  opts: TakeWorktreeOptions,
): Promise<HeldWorktree> {
  const used = new Set([
    ...(await readdir(pool.dir)),
    ...(await readdir(pool.paths.records)).map((file) => file.replace(/\.json$/, "")),
  ]);
  for (let n = 1; ; n++) {
    const name = worktreeName(repository.name, n);
    if (used.has(name)) continue;
    try {
      await mkdir(worktreePath(pool, name));
    } catch (error) {
      if (isErrno(error, "EEXIST")) continue;
      throw error;
    }
    const take = await newTake(pool, name, opts.holder);
    const record: WorktreeRecord = {
      version: 1,
      name,
      n,
      repository,
      revision: randomUUID(),
      owner: opts.owner ?? null,
      env: opts.env ?? null,
      snapshot: null,
      createdAt: take.at,
      take,
      releasedAt: null,
    };
    if (await createRecord(pool, record)) return hold(pool, record, "new", opts);
    // A record without its directory (someone deleted the worktree by hand) keeps the name.
    await removeFile(leaseFile(pool, name, take.token));
    await rmdir(worktreePath(pool, name)).catch(() => undefined);
  }
}

/** Free worktrees in the order they are offered: the owner's own, then the same environment, then the most recently released. */
function candidatesInOrder(worktrees: PoolWorktree[], opts: TakeWorktreeOptions): PoolWorktree[] {
  const rank = (w: PoolWorktree) =>
    (opts.owner != null && w.owner === opts.owner ? 0 : 2) + (opts.env != null && w.env === opts.env ? 0 : 1);
  const heldForOwner = (w: PoolWorktree) => w.keptUntil !== null && opts.owner != null && w.owner === opts.owner;
  return worktrees
    .filter((w) => (w.state === "free" || heldForOwner(w)) && !w.marked)
    .sort((a, b) => rank(a) - rank(b) || (b.releasedAt ?? 0) - (a.releasedAt ?? 0) || a.n - b.n);
}

/** Takes a worktree of `repository` for this process and starts refreshing its lease. */
export async function takeWorktree(
  pool: WorktreePool,
  repository: PoolRepository,
  opts: TakeWorktreeOptions = {},
): Promise<HeldWorktree> {
  await ensurePoolLayout(pool);
  const { worktrees } = await listPool(pool, { repository: repository.identity });
  for (const candidate of opts.fresh ? [] : candidatesInOrder(worktrees, opts)) {
    const held = await retake(pool, candidate.name, repository, opts);
    if (held) return held;
  }
  return claimNew(pool, repository, opts);
}

/**
 * Lets the worktree go: the lease stops and the record says it is free (it still belongs to its
 * owner). `lost` when another task had taken it; `busy` when its lock stayed taken (the lease
 * then simply ages out).
 */
export async function releaseWorktree(held: HeldWorktree): Promise<"released" | "lost" | "busy"> {
  held.lease.stop();
  const outcome = await changeHeldRecord(held, async () => ({ take: null, releasedAt: await held.pool.clock.now() }));
  if (outcome === "changed") await removeFile(leaseFile(held.pool, held.name, held.lease.token));
  return outcome === "changed" ? "released" : outcome;
}

/**
 * Changes a worktree's record under its lock and only while `ours(record)` holds: `lost` when
 * it does not (another task took it); `busy` when its lock stayed taken.
 */
export async function changeRecordWhileOurs(
  pool: WorktreePool,
  name: string,
  ours: (record: WorktreeRecord) => boolean | Promise<boolean>,
  change: () => Promise<Partial<Omit<WorktreeRecord, "revision">>>,
): Promise<"changed" | "lost" | "busy"> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const outcome = await withWorktreeLock(pool, name, async (lock) => {
      const read = await readRecord(pool, name);
      if (!read.found || !(await ours(read.record))) return "lost" as const;
      const next = revised(read.record, await change());
      if (!(await lock.stillHeld()) || !(await replaceRecord(pool, read.record, next))) return null;
      return "changed" as const;
    });
    if (outcome.locked && outcome.value !== null) return outcome.value;
    await new Promise((r) => setTimeout(r, 100));
  }
  return "busy";
}

/** Changes the record of a worktree this take holds, while the record is still this take's. */
function changeHeldRecord(
  held: HeldWorktree,
  change: () => Promise<Partial<Omit<WorktreeRecord, "revision">>>,
): Promise<"changed" | "lost" | "busy"> {
  return changeRecordWhileOurs(held.pool, held.name, (record) => record.take?.token === held.lease.token, change);
}

/**
 * Records the snapshot the held worktree now holds exactly (restored, reset, or verified in
 * place) and its environment: what reuse and pruning compare the worktree with later.
 */
export function recordWorktreeSnapshot(
  held: HeldWorktree,
  recorded: { snapshot: RecordedSnapshot | null; env: string | null },
): Promise<"changed" | "lost" | "busy"> {
  return changeHeldRecord(held, () => Promise.resolve(recorded));
}

/** Whether the task still holds its worktree; when not, the warning to give instead of recording anything. */
export async function checkStillHeld(
  held: HeldWorktree,
): Promise<{ held: true } | { held: false; warning: PooledWorktreeLost }> {
  return (await held.stillHeld()) ? { held: true } : { held: false, warning: pooledWorktreeLost(held) };
}

/** The guard before capturing from, or continuing in, a pooled worktree: throws POOLED_WORKTREE_LOST when it is not held. */
export async function assertStillHeld(held: HeldWorktree): Promise<void> {
  const check = await checkStillHeld(held);
  if (check.held) return;
  throw new StrataError("POOLED_WORKTREE_LOST", check.warning.message, {
    hint: "Stop changing files in that worktree; resume again to continue in a fresh one.",
    data: { warning: check.warning },
  });
}
