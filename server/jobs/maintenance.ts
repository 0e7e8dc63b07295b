// Maintenance jobs: the lineage sweeper and garbage collection, on a schedule. Every worker
// offers to schedule them; the job's dedupe key names the interval slot, so at most one job per
// slot exists however many workers offer (the unique index decides). Collection also keeps its
// own lease and interval on the database clock, so even a forced extra run never overlaps one.
import type { Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { FINAL_STATES } from "../domain/jobs.ts";
import { collectGarbage, SCHEDULED_INTERVAL_SHARE } from "../gc/collect-garbage.ts";
import { sweepSnapshots } from "../lineage/sweeper.ts";
import { sweepDependencyCaches } from "../caches/sweep-dependency-caches.ts";
import { DEFAULT_SWEEP_SETTINGS } from "../domain/retention.ts";
import type { JobQueue } from "./queue.ts";

export interface MaintenanceSchedule {
  /** Seconds between sweeps; 0 turns the sweeper off. */
  sweepIntervalSeconds: number;
  /** Seconds between collections; 0 turns collection off. */
  gcIntervalSeconds: number;
}

/** The dedupe key of the interval slot `now` falls in. */
function slotKey(kind: "sweep" | "gc", now: Date, intervalSeconds: number): string {
  return `${kind}@${Math.floor(now.getTime() / (intervalSeconds * 1000))}/${intervalSeconds}`;
}

/** Enqueues the sweep and collection of the current slot unless some worker already did. */
export async function scheduleMaintenance(
  queue: JobQueue,
  schedule: MaintenanceSchedule,
): Promise<{ sweep: string | null; gc: string | null }> {
  const now = await queue.dialect.transactionNow(queue.db);
  const offer = async (kind: "sweep" | "gc", interval: number) => {
    if (interval <= 0) return null;
    const job = await queue.enqueue(queue.db, {
      kind,
      host: null,
      agentId: null,
      data: { intervalSeconds: interval },
      dedupeKey: slotKey(kind, now, interval),
      // Maintenance is cheap to repeat and the next slot runs it anyway.
      retry: { maxAttempts: 3 },
    });
    return job?.id ?? null;
  };
  return {
    sweep: await offer("sweep", schedule.sweepIntervalSeconds),
    gc: await offer("gc", schedule.gcIntervalSeconds),
  };
}

function asJson(value: unknown): Prisma.InputJsonValue {
  return JSON.parse(JSON.stringify(value)) as Prisma.InputJsonValue;
}

/** How long a finished job (completed, cancelled or failed) stays readable before the sweep deletes it. */
export const FINISHED_JOB_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** Deletes jobs that finished before `now - retentionMs`, a batch at a time; returns how many. */
export async function pruneFinishedJobs(
  db: Db,
  opts: { now: Date; retentionMs?: number; batchSize?: number },
): Promise<number> {
  const cutoff = new Date(opts.now.getTime() - (opts.retentionMs ?? FINISHED_JOB_RETENTION_MS));
  const batchSize = opts.batchSize ?? 500;
  const finished = { state: { in: [...FINAL_STATES] }, finishedAt: { lt: cutoff } };
  let deleted = 0;
  for (;;) {
    const batch = await db.job.findMany({ where: finished, select: { id: true }, take: batchSize });
    if (batch.length === 0) return deleted;
    // The state condition again: a row is only ever deleted in a final state.
    const { count } = await db.job.deleteMany({ where: { ...finished, id: { in: batch.map((j) => j.id) } } });
    deleted += count;
    if (batch.length < batchSize) return deleted;
  }
}

export async function runSweepJob(db: Db): Promise<Prisma.InputJsonValue> {
  const now = await dialectOf(db).transactionNow(db);
  const result = await sweepSnapshots(db, { now });
  const caches = await sweepDependencyCaches(db, { now, retentionMs: DEFAULT_SWEEP_SETTINGS.retentionMs });
  const prunedJobs = await pruneFinishedJobs(db, { now });
  return asJson({
    staleCheckpoints: result.staleCheckpointIds.length,
    staleLineages: result.staleLineageIds.length,
    movedToDeleting: result.movedToDeleting,
    keptForPins: result.keptForPins,
    reclaimed: { deleted: result.reclaimed.deleted, failed: result.reclaimed.failed, shared: result.reclaimed.shared },
    dependencyCaches: caches,
    prunedJobs,
  });
}

export async function runGcJob(
  db: Db,
  opts: { host: string; signal: AbortSignal; intervalSeconds?: number },
): Promise<Prisma.InputJsonValue> {
  const result = await collectGarbage(db, {
    // The run log tells scheduled runs from the ones people asked for.
    host: `worker:${opts.host}`,
    signal: opts.signal,
    // The slot already spaced the runs; the margin keeps a run late in its slot from skipping the next.
    ...(opts.intervalSeconds !== undefined
      ? { intervalSeconds: Math.floor(opts.intervalSeconds * SCHEDULED_INTERVAL_SHARE) }
      : {}),
  });
  // A failed run is recorded in collection_runs and resumed by the next one; the job is done.
  return asJson(result);
}
