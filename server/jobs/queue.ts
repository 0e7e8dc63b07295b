// The job queue: the `jobs` table is the queue on both databases. A worker claims the oldest
// runnable row of its host (then a host-less one) in one `UPDATE … RETURNING` over a select
// that takes the row `FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite serializes writes
// (server/db/statements/jobs.ts). A job is enqueued in the caller's
// transaction, so it exists exactly when the catalog write that asked for it commits.
// docs/workers.md says why this replaced pg-boss.
//
// Every operation of a claim holder is fenced on its attempt number and its name, so a worker
// whose claim expired (killed, partitioned, too slow) or was reclaimed can no longer complete,
// fail or report on the job.
//
// Leases, backoffs and every stamp are on the database clock, which every process sharing the
// catalog agrees on; a test injects a clock (JobClock) to move time forward without sleeping.
//
// A job that ends without doing its work (failed for good, cancelled, its last claim expired or
// reclaimed) runs its kind's finalizer in the same transaction (job-finalizers.ts).
//
// A job's error, and the cause of each attempt that ended without completing (attempt_errors, its
// history), are StrataError shapes with messages for people (job-errors.ts); a completed job has
// no error.
import { randomUUID } from "node:crypto";
import { inTransaction, type Db } from "../db/client.ts";
import { dialectOf, type Dialect } from "../db/dialect.ts";
import { claimNextJob, type RawJobRow } from "../db/statements/jobs.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { Prisma } from "../db/generated/postgres/client.ts";
import type { ErrorCode } from "../domain/errors.ts";
import {
  CANCELLABLE_STATES,
  CLAIMABLE_STATES,
  DEFAULT_RETRY_POLICY,
  JOB_KINDS,
  JOB_STATES,
  retryDelayMs,
  type JobError,
  type JobFailure,
  type JobKind,
  type JobState,
  type JobView,
  type RetryPolicy,
} from "../domain/jobs.ts";
import { JOB_FINALIZERS, type JobEndCause, type JobFinalizers } from "./job-finalizers.ts";
import { jobErrorOf, readAttemptErrors, readJobError, storedJobError, withAttemptError } from "./job-errors.ts";
import { formatWorkerId, holderIsGone, parseWorkerId, workerIdPrefix, type WorkerIdentity } from "./worker-identity.ts";

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
  attemptErrors: true,
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

/**
 * A job row a raw statement returned (columns aliased to the model's names) in Prisma's shape:
 * SQLite may return integers as bigint, JSON as text and dates as text.
 */
function jobRowOf(raw: RawJobRow): JobRow {
  const int = (key: string) => Number(raw[key]);
  const text = (key: string) => (raw[key] === null || raw[key] === undefined ? null : String(raw[key]));
  const date = (key: string) => {
    const value = raw[key];
    return value === null || value === undefined ? null : new Date(value as string | number | Date);
  };
  const json = (key: string): Prisma.JsonValue => {
    const value = raw[key];
    if (typeof value !== "string") return (value ?? null) as Prisma.JsonValue;
    try {
      return JSON.parse(value) as Prisma.JsonValue;
    } catch {
      return value;
    }
  };
  return {
    id: String(raw.id),
    kind: String(raw.kind),
    host: text("host"),
    agentId: text("agentId"),
    state: String(raw.state),
    data: json("data"),
    progress: json("progress"),
    memo: json("memo"),
    result: json("result"),
    error: json("error"),
    attemptErrors: json("attemptErrors"),
    attempts: int("attempts"),
    maxAttempts: int("maxAttempts"),
    backoffMs: int("backoffMs"),
    backoffMaxMs: int("backoffMaxMs"),
    leaseSeconds: int("leaseSeconds"),
    runAfter: date("runAfter")!,
    claimedBy: text("claimedBy"),
    leaseExpiresAt: date("leaseExpiresAt"),
    createdAt: date("createdAt")!,
    startedAt: date("startedAt"),
    finishedAt: date("finishedAt"),
  };
}

/** The time a queue reads; the database's clock unless a test injects one. */
export interface JobClock {
  now(): Date;
}

