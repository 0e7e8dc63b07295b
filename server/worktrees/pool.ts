// The worktree pool on disk. Restored worktrees live at stable paths `<pool>/<repository>-<n>`
// (`<pool>` is `<data dir>/worktrees` unless a caller names another); everything the pool knows
// is files under `<pool>/.pool/`, no database, so hosts that share the directory over a network
// filesystem share the pool:
//
//   records/<name>.json           each worktree's record: repository, owner, the snapshot last
//                                 restored into it, the current take
//   leases/<name>.<token>.json    the heartbeat of one take (lease.ts)
//   locks/<name>.lock             the per-worktree lock, and its heartbeat <name>.<token>.beat
//   aside/, removing/             records moved aside while they change or their worktree goes
//   tmp/                          files being written, renamed or linked into place whole
//   .clock-*.probe                the filesystem clock's probes (fs-clock.ts)
//
// A record changes only by compare-and-swap: it is moved aside (rename is atomic), checked to be
// the revision the caller judged, and only then replaced or dropped, so a process suspended
// between its check and its change changes nothing that moved on meanwhile.
import { randomUUID } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { advancedClock, filesystemClock, type FsClock } from "./fs-clock.ts";
import { DEFAULT_LEASE_TIMINGS, heartbeatSchema, judgeLease, type LeaseJudgement, type LeaseTimings } from "./lease.ts";
import {
  createJsonExclusive,
  ensureDirectories,
  isErrno,
  moveIfPresent,
  putBack,
  readJson,
  removeFile,
} from "./pool-files.ts";
import { poolRepositorySchema } from "./pool-key.ts";
import { currentProcess, processIdentitySchema, type ProcessIdentity } from "./process-identity.ts";

export interface WorktreePoolOptions {
  /** The pool's directory (poolDirectory(dataDir) for Strata's own). */
  dir: string;
  /** The host name this process records (STRATA_HOST); the machine's name by default. */
  host?: string;
  /** Shorter timings for tests; the defaults are 10 s, 30 s, +60 s and 24 h. */
  timings?: Partial<LeaseTimings>;
  /** This process's clock (tests skew it); ages are judged on the filesystem's clock anyway. */
  localNow?: () => number;
  /** How far a test has moved the pool's time past the filesystem's clock (ms): leases age without waiting. */
  aheadMs?: () => number;
}

interface PoolPaths {
  state: string;
  records: string;
  leases: string;
  locks: string;
  aside: string;
  removing: string;
  tmp: string;
}

export interface WorktreePool {
  /** Absolute: the worktrees are its children. */
  readonly dir: string;
  readonly paths: PoolPaths;
  readonly timings: LeaseTimings;
  /** This process, as its leases and locks name it. */
  readonly me: ProcessIdentity;
  readonly clock: FsClock;
}

export { poolDirectory } from "./pool-directory.ts";

export async function openWorktreePool(opts: WorktreePoolOptions): Promise<WorktreePool> {
  const dir = resolve(opts.dir);
  const state = join(dir, ".pool");
  const paths: PoolPaths = {
    state,
    records: join(state, "records"),
    leases: join(state, "leases"),
    locks: join(state, "locks"),
    aside: join(state, "aside"),
    removing: join(state, "removing"),
    tmp: join(state, "tmp"),
  };
  const me = await currentProcess(opts.host);
  const fsClock = filesystemClock(state, { localNow: opts.localNow, label: `${me.host}-${me.pid}` });
  const clock = opts.aheadMs ? advancedClock(fsClock, opts.aheadMs) : fsClock;
  return { dir, paths, timings: { ...DEFAULT_LEASE_TIMINGS, ...opts.timings }, me, clock };
}

/** Creates the pool's directories (taking a worktree needs them; listing does not). */
export async function ensurePoolLayout(pool: WorktreePool): Promise<void> {
  const { records, leases, locks, aside, removing, tmp } = pool.paths;
  await ensureDirectories(pool.dir, records, leases, locks, aside, removing, tmp);
}

// --- names -------------------------------------------------------------------------------------

export function worktreeName(base: string, n: number): string {
  return `${base}-${n}`;
}

export function worktreePath(pool: WorktreePool, name: string): string {
  return join(pool.dir, name);
}

export function recordFile(pool: WorktreePool, name: string): string {
  return join(pool.paths.records, `${name}.json`);
}

export function leaseFile(pool: WorktreePool, name: string, token: string): string {
  return join(pool.paths.leases, `${name}.${token}.json`);
}

