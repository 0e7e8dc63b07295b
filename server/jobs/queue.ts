// The job queue: one adapter over the `jobs` table with a delivery per database.
//
//   SQLite     the table is the queue: a worker claims the oldest runnable row with a
//              conditional update (one machine; the database file serializes writers).
//   PostgreSQL pg-boss (schema `pgboss`, same database) delivers: it queues per host, hands a
//              job to one worker (SKIP LOCKED), retries and expires dead claims. The jobs row is
//              written in the same transaction as every pg-boss step and keeps what pg-boss has
//              no place for: the agent, the claim fence, progress, memo and outcome.
//
// Every operation of a claim holder is fenced on its attempt number, so a worker whose claim
// expired (killed, partitioned, too slow) can no longer complete, fail or report on the job.
import { randomUUID } from "node:crypto";
import { inTransaction, type Db } from "../db/client.ts";
import { dialectOf, type Dialect } from "../db/dialect.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import {
  CANCELLABLE_STATES,
  CLAIMABLE_STATES,
  DEFAULT_RETRY_POLICY,
  JOB_KINDS,
  JOB_STATES,
  retryDelayMs,
  type JobFailure,
  type JobKind,
  type JobState,
  type JobView,
  type RetryPolicy,
} from "../domain/jobs.ts";

const jobRowSelect = {
  id: true,
  kind: true,
  host: true,
  agentId: true,
  state: true,
  data: true,
  progress: true,
  memo: true,
  result: true,
  error: true,
  attempts: true,
  maxAttempts: true,
  backoffMs: true,
  backoffMaxMs: true,
  leaseSeconds: true,
  runAfter: true,
  claimedBy: true,
  leaseExpiresAt: true,
  createdAt: true,
  startedAt: true,
  finishedAt: true,
} satisfies Prisma.JobSelect;
type JobRow = Prisma.JobGetPayload<{ select: typeof jobRowSelect }>;

function toJobView(row: JobRow): JobView {
  const error = row.error as { code?: unknown; message?: unknown } | null;
  return {
    id: row.id,
    kind: parseKind(row.kind),
    host: row.host,
    agentId: row.agentId,
    state: parseState(row.state),
    data: row.data,
    progress: row.progress,
    result: row.result,
    error: error ? { code: String(error.code ?? "INTERNAL"), message: String(error.message ?? "") } : null,
    attempts: row.attempts,
    maxAttempts: row.maxAttempts,
    runAfter: row.runAfter,
    claimedBy: row.claimedBy,
    leaseExpiresAt: row.leaseExpiresAt,
    createdAt: row.createdAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
  };
}

function parseKind(kind: string): JobKind {
  if (!(JOB_KINDS as readonly string[]).includes(kind)) throw new Error(`unknown job kind ${kind}`);
  return kind as JobKind;
}

function parseState(state: string): JobState {
  if (!(JOB_STATES as readonly string[]).includes(state)) throw new Error(`unknown job state ${state}`);
  return state as JobState;
}

export interface NewJob {
  kind: JobKind;
  /** The host that must run it (capture, restore); null lets any worker run it (maintenance). */
  host: string | null;
  agentId: string | null;
  data: Prisma.InputJsonValue;
  /** At most one job ever carries a given key; enqueue returns null when it exists. */
  dedupeKey?: string;
  retry?: Partial<RetryPolicy>;
  /** Not before this time (database clock); default now. */
  runAfter?: Date;
  id?: string;
}

/** A job this worker holds; `attempt` is the fence of every update it makes. */
export interface ClaimedJob extends JobView {
  attempt: number;
  workerId: string;
  leaseSeconds: number;
  memo: unknown;
}

export type FailOutcome = "retry" | "failed" | "lost";

