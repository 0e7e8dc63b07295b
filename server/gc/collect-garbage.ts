// Garbage collection of layers and blobs.
//
// What is kept, whatever its age:
// - every layer a head reaches through parent links (heads of any snapshot, retired ones
//   included, until releaseRetiredHeads removes them once no pin is active);
// - the blob of every layer not yet deleted (a layer's bytes are the stored blob whose sha256
//   is the layer's digest), and the manifest blob of every snapshot not yet deleted;
// - blobs that a snapshot's `metadata.manifest.blobDigests` names (snapshots published before
//   their content is registered as layers), while the snapshot is not deleted;
// - blobs a dependency cache needs (server/caches/), while the cache is not deleted.
// What is kept for a while: any blob stored or last reused less than `graceSeconds` ago (one
// hour by default), so an upload that is not referenced yet survives until it is. The bytes of a
// layer this run deletes count only their last reuse: they were referenced (by that layer), so
// the upload they came from is over, and a new upload or `missing` query of the digest restarts
// the window. So a run frees the bytes of the layers it deletes, as its dry run says it will.
//
// How a run proceeds, each step in small transactions that commit on their own:
//  1. expired pins are recorded as released;
//  2. heads of retired snapshots without an active pin are released;
//  3. layers left `deleting` by an interrupted run are finished;
//  4. candidates (no head, no available child: the leaves of what no head reaches) are locked
//     FOR UPDATE SKIP LOCKED, re-checked after the lock, and moved available → deleting; then,
//     in a separate transaction, their bytes are deleted by exact digest (unless something
//     else still needs them) and they become deleted. A marked layer's parent is examined
//     next, so whole dead branches go in one run;
//  5. unreferenced blobs past the grace window, and uploads abandoned for a day, are deleted.
// Whenever a stored blob is deleted, the agents' grants of its digest go in the same transaction.
// A publish that reuses a layer locks it FOR SHARE and needs it `available`, so a layer is
// either kept (the publish's lock or its committed child is seen) or the publish is refused.
//
// A dry run (`dryRun`) does all of this in one transaction and rolls it back: its figures are
// exactly what a real run would have deleted and freed at that moment. It is recorded as a run
// with dry_run set, does not count for the interval, and skips when a real run holds the lease.
//
// At most one run at a time and at most one per `intervalSeconds` after the last finished one,
// across every process sharing the database, judged on the database's clock: the `gc` lease
// row. A run renews the lease in every batch transaction and fails that batch if it lost it
// (a fencing check), so a stalled process can never commit after another took over. A killed
// run leaves committed batches committed and its open batch rolled back; once its lease
// expires (`leaseSeconds`), the next run marks it INTERRUPTED and finishes the work.
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import type { Db } from "../db/client.ts";
import { inTransaction } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { childrenFirst, splitByBudget } from "../domain/content.ts";
import { StrataError } from "../domain/errors.ts";
import { dbNow, toNumber } from "../db/sql.ts";
import {
  abandonedUploads,
  availableChildren,
  cachedBlobDigests,
  deleteGrantsOfUnstored,
  deletingLayersAfter,
  headedLayers,
  leafLayerCandidates,
  listedBlobDigests,
  liveLayerDigests,
  liveManifestDigests,
  lockAvailableLayersSkipLocked,
  lockDeletingLayers,
  lockLeaseRow,
  lockStoredBlobsSkipLocked,
  moveLayers,
  unreferencedStoredBlobs,
} from "../db/statements/gc.ts";
import { releaseExpiredPins } from "../content/pins.ts";
import { headReleaseCandidates, releaseHeadsOf } from "../lineage/retirement.ts";
import { logger, scrubText } from "../log/logger.ts";
import { measure } from "../log/measures.ts";

export const GC_LEASE = "gc";

/**
 * A scheduled run (the worker's, one per interval slot) skips when the last run finished less
 * than this share of the interval ago, so a run late in its slot does not skip the next slot.
 */
export const SCHEDULED_INTERVAL_SHARE = 0.9;

