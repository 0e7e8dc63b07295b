// The per-worktree lock under which a worktree is re-taken, reused or removed. It must hold
// across processes and across hosts sharing the pool, so it is a file: `locks/<name>.lock`,
// created whole by a hard link (exclusive, also over NFS) and naming its holder, with a
// heartbeat the holder refreshes like a lease's. A lock is judged like a lease (lease.ts) and
// may be broken once stale, 30 s after its last refresh, unless its holder runs on this machine.
//
// Breaking a lock, like releasing one, moves the file aside and checks that it is the one
// judged before dropping it, so two processes breaking the same stale lock cannot drop a fresh
// one. And a holder treats its lock as lost as soon as it missed its own refresh window: a
// process suspended while holding a lock checks before each change (stillHeld) and stops.
import { randomUUID } from "node:crypto";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { heartbeatSchema, judgeLease, startHeartbeat } from "./lease.ts";
import { createJsonExclusive, isErrno, moveIfPresent, putBack, readJson, removeFile } from "./pool-files.ts";
import type { WorktreePool } from "./pool.ts";
import { processIdentitySchema, type ProcessIdentity } from "./process-identity.ts";

const lockSchema = z.strictObject({
  token: z.uuid(),
  holder: processIdentitySchema,
  /** When it was taken, on the filesystem's clock. */
  lockedAt: z.number().finite(),
});

export interface WorktreeLock {
  readonly name: string;
  /** Whether this process still holds the lock; check it right before each change. */
  stillHeld(): Promise<boolean>;
  release(): Promise<void>;
}

function lockFile(pool: WorktreePool, name: string): string {
  return join(pool.paths.locks, `${name}.lock`);
}

function lockBeatFile(pool: WorktreePool, name: string, token: string): string {
  return join(pool.paths.locks, `${name}.${token}.beat`);
}

async function lockToken(pool: WorktreePool, name: string): Promise<string | null> {
  const read = await readJson(lockFile(pool, name));
  return read.found ? (lockSchema.safeParse(read.value).data?.token ?? null) : null;
}

/**
 * Drops the lock file if it still carries `token` (null: an unreadable one): moved aside, checked,
 * then removed, or put back when another process's lock had taken its place.
 */
async function dropLockIf(pool: WorktreePool, name: string, token: string | null): Promise<void> {
  const aside = join(pool.paths.aside, `${name}.${randomUUID()}.lock`);
  if (!(await moveIfPresent(lockFile(pool, name), aside))) return;
  const read = await readJson(aside);
  const moved = read.found ? (lockSchema.safeParse(read.value).data?.token ?? null) : null;
  const wentBack = moved !== token && (await putBack(aside, lockFile(pool, name)));
  if (!wentBack) await removeFile(aside);
  if (token !== null) await removeFile(lockBeatFile(pool, name, token));
}

/** Whether the lock now on `name` may be broken: it is stale by the lease rules. */
async function breakable(
  pool: WorktreePool,
  name: string,
): Promise<{ breakable: boolean; token: string | null } | null> {
  const read = await readJson(lockFile(pool, name));
  if (!read.found && read.why === "missing") return null;
  const now = await pool.clock.now();
  const lock = read.found ? lockSchema.safeParse(read.value).data : undefined;
  if (!lock) {
    // A lock file that does not parse (a damaged disk): judged by its age alone.
    const mtime = await stat(lockFile(pool, name)).then(
      (s) => s.mtimeMs,
      () => null,
    );
    if (mtime === null) return null;
    return { breakable: now - mtime >= pool.timings.staleMs, token: null };
  }
  const beat = await readJson(lockBeatFile(pool, name, lock.token));
  const refreshed = beat.found ? heartbeatSchema.safeParse(beat.value).data : undefined;
  const refreshedAt = Math.max(lock.lockedAt, refreshed?.token === lock.token ? refreshed.refreshedAt : -Infinity);
  const judged = await judgeLease({ refreshedAt, holder: lock.holder }, { now, me: pool.me, timings: pool.timings });
  return { breakable: judged.state !== "held", token: lock.token };
}

function holding(pool: WorktreePool, name: string, token: string, lockedAt: number): WorktreeLock {
  const beat = startHeartbeat({
    file: lockBeatFile(pool, name, token),
    token,
    tmpDir: pool.paths.tmp,
    clock: pool.clock,
    timings: pool.timings,
    refreshedAt: lockedAt,
    stillMine: async () => (await lockToken(pool, name)) === token,
  });
  return {
    name,
    async stillHeld() {
      if (beat.lost) return false;
      // Suspended past its own refresh window, a holder may have had its lock broken even if
      // the file still names it (a breaker may be mid-way): it stops rather than race.
      if ((await pool.clock.now()) - beat.refreshedAt >= pool.timings.staleMs) return false;
      return (await lockToken(pool, name)) === token;
    },
    async release() {
      beat.stop();
      await dropLockIf(pool, name, token);
    },
  };
}

/** Takes the worktree's lock, breaking a stale one: null when another process holds it. */
export async function tryLockWorktree(pool: WorktreePool, name: string): Promise<WorktreeLock | null> {
  const me: ProcessIdentity = pool.me;
  for (let attempt = 0; attempt < 4; attempt++) {
    const token = randomUUID();
    const lockedAt = await pool.clock.now();
    try {
      if (
        await createJsonExclusive(lockFile(pool, name), { token, holder: me, lockedAt }, { tmpDir: pool.paths.tmp })
      ) {
        return holding(pool, name, token, lockedAt);
      }
    } catch (error) {
      if (isErrno(error, "ENOENT")) return null;
      throw error;
    }
    const current = await breakable(pool, name);
    if (current === null) continue;
    if (!current.breakable) return null;
    await dropLockIf(pool, name, current.token);
  }
  return null;
}

/** Runs `fn` under the worktree's lock: `{ locked: false }` when another process holds it. */
export async function withWorktreeLock<T>(
  pool: WorktreePool,
  name: string,
  fn: (lock: WorktreeLock) => Promise<T>,
): Promise<{ locked: true; value: T } | { locked: false }> {
  const lock = await tryLockWorktree(pool, name);
  if (!lock) return { locked: false };
  try {
    return { locked: true, value: await fn(lock) };
  } finally {
    await lock.release();
  }
}