/** How jobs reach workers: the part that differs between the databases. */
export interface JobDelivery {
  /** Called in the enqueuing transaction once the row exists. */
  enqueued(tx: Db, row: JobRow): Promise<void>;
  /**
   * Claims the next job for `host` (its own, then host-less ones): runs `claim(tx, id)` inside
   * the transaction that takes the job, which fences the row. Null when nothing is runnable.
   */
  next(host: string, claim: (tx: Db, id: string) => Promise<JobRow | null>): Promise<JobRow | null>;
  renewed(tx: Db, row: JobRow): Promise<void>;
  completed(tx: Db, row: JobRow, result: Prisma.InputJsonValue): Promise<void>;
  failed(tx: Db, row: JobRow, outcome: "retry" | "failed", failure: JobFailure): Promise<void>;
  cancelled(tx: Db, row: JobRow): Promise<void>;
  /** Hands out again what the delivery itself considers expired (pg-boss's own clock). */
  expire(): Promise<void>;
  close(): Promise<void>;
}

function addMs(date: Date, ms: number): Date {
  return new Date(date.getTime() + ms);
}

export interface ListJobsFilter {
  agentId?: string;
  host?: string;
  kind?: JobKind;
  states?: JobState[];
  limit?: number;
  /** A job id: list those created before it (newest first). */
  before?: string;
}

export class JobQueue {
  constructor(
    readonly db: Db,
    private readonly delivery: JobDelivery,
    private readonly defaults: RetryPolicy = DEFAULT_RETRY_POLICY,
  ) {
    // Taken from the catalog client once: a caller's transaction handed to enqueue may be one
    // Prisma opened directly, which carries no dialect.
    this.dialect = dialectOf(db);
  }

  readonly dialect: Dialect;

  /**
   * Records a job inside `db`, which may be the caller's transaction: the job exists exactly
   * when the caller's catalog write commits. Null when `dedupeKey` is already taken.
   */
  async enqueue(db: Db, job: NewJob): Promise<JobView | null> {
    const policy = { ...this.defaults, ...job.retry };
    return inTransaction(db, async (tx) => {
      if (job.dedupeKey) {
        const existing = await tx.job.findUnique({ where: { dedupeKey: job.dedupeKey }, select: { id: true } });
        if (existing) return null;
      }
      const now = await this.dialect.transactionNow(tx);
      let row: JobRow;
      try {
        row = await tx.job.create({
          data: {
            id: job.id ?? randomUUID(),
            kind: job.kind,
            host: job.host,
            agentId: job.agentId,
            data: job.data,
            dedupeKey: job.dedupeKey ?? null,
            maxAttempts: policy.maxAttempts,
            backoffMs: policy.backoffMs,
            backoffMaxMs: Math.max(policy.backoffMaxMs, policy.backoffMs),
            leaseSeconds: policy.leaseSeconds,
            runAfter: job.runAfter ?? now,
            createdAt: now,
            updatedAt: now,
          },
          select: jobRowSelect,
        });
      } catch (error) {
        // Another enqueuer took the dedupe key first; the owner's rerun sees it and returns null.
        if (job.dedupeKey && isUniqueViolation(error)) throw new RetryTransaction("dedupe key taken concurrently");
        throw error;
      }
      await this.delivery.enqueued(tx, row);
      return toJobView(row);
    });
  }

  /** Claims the next runnable job for `host`: its own first, then host-less maintenance. */
  async fetch(opts: { host: string; workerId: string }): Promise<ClaimedJob | null> {
    const row = await this.delivery.next(opts.host, async (tx, id) => {
      const now = await this.dialect.transactionNow(tx);
      const seen = await tx.job.findUnique({ where: { id }, select: jobRowSelect });
      // A delivered job whose row is missing or already final (cancelled meanwhile) is skipped.
      if (!seen || !(["created", "retry", "active"] as string[]).includes(seen.state)) return null;
      if (seen.attempts >= seen.maxAttempts) return null;
      const claimed = await tx.job.updateMany({
        where: { id, state: seen.state, attempts: seen.attempts },
        data: {
          state: "active",
          attempts: seen.attempts + 1,
          claimedBy: opts.workerId,
          leaseExpiresAt: addMs(now, seen.leaseSeconds * 1000),
          startedAt: now,
          updatedAt: now,
        },
      });
      if (claimed.count !== 1) throw new RetryTransaction("job claimed concurrently");
      return tx.job.findUniqueOrThrow({ where: { id }, select: jobRowSelect });
    });
    if (!row) return null;
    return {
      ...toJobView(row),
      attempt: row.attempts,
      workerId: opts.workerId,
      leaseSeconds: row.leaseSeconds,
      memo: row.memo,
    };
  }