export interface GcSettings {
  /** Blobs stored or reused more recently than this are never deleted. */
  graceSeconds: number;
  /** A new run starts at most this long after the last finished one (unless forced). */
  intervalSeconds: number;
  /** A run that stops renewing its lease for this long is presumed dead and taken over. */
  leaseSeconds: number;
  /** Rows per transaction. */
  batchSize: number;
  /** An upload that has not finished after this long is reclaimed. */
  abandonedUploadSeconds: number;
}

export const DEFAULT_GC_SETTINGS: GcSettings = {
  graceSeconds: 60 * 60,
  intervalSeconds: 60 * 60,
  leaseSeconds: 120,
  batchSize: 100,
  abandonedUploadSeconds: 24 * 60 * 60,
};

export type CollectPhase = "pins" | "heads" | "finish" | "mark" | "bytes" | "blobs" | "uploads";

/** Test seams: a hook may pause a run at a precise point (e.g. to kill the process there). */
interface CollectHooks {
  /** Inside a batch's transaction, after its work and before it commits. */
  inBatch?(phase: CollectPhase, info: { count: number }): Promise<void>;
  /** After a batch committed. */
  afterBatch?(phase: CollectPhase, info: { count: number }): Promise<void>;
}

export interface CollectOptions extends Partial<GcSettings> {
  /** Run even if the interval has not passed (never while another run holds the lease). */
  force?: boolean;
  /** Compute what a run would delete and free, change nothing (implies force). */
  dryRun?: boolean;
  host?: string;
  signal?: AbortSignal;
  hooks?: CollectHooks;
}

interface CollectionTally {
  pinsExpired: number;
  snapshotsReleased: number;
  headsReleased: number;
  snapshotsKept: number;
  snapshotsDeleted: number;
  layersMarked: number;
  layersDeleted: number;
  /** The declared sizes of the layers deleted. */
  layerBytes: number;
  blobsDeleted: number;
  /** The sizes of the stored blobs deleted: the space the run gave back. */
  bytesFreed: number;
  uploadsAbandoned: number;
  batches: number;
}

export type CollectResult =
  | { status: "skipped"; reason: "running" | "not-due"; until: Date }
  | {
      status: "finished" | "failed";
      runId: string;
      dryRun: boolean;
      startedAt: Date;
      finishedAt: Date;
      errorCode: string | null;
      error: string | null;
      tally: CollectionTally;
    };

/** Run outcomes that do not count as "the last collection" for the interval. */
const NOT_COUNTED = ["INTERRUPTED", "ABORTED", "LEASE_LOST"];

class LeaseLost extends Error {
  constructor() {
    super("the collection lease was taken over by another process");
    this.name = "LeaseLost";
  }
}

function emptyTally(): CollectionTally {
  return {
    pinsExpired: 0,
    snapshotsReleased: 0,
    headsReleased: 0,
    snapshotsKept: 0,
    snapshotsDeleted: 0,
    layersMarked: 0,
    layersDeleted: 0,
    layerBytes: 0,
    blobsDeleted: 0,
    bytesFreed: 0,
    uploadsAbandoned: 0,
    batches: 0,
  };
}

function addTally(into: CollectionTally, more: Partial<CollectionTally>): void {
  for (const [key, value] of Object.entries(more) as [keyof CollectionTally, number][]) into[key] += value;
}

function secondsAfter(date: Date, seconds: number): Date {
  return new Date(date.getTime() + seconds * 1000);
}

function settingsOf(opts: CollectOptions): GcSettings {
  const s: GcSettings = {
    graceSeconds: opts.graceSeconds ?? DEFAULT_GC_SETTINGS.graceSeconds,
    intervalSeconds: opts.intervalSeconds ?? DEFAULT_GC_SETTINGS.intervalSeconds,
    leaseSeconds: opts.leaseSeconds ?? DEFAULT_GC_SETTINGS.leaseSeconds,
    batchSize: opts.batchSize ?? DEFAULT_GC_SETTINGS.batchSize,
    abandonedUploadSeconds: opts.abandonedUploadSeconds ?? DEFAULT_GC_SETTINGS.abandonedUploadSeconds,
  };
  const valid =
    s.graceSeconds >= 0 &&
    s.intervalSeconds >= 0 &&
    s.leaseSeconds > 0 &&
    Number.isInteger(s.batchSize) &&
    s.batchSize >= 1 &&
    s.batchSize <= 1000 &&
    s.abandonedUploadSeconds >= 0;
  if (!valid) throw new StrataError("INVALID_INPUT", "Invalid collection settings.", { data: { ...s } });
  return s;
}