function toJobView(row: JobRow): JobView {
  return {
    id: row.id,
    kind: parseKind(row.kind),
    host: row.host,
    agentId: row.agentId,
    state: parseState(row.state),
    data: row.data,
    progress: row.progress,
    result: row.result,
    // A completed job has no error, whatever an earlier attempt (or a row of an earlier release) left.
    error: row.state === "completed" ? null : readJobError(row.error),
    attemptErrors: readAttemptErrors(row.attemptErrors),
    attempts: row.attempts,
    maxAttempts: row.maxAttempts,
    runAfter: row.runAfter,
    claimedBy: row.claimedBy,
    leaseExpiresAt: row.leaseExpiresAt,
    createdAt: row.createdAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    // Whether a live worker serves the host is not the queue's to know: agent-jobs.ts fills it.
    waitingForHost: null,
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

/** A job handed back because the process holding it no longer runs (JobQueue.reclaim). */
export interface ReclaimedJob {
  id: string;
  kind: JobKind;
  attempt: number;
  /** The dead holder's claim. */
  claimedBy: string;
  outcome: "retry" | "failed";
}

/** The cause recorded for an attempt whose holder stopped renewing its claim. */
const LEASE_EXPIRED: ErrorCode = "LEASE_EXPIRED";

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
  /**
   * The queue of a catalog client; `retry` overrides the default policy of the jobs it enqueues,
   * `finalizers` what a job kind settles when its job ends without doing its work, `clock` the
   * time it reads instead of the database's (tests).
   */
  constructor(
    readonly db: Db,
    retry: Partial<RetryPolicy> = {},
    private readonly finalizers: JobFinalizers = JOB_FINALIZERS,
    private readonly clock: JobClock | null = null,
  ) {
    // Taken from the catalog client once: a caller's transaction handed to enqueue may be one
    // Prisma opened directly, which carries no dialect.
    this.dialect = dialectOf(db);
    this.defaults = { ...DEFAULT_RETRY_POLICY, ...retry };
  }

  private readonly defaults: RetryPolicy;

  readonly dialect: Dialect;

  /** The queue's time inside `tx`: the injected clock's, else the database's. */
  private async now(tx: Db): Promise<Date> {
    return this.clock ? this.clock.now() : this.dialect.transactionNow(tx);
  }

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
      const now = await this.now(tx);
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
      return toJobView(row);
    });
  }

  /** Claims the next runnable job for `host`: its own first, then host-less maintenance. */
  async fetch(opts: { host: string; workerId: string }): Promise<ClaimedJob | null> {
    const raw = await claimNextJob(this.db, { ...opts, now: this.clock?.now() ?? null });
    if (!raw) return null;
    const row = jobRowOf(raw);
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
      const now = await this.now(tx);
      const renewed = await tx.job.updateMany({
        where: this.fence(job),
        data: {
          leaseExpiresAt: addMs(now, job.leaseSeconds * 1000),
          updatedAt: now,
          ...(progress !== undefined ? { progress } : {}),
        },
      });
      return renewed.count === 1;
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
      const now = await this.now(tx);
      const done = await tx.job.updateMany({
        where: this.fence(job),
        // The causes of earlier attempts stay in attempt_errors; the job itself has no error.
        data: {
          state: "completed",
          result,
          error: Prisma.DbNull,
          leaseExpiresAt: null,
          finishedAt: now,
          updatedAt: now,
        },
      });
      if (done.count === 1) return true;
      // A repeat after a lost answer (the connection dropped after the commit) finds its own completion.
      const own = await tx.job.count({ where: { ...this.ended(job), state: "completed" } });
      return own === 1;
    });
  }

  /** The job as this holder's attempt left it (whatever state it is in now). */
  private ended(job: ClaimedJob): Prisma.JobWhereInput {
    return { id: job.id, attempts: job.attempt, claimedBy: job.workerId };
  }

  /** Runs the job kind's finalizer inside `tx`, the transaction that ends the job. */
  private async finalize(tx: Db, row: JobRow, cause: JobEndCause): Promise<void> {
    const finalizer = this.finalizers[parseKind(row.kind)];
    if (finalizer) {
      await finalizer(
        tx,
        { id: row.id, kind: parseKind(row.kind), agentId: row.agentId, data: row.data, memo: row.memo },
        cause,
      );
    }
  }

  /**
   * Fails an attempt: back to `retry` after a capped exponential backoff while attempts remain
   * and the failure is retryable, else `failed` (and the kind's finalizer runs). `lost` when the
   * claim was no longer held.
   *
   * Two late reports still land: a repeat of a fail whose answer was lost finds its own failure,
   * and a holder whose lease expired while it could not reach the database (an outage) replaces
   * the LEASE_EXPIRED that expiry recorded for its attempt with its real cause — as long as no
   * later attempt has started.
   */
  async fail(job: ClaimedJob, failure: JobFailure): Promise<FailOutcome> {
    return inTransaction(this.db, async (tx) => {
      const now = await this.now(tx);
      const row = await tx.job.findFirst({ where: this.fence(job), select: jobRowSelect });
      if (!row) return this.lateFailure(tx, job, failure, now);
      const outcome = failure.retryable && row.attempts < row.maxAttempts ? "retry" : "failed";
      const ended = jobErrorOf(failure);
      const error = storedJobError(ended);
      const attemptErrors = withAttemptError(row.attemptErrors, row.attempts, now, ended);
      const moved = await tx.job.updateMany({
        where: this.fence(job),
        data:
          outcome === "retry"
            ? {
                state: "retry",
                error,
                attemptErrors,
                leaseExpiresAt: null,
                runAfter: addMs(now, retryDelayMs(row, row.attempts)),
                updatedAt: now,
              }
            : { state: "failed", error, attemptErrors, leaseExpiresAt: null, finishedAt: now, updatedAt: now },
      });
      if (moved.count !== 1) throw new RetryTransaction("job changed while failing it");
      if (outcome === "failed") await this.finalize(tx, row, ended);
      return outcome;
    });
  }

  /** fail() of an attempt whose claim is gone: see there. */
  private async lateFailure(tx: Db, job: ClaimedJob, failure: JobFailure, now: Date): Promise<FailOutcome> {
    const row = await tx.job.findFirst({
      where: { ...this.ended(job), state: { in: ["retry", "failed"] } },
      select: jobRowSelect,
    });
    const recorded = row?.error as { code?: unknown } | null | undefined;
    if (!row || !recorded) return "lost";
    const outcome = row.state === "retry" ? "retry" : "failed";
    if (recorded.code === failure.code) return outcome;
    if (recorded.code !== LEASE_EXPIRED) return "lost";
    const safe = jobErrorOf(failure);
    const ended = {
      ...safe,
      message: `${safe.message} (the claim's lease passed before the worker could record this)`.slice(0, 2000),
    };
    const amended = await tx.job.updateMany({
      where: { ...this.ended(job), state: row.state },
      data: {
        error: storedJobError(ended),
        attemptErrors: withAttemptError(row.attemptErrors, job.attempt, now, ended),
        updatedAt: now,
      },
    });
    return amended.count === 1 ? outcome : "lost";
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
      const now = await this.now(tx);
      const moved = await tx.job.updateMany({
        where: { id, state: row.state, attempts: row.attempts },
        data: { state: "cancelled", leaseExpiresAt: null, finishedAt: now, updatedAt: now },
      });
      if (moved.count !== 1) throw new RetryTransaction("job changed while cancelling it");
      await this.finalize(tx, row, { code: "CANCELLED", message: "The job was cancelled." });
      return toJobView(await tx.job.findUniqueOrThrow({ where: { id }, select: jobRowSelect }));
    });
  }

  /**
   * Claims whose lease passed go back to `retry` (or `failed` when no attempt is left, and the
   * kind's finalizer runs): their holder is presumed dead. The cause an earlier attempt recorded
   * is kept in the message. Returns how many moved.
   */
  async expire(): Promise<number> {
    return inTransaction(this.db, async (tx) => {
      const now = await this.now(tx);
      const expired = await tx.job.findMany({
        where: { state: "active", leaseExpiresAt: { lt: now } },
        select: jobRowSelect,
      });
      let moved = 0;
      for (const row of expired) {
        const error: JobError = {
          code: LEASE_EXPIRED,
          message: expiryMessage(row.error),
          hint: null,
          retryable: true,
        };
        const done = await this.endAttempt(tx, row, error, now, { leaseExpiresAt: { lt: now } });
        if (done) moved += 1;
      }
      return moved;
    });
  }

  /**
   * Fails for good a job no worker has claimed since the caller saw it (still `created` or
   * `retry`, with the attempts it saw), with `error` as recorded, and runs the kind's finalizer in
   * the same transaction: the end of a job nobody will run (NO_WORKER, worker-hosts.ts). False
   * when the job moved since (claimed, cancelled, already failed).
   */
  async failUnclaimed(
    seen: { id: string; state: JobState; attempts: number },
    error: JobEndCause & { hint: string | null; retryable: boolean },
  ): Promise<boolean> {
    if (!(CLAIMABLE_STATES as readonly string[]).includes(seen.state)) return false;
    return inTransaction(this.db, async (tx) => {
      const where = { id: seen.id, state: seen.state, attempts: seen.attempts };
      const row = await tx.job.findFirst({ where, select: jobRowSelect });
      if (!row) return false;
      const now = await this.now(tx);
      const recorded = {
        code: error.code,
        message: error.message.slice(0, 2000),
        hint: error.hint,
        retryable: error.retryable,
      };
      const moved = await tx.job.updateMany({
        where,
        data: { state: "failed", error: recorded, leaseExpiresAt: null, finishedAt: now, updatedAt: now },
      });
      // A worker claimed it (or someone cancelled it) in between: theirs is the job's next move.
      if (moved.count !== 1) return false;
      await this.finalize(tx, row, recorded);
      return true;
    });
  }

  /**
   * Hands back at once the active jobs whose claim names a process of `self`'s host that no
   * longer runs (worker-identity.ts: another boot, or the pid gone or reused), instead of waiting
   * for their lease. A live holder's claims — a sibling worker of the host, or a process whose
   * state cannot be told — are left alone: the lease bounds those. The attempt counts, as an
   * expired one does (a job that kills its worker every time must still end), but the job may
   * run again at once. Returns what was handed back.
   */
  async reclaim(self: WorkerIdentity): Promise<ReclaimedJob[]> {
    const mine = formatWorkerId(self);
    const held = await this.db.job.findMany({
      where: { state: "active", claimedBy: { startsWith: workerIdPrefix(self.host) } },
      select: { id: true, attempts: true, claimedBy: true },
    });
    const dead: { id: string; attempts: number; claimedBy: string }[] = [];
    for (const row of held) {
      if (!row.claimedBy || row.claimedBy === mine) continue;
      const holder = parseWorkerId(row.claimedBy);
      if (holder && (await holderIsGone(holder, self))) dead.push({ ...row, claimedBy: row.claimedBy });
    }
    if (dead.length === 0) return [];
    return inTransaction(this.db, async (tx) => {
      const now = await this.now(tx);
      const reclaimed: ReclaimedJob[] = [];
      for (const seen of dead) {
        const row = await tx.job.findFirst({
          where: { id: seen.id, state: "active", attempts: seen.attempts, claimedBy: seen.claimedBy },
          select: jobRowSelect,
        });
        if (!row) continue;
        const holder = parseWorkerId(seen.claimedBy);
        const error: JobError = {
          code: "WORKER_DIED",
          message: `The worker process holding the job (pid ${holder?.pid ?? "?"} on ${self.host}) no longer runs; the job was handed back without waiting for its lease.`,
          hint: null,
          retryable: true,
        };
        const outcome = await this.endAttempt(tx, row, error, now, { claimedBy: seen.claimedBy });
        if (outcome)
          reclaimed.push({
            id: row.id,
            kind: parseKind(row.kind),
            attempt: row.attempts,
            claimedBy: seen.claimedBy,
            outcome,
          });
      }
      return reclaimed;
    });
  }

  /**
   * Ends an active attempt whose holder is gone: back to `retry` at once while attempts remain,
   * else `failed` with the kind's finalizer. Conditional on the attempt (and `also`); null when
   * the job had moved.
   */
  private async endAttempt(
    tx: Db,
    row: JobRow,
    error: JobError,
    now: Date,
    also: Prisma.JobWhereInput,
  ): Promise<"retry" | "failed" | null> {
    const last = row.attempts >= row.maxAttempts;
    const recorded = storedJobError(error);
    const attemptErrors = withAttemptError(row.attemptErrors, row.attempts, now, error);
    const done = await tx.job.updateMany({
      where: { ...also, id: row.id, state: "active", attempts: row.attempts },
      data: last
        ? { state: "failed", error: recorded, attemptErrors, leaseExpiresAt: null, finishedAt: now, updatedAt: now }
        : // Runnable at once, in its place in the queue (its runAfter passed already): the
          // holder died, not the job, so the job is not sent behind what was queued since.
          { state: "retry", error: recorded, attemptErrors, leaseExpiresAt: null, updatedAt: now },
    });
    if (done.count !== 1) return null;
    if (last) await this.finalize(tx, row, error);
    return last ? "failed" : "retry";
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
}

/**
 * What LEASE_EXPIRED says: the holder stopped renewing its claim, and the cause an earlier
 * attempt recorded, so that expiry never hides it.
 */
function expiryMessage(previous: Prisma.JsonValue): string {
  const base = "The worker holding the job stopped renewing its claim.";
  // Read as clients read it: a row of an earlier release may hold internal text.
  const e = readJobError(previous);
  if (!e) return base;
  if (e.code === LEASE_EXPIRED) return e.message;
  return `${base} The attempt before ended with ${e.code}: ${e.message}`.slice(0, 2000);
}