  private fence(job: ClaimedJob): Prisma.JobWhereInput {
    return { id: job.id, state: "active", attempts: job.attempt, claimedBy: job.workerId };
  }

  /**
   * Renews the claim (and records progress, when given). False when the claim is gone: the job
   * was cancelled, or it expired and was handed to another worker. The holder must stop then.
   */
  async heartbeat(job: ClaimedJob, progress?: Prisma.InputJsonValue): Promise<boolean> {
    return inTransaction(this.db, async (tx) => {
      const now = await this.dialect.transactionNow(tx);
      const renewed = await tx.job.updateMany({
        where: this.fence(job),
        data: {
          leaseExpiresAt: addMs(now, job.leaseSeconds * 1000),
          updatedAt: now,
          ...(progress !== undefined ? { progress } : {}),
        },
      });
      if (renewed.count !== 1) return false;
      const row = await tx.job.findUniqueOrThrow({ where: { id: job.id }, select: jobRowSelect });
      await this.delivery.renewed(tx, row);
      return true;
    });
  }

  /** Records what the next attempt must know (e.g. the head a capture is fenced on). */
  async remember(job: ClaimedJob, memo: Prisma.InputJsonValue): Promise<boolean> {
    const updated = await this.db.job.updateMany({ where: this.fence(job), data: { memo } });
    if (updated.count === 1) job.memo = memo;
    return updated.count === 1;
  }

  /**
   * Completes a held job. `db` may be the transaction that wrote the job's effect, so the effect
   * and the completion commit together. False when the claim was lost (nothing is changed).
   */
  async complete(job: ClaimedJob, result: Prisma.InputJsonValue, db: Db = this.db): Promise<boolean> {
    return inTransaction(db, async (tx) => {
      const now = await this.dialect.transactionNow(tx);
      const done = await tx.job.updateMany({
        where: this.fence(job),
        data: { state: "completed", result, leaseExpiresAt: null, finishedAt: now, updatedAt: now },
      });
      if (done.count !== 1) return false;
      const row = await tx.job.findUniqueOrThrow({ where: { id: job.id }, select: jobRowSelect });
      await this.delivery.completed(tx, row, result);
      return true;
    });
  }

  /**
   * Fails an attempt: back to `retry` after a capped exponential backoff while attempts remain
   * and the failure is retryable, else `failed`. `lost` when the claim was no longer held.
   */
  async fail(job: ClaimedJob, failure: JobFailure): Promise<FailOutcome> {
    return inTransaction(this.db, async (tx) => {
      const now = await this.dialect.transactionNow(tx);
      const row = await tx.job.findFirst({ where: this.fence(job), select: jobRowSelect });
      if (!row) return "lost";
      const outcome = failure.retryable && row.attempts < row.maxAttempts ? "retry" : "failed";
      const error = { code: failure.code, message: failure.message.slice(0, 2000) };
      const moved = await tx.job.updateMany({
        where: this.fence(job),
        data:
          outcome === "retry"
            ? {
                state: "retry",
                error,
                leaseExpiresAt: null,
                runAfter: addMs(now, retryDelayMs(row, row.attempts)),
                updatedAt: now,
              }
            : { state: "failed", error, leaseExpiresAt: null, finishedAt: now, updatedAt: now },
      });
      if (moved.count !== 1) throw new RetryTransaction("job changed while failing it");
      const after = await tx.job.findUniqueOrThrow({ where: { id: job.id }, select: jobRowSelect });
      await this.delivery.failed(tx, after, outcome, failure);
      return outcome;
    });
  }