// --- The lease and the run record -------------------------------------------------------------

type Started = { runId: string; startedAt: Date } | Extract<CollectResult, { status: "skipped" }>;

async function startRun(db: Db, settings: GcSettings, opts: CollectOptions): Promise<Started> {
  return inTransaction(db, async (tx) => {
    await lockLeaseRow(tx, GC_LEASE);
    const lease = await tx.lease.findUnique({ where: { name: GC_LEASE } });
    const now = await dbNow(tx);
    if (lease && lease.expiresAt.getTime() > now.getTime()) {
      return { status: "skipped", reason: "running", until: lease.expiresAt } as const;
    }
    if (!opts.force) {
      const last = await tx.collectionRun.findFirst({
        where: {
          dryRun: false,
          status: { in: ["finished", "failed"] },
          finishedAt: { not: null },
          OR: [{ errorCode: null }, { errorCode: { notIn: NOT_COUNTED } }],
        },
        orderBy: { finishedAt: "desc" },
        select: { finishedAt: true },
      });
      const due = last?.finishedAt ? secondsAfter(last.finishedAt, settings.intervalSeconds) : null;
      if (due && due.getTime() > now.getTime()) return { status: "skipped", reason: "not-due", until: due } as const;
    }
    // Whoever ran before us let its lease expire: its run was cut short.
    await tx.collectionRun.updateMany({
      where: { status: "running" },
      data: { status: "failed", finishedAt: now, errorCode: "INTERRUPTED" },
    });
    const runId = randomUUID();
    const leaseRow = { holder: runId, acquiredAt: now, expiresAt: secondsAfter(now, settings.leaseSeconds) };
    if (lease) {
      await tx.lease.update({ where: { name: GC_LEASE }, data: leaseRow });
    } else {
      try {
        await tx.lease.create({ data: { name: GC_LEASE, ...leaseRow } });
      } catch (error) {
        if (isUniqueViolation(error)) throw new RetryTransaction("collection lease created concurrently");
        throw error;
      }
    }
    await tx.collectionRun.create({
      data: { id: runId, host: opts.host ?? `${hostname()}:${process.pid}`, status: "running", startedAt: now },
    });
    return { runId, startedAt: now };
  });
}

interface RunContext {
  db: Db;
  runId: string;
  settings: GcSettings;
  tally: CollectionTally;
  hooks: CollectHooks | undefined;
  signal: AbortSignal | undefined;
}

/**
 * One batch: renews (and checks) the lease, does the work, adds its counts to the run row,
 * all in one transaction. The tally grows only once the transaction committed.
 */
async function batch(
  ctx: RunContext,
  phase: CollectPhase,
  work: (tx: Db, now: Date) => Promise<{ count: number; tally: Partial<CollectionTally> }>,
): Promise<{ count: number; tally: Partial<CollectionTally> }> {
  ctx.signal?.throwIfAborted();
  const out = await inTransaction(ctx.db, async (tx) => {
    const now = await dbNow(tx);
    const renewed = await tx.lease.updateMany({
      where: { name: GC_LEASE, holder: ctx.runId },
      data: { expiresAt: secondsAfter(now, ctx.settings.leaseSeconds) },
    });
    if (renewed.count !== 1) throw new LeaseLost();
    const result = await work(tx, now);
    const t = result.tally;
    await tx.collectionRun.update({
      where: { id: ctx.runId },
      data: {
        pinsExpired: { increment: t.pinsExpired ?? 0 },
        snapshotsReleased: { increment: t.snapshotsReleased ?? 0 },
        headsReleased: { increment: t.headsReleased ?? 0 },
        layersDeleted: { increment: t.layersDeleted ?? 0 },
        layerBytes: { increment: BigInt(t.layerBytes ?? 0) },
        blobsDeleted: { increment: t.blobsDeleted ?? 0 },
        bytesFreed: { increment: BigInt(t.bytesFreed ?? 0) },
        uploadsAbandoned: { increment: t.uploadsAbandoned ?? 0 },
      },
    });
    await ctx.hooks?.inBatch?.(phase, { count: result.count });
    return result;
  });
  addTally(ctx.tally, { ...out.tally, batches: 1 });
  await ctx.hooks?.afterBatch?.(phase, { count: out.count });
  return out;
}