/** `<name>.<token>.<ext>` → its name and token (tokens are UUIDs, names may hold dots). */
export function splitTokenFile(file: string, ext: string): { name: string; token: string } | null {
  const match = new RegExp(`^(.+)\\.([0-9a-f]{8}-[0-9a-f-]{27})\\.${ext}$`).exec(file);
  return match ? { name: match[1]!, token: match[2]! } : null;
}

// --- records -----------------------------------------------------------------------------------

const takeSchema = z.strictObject({
  /** Names this take's heartbeat file; a new take is a new token. */
  token: z.uuid(),
  /** When it was taken, on the filesystem's clock. */
  at: z.number().finite(),
  holder: processIdentitySchema,
  /**
   * A live hold (hold-worktree.ts): the take keeps the worktree for its owner until then (the
   * filesystem's clock), whoever refreshes; no other task may take it, prune it or reuse it.
   */
  until: z.number().finite().optional(),
});

const objectIdSchema = z.string().regex(/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/);

/** The snapshot a worktree was last restored (or reset) to: what reuse and pruning compare it with. */
const recordedSnapshotSchema = z.strictObject({
  id: z.string().min(1).max(200),
  /** Null: recorded on an unborn branch. */
  head: objectIdSchema.nullable(),
  tree: objectIdSchema,
  /** The files it recorded verbatim (capture-manifest.ts), which verify compares by their bytes. */
  verbatim: z
    .array(
      z.strictObject({
        path: z.string().min(1).max(4096),
        oid: objectIdSchema,
        bytes: z
          .strictObject({ digest: z.string().regex(/^[0-9a-f]{64}$/), size: z.number().int().nonnegative() })
          .optional(),
      }),
    )
    .max(100_000)
    .optional(),
});
export type RecordedSnapshot = z.infer<typeof recordedSnapshotSchema>;

/** What a worktree's record remembers of a snapshot restored into it (or captured from it). */
export function recordedSnapshotOf(snapshotId: string, manifest: CaptureManifest): RecordedSnapshot {
  const { head, tree, verbatim } = manifest;
  if (!verbatim?.length) return { id: snapshotId, head, tree };
  return {
    id: snapshotId,
    head,
    tree,
    verbatim: verbatim.map(({ path, oid, bytes }) => (bytes ? { path, oid, bytes } : { path, oid })),
  };
}

const worktreeRecordSchema = z.strictObject({
  version: z.literal(1),
  name: z.string().min(1).max(100),
  n: z.number().int().positive(),
  repository: poolRepositorySchema,
  /** A new value on every change: what a compare-and-swap compares. */
  revision: z.uuid(),
  /** The task the worktree belongs to (it re-takes it first), also after it released it. */
  owner: z.string().max(500).nullable(),
  /** The environment hash of the snapshot last restored into it (reuse prefers the same). */
  env: z.string().max(200).nullable(),
  /** The snapshot last restored into it; records written before reuse have none. */
  snapshot: recordedSnapshotSchema.nullable().default(null),
  createdAt: z.number().finite(),
  /** The current holder, or null once released. */
  take: takeSchema.nullable(),
  releasedAt: z.number().finite().nullable(),
});
export type WorktreeRecord = z.infer<typeof worktreeRecordSchema>;

export type RecordRead = { found: true; record: WorktreeRecord } | { found: false; why: "missing" | "unreadable" };

export async function readRecord(pool: WorktreePool, name: string): Promise<RecordRead> {
  const read = await readJson(recordFile(pool, name));
  if (!read.found) return read;
  const parsed = worktreeRecordSchema.safeParse(read.value);
  return parsed.success && parsed.data.name === name
    ? { found: true, record: parsed.data }
    : { found: false, why: "unreadable" };
}

async function hasAside(pool: WorktreePool, name: string): Promise<boolean> {
  const names = await readdir(pool.paths.aside).catch(() => [] as string[]);
  return names.some((file) => splitTokenFile(file, "json")?.name === name);
}

/**
 * The record, waiting out a change in progress: a record is briefly missing while another
 * process swaps it (it sits in aside/ then).
 */