  /**
   * Cancels a job that has not finished, inside `db` (may be a transaction). A worker holding it
   * notices at its next heartbeat and aborts. Returns the job as it now stands (null: no such job).
   */
  async cancel(db: Db, id: string, scope: { agentId?: string } = {}): Promise<JobView | null> {
    return inTransaction(db, async (tx) => {
      const where = { id, ...(scope.agentId ? { agentId: scope.agentId } : {}) };
      const row = await tx.job.findFirst({ where, select: jobRowSelect });
      if (!row) return null;
      if (!(CANCELLABLE_STATES as readonly string[]).includes(row.state)) return toJobView(row);
      const now = await this.dialect.transactionNow(tx);
      const moved = await tx.job.updateMany({
        where: { id, state: row.state, attempts: row.attempts },
        data: { state: "cancelled", leaseExpiresAt: null, finishedAt: now, updatedAt: now },
      });
      if (moved.count !== 1) throw new RetryTransaction("job changed while cancelling it");
      const after = await tx.job.findUniqueOrThrow({ where: { id }, select: jobRowSelect });
      await this.delivery.cancelled(tx, after);
      return toJobView(after);
    });
  }

  /**
   * Claims whose lease passed go back to `retry` (or `failed` when no attempt is left): their
   * holder is presumed dead. Returns how many moved.
   */
  async expire(): Promise<number> {
    await this.delivery.expire();
    return inTransaction(this.db, async (tx) => {
      const now = await this.dialect.transactionNow(tx);
      const expired = { state: "active", leaseExpiresAt: { lt: now } } satisfies Prisma.JobWhereInput;
      const error = { code: "LEASE_EXPIRED", message: "The worker holding the job stopped renewing its claim." };
      const exhausted = await tx.job.findMany({
        where: expired,
        select: { id: true, attempts: true, maxAttempts: true },
      });
      let moved = 0;
      for (const row of exhausted) {
        const last = row.attempts >= row.maxAttempts;
        const done = await tx.job.updateMany({
          where: { id: row.id, state: "active", attempts: row.attempts, leaseExpiresAt: { lt: now } },
          data: last
            ? { state: "failed", error, leaseExpiresAt: null, finishedAt: now, updatedAt: now }
            : { state: "retry", error, leaseExpiresAt: null, runAfter: now, updatedAt: now },
        });
        moved += done.count;
      }
      return moved;
    });
  }

  async get(db: Db, id: string, scope: { agentId?: string } = {}): Promise<JobView | null> {
    const row = await db.job.findFirst({
      where: { id, ...(scope.agentId ? { agentId: scope.agentId } : {}) },
      select: jobRowSelect,
    });
    return row ? toJobView(row) : null;
  }

  async list(db: Db, filter: ListJobsFilter = {}): Promise<JobView[]> {
    const before = filter.before
      ? await db.job.findUnique({ where: { id: filter.before }, select: { createdAt: true, id: true } })
      : null;
    const rows = await db.job.findMany({
      where: {
        ...(filter.agentId ? { agentId: filter.agentId } : {}),
        ...(filter.host ? { host: filter.host } : {}),
        ...(filter.kind ? { kind: filter.kind } : {}),
        ...(filter.states ? { state: { in: filter.states } } : {}),
        ...(before
          ? { OR: [{ createdAt: { lt: before.createdAt } }, { createdAt: before.createdAt, id: { lt: before.id } }] }
          : {}),
      },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: Math.min(Math.max(filter.limit ?? 50, 1), 500),
      select: jobRowSelect,
    });
    return rows.map(toJobView);
  }

  async close(): Promise<void> {
    await this.delivery.close();
  }
}

// --- SQLite: the table is the queue -----------------------------------------------------------------

/** Delivery straight from the jobs table: the oldest runnable row for the host, then host-less. */
export function tableDelivery(db: Db): JobDelivery {
  const dialect = dialectOf(db);
  return {
    enqueued: async () => undefined,
    async next(host, claim) {
      for (const target of [host, null]) {
        const row = await inTransaction(db, async (tx) => {
          const now = await dialect.transactionNow(tx);
          const candidate = await tx.job.findFirst({
            where: { state: { in: [...CLAIMABLE_STATES] }, host: target, runAfter: { lte: now } },
            orderBy: [{ runAfter: "asc" }, { createdAt: "asc" }, { id: "asc" }],
            select: { id: true },
          });
          return candidate ? claim(tx, candidate.id) : null;
        });
        if (row) return row;
      }
      return null;
    },
    renewed: async () => undefined,
    completed: async () => undefined,
    failed: async () => undefined,
    cancelled: async () => undefined,
    expire: async () => undefined,
    close: async () => undefined,
  };
}