/** At most this many bytes of blobs are deleted in one transaction (besides the row count). */
const MAX_BATCH_BYTES = 256 * 1024 * 1024;

// --- What still references a blob -------------------------------------------------------------

/**
 * The digests among `digests` that something still needs: a layer not yet deleted (other
 * than `finishing`, the deleting layers this transaction completes), a snapshot's manifest,
 * or a snapshot's metadata list of blob digests (snapshots not yet deleted).
 */
async function referencedDigests(tx: Db, digests: readonly string[], finishing: readonly string[] = []) {
  const referenced = new Set<string>();
  if (digests.length === 0) return referenced;
  for (const digest of await liveLayerDigests(tx, digests, finishing)) referenced.add(digest);
  for (const digest of await liveManifestDigests(tx, digests)) referenced.add(digest);
  for (const digest of await listedBlobDigests(tx, digests)) referenced.add(digest);
  for (const digest of await cachedBlobDigests(tx, digests)) referenced.add(digest);
  return referenced;
}

function lastUse(blob: { storedAt: Date; lastReusedAt: Date | null }): number {
  return Math.max(blob.storedAt.getTime(), blob.lastReusedAt?.getTime() ?? 0);
}

/**
 * Locks stored blobs FOR UPDATE (skipping rows a publish holds) and deletes the unneeded ones.
 * `finishing`: the deleting layers whose bytes these are; their grace counts from the last reuse.
 */
async function deleteUnneededBlobs(
  tx: Db,
  now: Date,
  settings: GcSettings,
  where: { ids?: readonly string[]; digests?: readonly string[] },
  finishing: readonly string[] = [],
): Promise<{ blobsDeleted: number; bytesFreed: number }> {
  const keys = where.ids ?? where.digests ?? [];
  if (keys.length === 0) return { blobsDeleted: 0, bytesFreed: 0 };
  const lockedIds = await lockStoredBlobsSkipLocked(tx, where.ids ? { ids: keys } : { digests: keys });
  if (lockedIds.length === 0) return { blobsDeleted: 0, bytesFreed: 0 };
  // Read after the lock: the newest committed reuse time and references count.
  const blobs = await tx.blob.findMany({
    where: { id: { in: lockedIds }, state: "stored" },
    select: { id: true, digest: true, sizeBytes: true, storedAt: true, lastReusedAt: true },
  });
  const cutoff = now.getTime() - settings.graceSeconds * 1000;
  const old = blobs.filter((b) => (finishing.length > 0 ? (b.lastReusedAt?.getTime() ?? 0) : lastUse(b)) <= cutoff);
  const referenced = await referencedDigests(
    tx,
    old.map((b) => b.digest),
    finishing,
  );
  const doomed = old.filter((b) => !referenced.has(b.digest));
  if (doomed.length === 0) return { blobsDeleted: 0, bytesFreed: 0 };
  // Chunks go with their blob (ON DELETE CASCADE).
  const deleted = await tx.blob.deleteMany({ where: { id: { in: doomed.map((b) => b.id) }, state: "stored" } });
  // Grants go with the bytes: a later upload of the same digest must be new for every agent
  // again, and proves possession anew. The digest column is indexed for this.
  const gone = [...new Set(doomed.map((b) => b.digest))];
  await deleteGrantsOfUnstored(tx, gone);
  return { blobsDeleted: deleted.count, bytesFreed: doomed.reduce((sum, b) => sum + Number(b.sizeBytes), 0) };
}

// --- Layers -----------------------------------------------------------------------------------