export async function readRecordSettled(pool: WorktreePool, name: string): Promise<RecordRead> {
  for (let attempt = 0; ; attempt++) {
    const read = await readRecord(pool, name);
    if (read.found || read.why === "unreadable" || attempt >= 40 || !(await hasAside(pool, name))) return read;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Every readable record, and the names of the ones that are not. */
export async function readRecords(pool: WorktreePool): Promise<{ records: WorktreeRecord[]; unreadable: string[] }> {
  let files: string[];
  try {
    files = await readdir(pool.paths.records);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return { records: [], unreadable: [] };
    throw error;
  }
  const records: WorktreeRecord[] = [];
  const unreadable: string[] = [];
  for (const file of files.filter((f) => f.endsWith(".json")).sort()) {
    const name = file.slice(0, -".json".length);
    const read = await readRecord(pool, name);
    if (read.found) records.push(read.record);
    else if (read.why === "unreadable") unreadable.push(name);
  }
  return { records, unreadable };
}

/** A new record in place, only if the name has none: false when another process has it. */
export function createRecord(pool: WorktreePool, record: WorktreeRecord): Promise<boolean> {
  return createJsonExclusive(recordFile(pool, record.name), record, { tmpDir: pool.paths.tmp });
}

/** The same record with a new revision (every change goes through this). */
export function revised(record: WorktreeRecord, change: Partial<Omit<WorktreeRecord, "revision">>): WorktreeRecord {
  return { ...record, ...change, revision: randomUUID() };
}

/**
 * Moves the record into `dir` and checks it is still the revision `expected` judged: the path
 * it was moved to, or null (and the record back in place) when it changed meanwhile.
 */
async function moveAsideChecked(pool: WorktreePool, expected: WorktreeRecord, dir: string): Promise<string | null> {
  const aside = join(dir, `${expected.name}.${randomUUID()}.json`);
  if (!(await moveIfPresent(recordFile(pool, expected.name), aside))) return null;
  const moved = await readJson(aside);
  const same = moved.found && worktreeRecordSchema.safeParse(moved.value).data?.revision === expected.revision;
  if (same) return aside;
  // Not the record we judged: put it back. Only a new worktree's record can have taken its
  // place meanwhile (when the directory was gone), and that one stands.
  if (!(await putBack(aside, recordFile(pool, expected.name)))) await removeFile(aside);
  return null;
}

/** Replaces the record if it is still the revision `expected` judged: false when it changed. */
export async function replaceRecord(
  pool: WorktreePool,
  expected: WorktreeRecord,
  next: WorktreeRecord,
): Promise<boolean> {
  const aside = await moveAsideChecked(pool, expected, pool.paths.aside);
  if (aside === null) return false;
  const placed = await createRecord(pool, next);
  await removeFile(aside);
  return placed;
}

/**
 * Takes the record away if it is still the revision `expected` judged: the path it now has in
 * removing/ (drop it once the worktree is gone), or null when it changed.
 */
export function takeRecordAway(pool: WorktreePool, expected: WorktreeRecord): Promise<string | null> {
  return moveAsideChecked(pool, expected, pool.paths.removing);
}

// --- judging -----------------------------------------------------------------------------------

export interface WorktreeJudgement extends LeaseJudgement {
  /** When it was released, or the take's last refresh, on the filesystem's clock. */
  since: number;
  /** Held for its owner by a live hold until then (the filesystem's clock); null otherwise. */
  keptUntil: number | null;
}

/** Whether a worktree is held, stale or free at `now` (the filesystem's clock). */
export async function judgeWorktree(
  pool: WorktreePool,
  record: WorktreeRecord,
  now: number,
): Promise<WorktreeJudgement> {
  const { take } = record;
  if (take === null) {
    const since = record.releasedAt ?? record.createdAt;
    return { state: "free", ageMs: Math.max(0, now - since), keptByProcess: false, since, keptUntil: null };
  }
  if (take.until !== undefined) {
    // A live hold: held until its time, then free (no heartbeat is read or written).
    const held = now < take.until;
    const since = held ? take.at : take.until;
    const ageMs = Math.max(0, now - since);
    return { state: held ? "held" : "free", ageMs, keptByProcess: false, since, keptUntil: held ? take.until : null };
  }
  const read = await readJson(leaseFile(pool, record.name, take.token));
  const beat = read.found ? heartbeatSchema.safeParse(read.value).data : undefined;
  const since = Math.max(take.at, beat?.token === take.token ? beat.refreshedAt : -Infinity);
  const judgement = await judgeLease(
    { refreshedAt: since, holder: take.holder },
    { now, me: pool.me, timings: pool.timings },
  );
  return { ...judgement, since, keptUntil: null };
}