/**
 * One round: locks the given layers (skipping any a publish holds), re-checks each after the
 * lock, and moves those with no head and no available child (other than ones marked in this
 * round) to deleting. Children are judged first, so a dead chain in one round goes whole.
 */
async function markRound(
  tx: Db,
  uuids: readonly string[],
  now: Date,
): Promise<{ uuid: string; parentUuid: string | null; sizeBytes: number }[]> {
  if (uuids.length === 0) return [];
  const locked = await lockAvailableLayersSkipLocked(tx, uuids);
  if (locked.length === 0) return [];
  const ids = locked.map((r) => r.uuid);
  // Fresh reads after the locks: a head or child committed meanwhile is seen here.
  const headed = new Set(await headedLayers(tx, ids));
  const childrenOf = new Map<string, string[]>();
  for (const c of await availableChildren(tx, ids)) {
    childrenOf.set(c.parentUuid, [...(childrenOf.get(c.parentUuid) ?? []), c.uuid]);
  }
  const marking = new Set<string>();
  for (const row of childrenFirst(locked)) {
    if (headed.has(row.uuid)) continue;
    if ((childrenOf.get(row.uuid) ?? []).every((child) => marking.has(child))) marking.add(row.uuid);
  }
  if (marking.size === 0) return [];
  await moveLayers(tx, [...marking], { from: "available", to: "deleting" }, now);
  return locked.filter((r) => marking.has(r.uuid));
}

/**
 * Marks up to `budget` layers, starting from `start` and walking up to the parents of what it
 * marks (a parent whose last available child was just marked is a candidate now). Returns
 * what it marked and the parents it had no budget left to examine.
 */
async function markLayers(
  tx: Db,
  start: readonly string[],
  now: Date,
  budget: number,
): Promise<{ marked: { uuid: string; parentUuid: string | null; sizeBytes: number }[]; rest: string[] }> {
  let work = [...new Set(start)];
  const marked: { uuid: string; parentUuid: string | null; sizeBytes: number }[] = [];
  while (work.length > 0 && marked.length < budget) {
    const round = work.slice(0, budget - marked.length);
    const newly = await markRound(tx, round, now);
    marked.push(...newly);
    const parents = newly.map((m) => m.parentUuid).filter((p): p is string => p !== null);
    work = [...new Set([...work.slice(round.length), ...parents])];
  }
  return { marked, rest: work };
}

/** Deletes the bytes of deleting layers (unless still needed or in grace), then marks them deleted. */
async function finishLayers(
  tx: Db,
  uuids: readonly string[],
  now: Date,
  settings: GcSettings,
): Promise<{ count: number; tally: Partial<CollectionTally> }> {
  if (uuids.length === 0) return { count: 0, tally: {} };
  // Waits for, rather than skips, a lock on a deleting layer: only a publish that is about to be
  // refused takes one (it locks FOR SHARE, then finds the layer not available), and skipping
  // would leave the layer deleting until the next run.
  const rows = await lockDeletingLayers(tx, uuids);
  if (rows.length === 0) return { count: 0, tally: {} };
  const ids = rows.map((r) => r.uuid);
  const freed = await deleteUnneededBlobs(tx, now, settings, { digests: [...new Set(rows.map((r) => r.digest))] }, ids);
  const done = await moveLayers(tx, ids, { from: "deleting", to: "deleted" }, now);
  // Every locked row was deleting and this transaction holds its lock: all of them moved.
  const layerBytes = rows.reduce((sum, r) => sum + r.sizeBytes, 0);
  return { count: done, tally: { layersDeleted: done, layerBytes, ...freed } };
}

async function finishLeftovers(ctx: RunContext): Promise<void> {
  let cursor = "";
  for (;;) {
    const rows = await deletingLayersAfter(ctx.db, cursor, ctx.settings.batchSize);
    if (rows.length === 0) return;
    for (const group of splitByBudget(rows, (r) => r.sizeBytes, ctx.settings.batchSize, MAX_BATCH_BYTES)) {
      const ids = group.map((r) => r.uuid);
      await batch(ctx, "finish", (tx, now) => finishLayers(tx, ids, now, ctx.settings));
    }
    cursor = rows.at(-1)!.uuid;
  }
}

async function collectLayers(ctx: RunContext): Promise<void> {
  const size = ctx.settings.batchSize;
  const queue: string[] = [];
  const queued = new Set<string>();
  let cursor: string | null = "";
  for (;;) {
    const next = queue.splice(0, size);
    for (const uuid of next) queued.delete(uuid);
    if (next.length < size && cursor !== null) {
      const scanned = await leafLayerCandidates(ctx.db, cursor, size - next.length);
      cursor = scanned.length < size - next.length ? null : scanned.at(-1)!;
      for (const uuid of scanned) if (!next.includes(uuid)) next.push(uuid);
    }
    if (next.length === 0) {
      if (cursor === null && queue.length === 0) return;
      continue;
    }
    let marked: { uuid: string; parentUuid: string | null; sizeBytes: number }[] = [];
    let rest: string[] = [];
    await batch(ctx, "mark", async (tx, now) => {
      ({ marked, rest } = await markLayers(tx, next, now, size));
      return { count: marked.length, tally: { layersMarked: marked.length } };
    });
    // Parents left unexamined (no budget left) may now be leaves of the dead set: next batch.
    for (const uuid of rest) {
      if (!queued.has(uuid)) {
        queued.add(uuid);
        queue.push(uuid);
      }
    }
    if (marked.length === 0) continue;
    // Large bundles are freed a few at a time, so no transaction deletes gigabytes at once.
    for (const group of splitByBudget(marked, (m) => m.sizeBytes, size, MAX_BATCH_BYTES)) {
      const ids = group.map((m) => m.uuid);
      await batch(ctx, "bytes", (tx, now) => finishLayers(tx, ids, now, ctx.settings));
    }
  }
}

// --- Blobs ------------------------------------------------------------------------------------

async function collectBlobs(ctx: RunContext): Promise<void> {
  let cursor = "";
  for (;;) {
    const now = await dbNow(ctx.db);
    const cutoff = new Date(now.getTime() - ctx.settings.graceSeconds * 1000);
    // A cheap pre-filter; the batch re-checks everything after locking.
    const rows = await unreferencedStoredBlobs(ctx.db, {
      after: cursor,
      usedBefore: cutoff,
      limit: ctx.settings.batchSize,
    });
    if (rows.length === 0) return;
    for (const group of splitByBudget(rows, (r) => r.sizeBytes, ctx.settings.batchSize, MAX_BATCH_BYTES)) {
      const ids = group.map((r) => r.id);
      await batch(ctx, "blobs", async (tx, batchNow) => {
        const freed = await deleteUnneededBlobs(tx, batchNow, ctx.settings, { ids });
        return { count: freed.blobsDeleted, tally: freed };
      });
    }
    cursor = rows.at(-1)!.id;
  }
}

async function collectAbandonedUploads(ctx: RunContext): Promise<void> {
  for (;;) {
    const now = await dbNow(ctx.db);
    const cutoff = new Date(now.getTime() - ctx.settings.abandonedUploadSeconds * 1000);
    const ids = await abandonedUploads(ctx.db, cutoff, ctx.settings.batchSize);
    if (ids.length === 0) return;
    const out = await batch(ctx, "uploads", async (tx) => {
      const gone = await tx.blob.deleteMany({
        where: { id: { in: ids }, state: "uploading", storedAt: { lte: cutoff } },
      });
      return { count: gone.count, tally: { uploadsAbandoned: gone.count } };
    });
    if (out.count === 0) return;
  }
}

// --- The run ----------------------------------------------------------------------------------

async function runPhases(ctx: RunContext): Promise<void> {
  for (;;) {
    const out = await batch(ctx, "pins", async (tx, now) => {
      const closed = await releaseExpiredPins(tx, { limit: ctx.settings.batchSize, now });
      return { count: closed, tally: { pinsExpired: closed } };
    });
    if (out.count < ctx.settings.batchSize) break;
  }

  let cursor = "";
  for (;;) {
    const ids = await headReleaseCandidates(ctx.db, cursor, ctx.settings.batchSize);
    if (ids.length === 0) break;
    await batch(ctx, "heads", async (tx) => {
      const t = await releaseHeadsOf(tx, ids);
      return { count: t.headsReleased, tally: { ...t } };
    });
    cursor = ids.at(-1)!;
  }

  await finishLeftovers(ctx);
  await collectLayers(ctx);
  await collectBlobs(ctx);
  await collectAbandonedUploads(ctx);
}

function errorCodeOf(error: unknown): string {
  if (error instanceof LeaseLost) return "LEASE_LOST";
  if (error instanceof StrataError) return error.code;
  if ((error as { name?: string } | null)?.name === "AbortError") return "ABORTED";
  return "INTERNAL";
}

/**
 * Runs one collection if none is running and one is due (or `force`). Never throws for a
 * failure during the run: the run is recorded as failed with its error code and returned.
 */
export async function collectGarbage(db: Db, opts: CollectOptions = {}): Promise<CollectResult> {
  const settings = settingsOf(opts);
  const clock = performance.now();
  const outcome = opts.dryRun ? await dryRun(db, settings, opts) : await realRun(db, settings, opts);
  if (outcome.status === "skipped") {
    logger().debug({ host: opts.host ?? null, reason: outcome.reason, until: outcome.until }, "collection skipped");
    return outcome;
  }
  const result = outcome;
  const seconds = (performance.now() - clock) / 1000;
  const fields = {
    runId: result.runId,
    host: opts.host ?? null,
    dryRun: result.dryRun,
    status: result.status,
    ...(result.errorCode ? { errorCode: result.errorCode, error: scrubText(result.error ?? "") } : {}),
    ...result.tally,
    durationMs: Math.round(seconds * 10_000) / 10,
  };
  if (result.status === "failed") logger().error(fields, "collection run");
  else logger().info(fields, "collection run");
  // The collection metrics count what changed the catalog; a dry run is in the log line only.
  if (!result.dryRun) measure({ type: "run", run: "collection", outcome: result.errorCode ?? result.status, seconds });
  return result;
}

async function realRun(db: Db, settings: GcSettings, opts: CollectOptions): Promise<CollectResult> {
  const started = await startRun(db, settings, opts);
  if ("status" in started) return started;
  return runCollection(db, settings, started, opts);
}

/** How long a dry run's one transaction may take. */
const DRY_RUN_TIMEOUT_MS = 10 * 60 * 1000;

/** Carries a dry run's outcome out of its transaction, which it rolls back. */
class DryRunDone extends Error {
  constructor(readonly outcome: CollectResult) {
    super("dry run: rolled back");
    this.name = "DryRunDone";
  }
}

/**
 * The whole run in one transaction (the lease, the run row, every batch), rolled back at the
 * end; then the run is recorded as a dry run with the figures it reached.
 */
async function dryRun(db: Db, settings: GcSettings, opts: CollectOptions): Promise<CollectResult> {
  let outcome: CollectResult;
  try {
    await inTransaction(
      db,
      async (tx) => {
        const started = await startRun(tx, settings, { ...opts, force: true });
        if ("status" in started) throw new DryRunDone(started);
        throw new DryRunDone(await runCollection(tx, settings, started, { ...opts, hooks: undefined, dryRun: true }));
      },
      { timeout: DRY_RUN_TIMEOUT_MS, attempts: 1 },
    );
    throw new Error("unreachable: a dry run always rolls back");
  } catch (error) {
    if (!(error instanceof DryRunDone)) throw error;
    outcome = error.outcome;
  }
  if (outcome.status === "skipped") return outcome;
  const t = outcome.tally;
  const finishedAt = await dbNow(db);
  await db.collectionRun.create({
    data: {
      id: outcome.runId,
      host: opts.host ?? `${hostname()}:${process.pid}`,
      dryRun: true,
      status: outcome.status,
      startedAt: outcome.startedAt,
      finishedAt,
      errorCode: outcome.errorCode,
      pinsExpired: t.pinsExpired,
      snapshotsReleased: t.snapshotsReleased,
      headsReleased: t.headsReleased,
      layersDeleted: t.layersDeleted,
      layerBytes: BigInt(t.layerBytes),
      blobsDeleted: t.blobsDeleted,
      bytesFreed: BigInt(t.bytesFreed),
      uploadsAbandoned: t.uploadsAbandoned,
    },
  });
  return { ...outcome, finishedAt };
}

/** The phases of a started run, and its record closed; never throws for a failure during the run. */
async function runCollection(
  db: Db,
  settings: GcSettings,
  started: { runId: string; startedAt: Date },
  opts: CollectOptions,
): Promise<Extract<CollectResult, { runId: string }>> {
  const ctx: RunContext = {
    db,
    runId: started.runId,
    settings,
    tally: emptyTally(),
    hooks: opts.hooks,
    signal: opts.signal,
  };
  let errorCode: string | null = null;
  let message: string | null = null;
  try {
    await runPhases(ctx);
  } catch (error) {
    errorCode = errorCodeOf(error);
    message = error instanceof Error ? error.message : String(error);
  }
  let finishedAt = new Date();
  // A dry run's transaction is rolled back whole; a failed statement may have aborted it already.
  if (!opts.dryRun) {
    await inTransaction(db, async (tx) => {
      const now = await dbNow(tx);
      finishedAt = now;
      await tx.collectionRun.updateMany({
        where: { id: ctx.runId, status: "running" },
        data: { status: errorCode ? "failed" : "finished", finishedAt: now, errorCode },
      });
      await tx.lease.deleteMany({ where: { name: GC_LEASE, holder: ctx.runId } });
    }).catch(() => undefined); // A run left `running` is marked INTERRUPTED by the next one.
  }
  return {
    status: errorCode ? "failed" : "finished",
    runId: ctx.runId,
    dryRun: Boolean(opts.dryRun),
    startedAt: started.startedAt,
    finishedAt,
    errorCode,
    error: message,
    tally: ctx.tally,
  };
}

/** The most recent collection runs, dry and real, newest first; `before` pages on (startedAt, id). */
export async function listCollectionRuns(
  db: Db,
  opts: { limit?: number; before?: { startedAt: Date; id: string } } = {},
) {
  const runs = await db.collectionRun.findMany({
    where: opts.before
      ? {
          OR: [
            { startedAt: { lt: opts.before.startedAt } },
            { startedAt: opts.before.startedAt, id: { lt: opts.before.id } },
          ],
        }
      : {},
    orderBy: [{ startedAt: "desc" }, { id: "desc" }],
    take: opts.limit ?? 50,
  });
  return runs.map((r) => ({ ...r, bytesFreed: toNumber(r.bytesFreed), layerBytes: toNumber(r.layerBytes) }));
}

export interface CollectionSchedule {
  /** Stops scheduling, aborts a run in progress at its next batch, and waits for it. */
  stop(): Promise<void>;
}

/**
 * For long-running processes (the worker): tries a collection every `checkSeconds`; one runs
 * whenever the last finished one is `intervalSeconds` old, in at most one process at a time.
 * The timers never keep an otherwise idle process alive.
 */
export function scheduleCollection(
  db: Db,
  opts: Omit<CollectOptions, "force" | "signal"> & {
    checkSeconds?: number;
    onResult?: (result: CollectResult) => void;
    onError?: (error: unknown) => void;
  } = {},
): CollectionSchedule {
  const controller = new AbortController();
  const { checkSeconds = 60, onResult, onError, ...collect } = opts;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let current: Promise<void> = Promise.resolve();
  const arm = (seconds: number) => {
    if (controller.signal.aborted) return;
    timer = setTimeout(tick, seconds * 1000);
    timer.unref?.();
  };
  function tick() {
    current = collectGarbage(db, { ...collect, signal: controller.signal })
      .then(
        (result) => onResult?.(result),
        (error: unknown) => onError?.(error),
      )
      .finally(() => arm(checkSeconds));
  }
  arm(0);
  return {
    stop: async () => {
      controller.abort();
      if (timer) clearTimeout(timer);
      await current;
    },
  };
}
