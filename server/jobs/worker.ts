// The worker loop. It is handed its fetch and handle functions (a port, so tests drive it
// without a database): it claims a job, runs the handler with an AbortSignal, renews the claim while the handler runs,
// and settles the job. A claim that cannot be renewed (cancelled, or expired and handed to
// another worker) aborts the handler at once; its outcome is then discarded, never recorded.
//
// A database outage does not lose the job's cause: a renewal that cannot reach the catalog is
// only noted (the handler goes on; the lease is the bound), and a completion or failure that
// cannot reach it is retried until the database answers — then recorded if this worker still
// holds the claim, with UNAVAILABLE as the cause when the handler failed for want of the
// database (queue.fail also lets it replace a LEASE_EXPIRED that expiry wrote meanwhile).
//
// What a failed attempt records is a StrataError's shape only (job-errors.ts): a handler's error
// that is not a StrataError is recorded as INTERNAL with a generic sentence (or UNAVAILABLE when it
// is an outage), and its own words go only to the worker's events, for the operator's log.
import type { Prisma } from "../db/generated/postgres/client.ts";
import { isStrataError } from "../domain/errors.ts";
import type { JobFailure, JobKind } from "../domain/jobs.ts";
import { CATALOG_OUTAGE, isCatalogUnreachable } from "./catalog-outage.ts";
import { INTERNAL_JOB_MESSAGE } from "./job-errors.ts";
import type { ClaimedJob, FailOutcome } from "./queue.ts";

export interface WorkerPort {
  fetch(): Promise<ClaimedJob | null>;
  heartbeat(job: ClaimedJob, progress?: Prisma.InputJsonValue): Promise<boolean>;
  remember(job: ClaimedJob, memo: Prisma.InputJsonValue): Promise<boolean>;
  complete(job: ClaimedJob, result: Prisma.InputJsonValue): Promise<boolean>;
  fail(job: ClaimedJob, failure: JobFailure): Promise<FailOutcome>;
}

export interface JobContext {
  /** Aborted when the claim is lost (cancelled, expired) or the worker stops. */
  signal: AbortSignal;
  /** Records progress (visible through job.get) and renews the claim; throws once the claim is lost. */
  progress(progress: Prisma.InputJsonValue): Promise<void>;
  /** Keeps something for a later attempt of the same job (job.memo). */
  remember(memo: Prisma.InputJsonValue): Promise<void>;
}

export type JobHandler = (job: ClaimedJob, ctx: JobContext) => Promise<Prisma.InputJsonValue>;

/**
 * One job attempt as an operator's log line needs it, flat and free of job data (which may hold
 * paths but never secrets; results and memos are left out all the same).
 */
interface JobAttemptFacts {
  jobId: string;
  kind: JobKind;
  /** The host of the worker running the attempt (maintenance jobs are addressed to none). */
  host: string | null;
  workerId: string;
  attempt: number;
  maxAttempts: number;
  /**
   * claimed: the attempt started; running: something happened while it runs (an `error` event);
   * completed; retry or failed: where the failure sent the job; lost: the claim was gone
   * (cancelled, expired, reclaimed) and nothing of the attempt was recorded.
   */
  outcome: "claimed" | "running" | "completed" | "retry" | "failed" | "lost";
  /** The cause: the failure's code, CLAIM_LOST, or UNAVAILABLE for an outage; null on success. */
  code: string | null;
  message: string | null;
  /** From the claim until the attempt was settled (or until now for `running`); 0 for `claimed`. */
  durationMs: number;
}

export type WorkerEvent =
  | { type: "claimed"; job: ClaimedJob; facts: JobAttemptFacts }
  | { type: "completed"; job: ClaimedJob; durationMs: number; facts: JobAttemptFacts }
  | {
      type: "failed";
      job: ClaimedJob;
      outcome: FailOutcome;
      /** What the job records. */
      failure: JobFailure;
      /** What the handler threw; an INTERNAL failure's facts carry its own words, for the log. */
      error: unknown;
      durationMs: number;
      facts: JobAttemptFacts;
    }
  | { type: "lost"; job: ClaimedJob; reason: string; durationMs: number; facts: JobAttemptFacts }
  /** `job` and `facts` when the error concerns a running job (e.g. a renewal that failed). */
  | { type: "error"; error: unknown; job?: ClaimedJob; facts?: JobAttemptFacts };

export interface WorkerOptions {
  port: WorkerPort;
  handle: JobHandler;
  /** Between polls when nothing is runnable (and before each poll): expiry, scheduling. */
  idle?: () => Promise<void>;
  pollIntervalMs?: number;
  /** How often a running job's claim is renewed; keep it well under the lease (default: a quarter of it). */
  heartbeatMs?: number;
  /** The worker's host, for the events' facts. */
  host?: string;
  /** Longest wait between tries to record an outcome while the database is unreachable (default 5 s). */
  outageRetryMaxMs?: number;
  onEvent?: (event: WorkerEvent) => void;
}

export interface RunningWorker {
  /** Stops claiming; a running job is aborted and handed back for a retry. */
  stop(): Promise<void>;
  /** Settles when the loop has ended. */
  done: Promise<void>;
}

class ClaimLost extends Error {
  constructor(readonly reason: string) {
    super(`the job's claim was lost: ${reason}`);
    this.name = "ClaimLost";
  }
}

/**
 * What a thrown error means for the job: a StrataError says it itself; an outage is UNAVAILABLE;
 * anything else is INTERNAL, retried, and never recorded in its own words (a Prisma or Node
 * message holds the server's internals: its files, its SQL, its database's address).
 */
function failureOf(error: unknown): JobFailure {
  if (isStrataError(error)) {
    return { code: error.code, message: error.message, hint: error.hint ?? null, retryable: error.retryable };
  }
  if (isCatalogUnreachable(error)) return { ...CATALOG_OUTAGE };
  return { code: "INTERNAL", message: INTERNAL_JOB_MESSAGE, hint: null, retryable: true };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function startWorker(opts: WorkerOptions): RunningWorker {
  const pollMs = opts.pollIntervalMs ?? 1_000;
  const outageRetryMaxMs = opts.outageRetryMaxMs ?? 5_000;
  const emit = opts.onEvent ?? (() => undefined);
  const stopping = new AbortController();
  let wake: (() => void) | null = null;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = null;
        resolve();
      }
      wake = done;
    });

  async function runOne(job: ClaimedJob): Promise<void> {
    const claimedAt = Date.now();
    const facts = (
      outcome: JobAttemptFacts["outcome"],
      cause: { code: string; message: string } | null = null,
    ): JobAttemptFacts => ({
      jobId: job.id,
      kind: job.kind,
      host: opts.host ?? job.host,
      workerId: job.workerId,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      outcome,
      code: cause?.code ?? null,
      message: cause?.message ?? null,
      durationMs: outcome === "claimed" ? 0 : Date.now() - claimedAt,
    });
    emit({ type: "claimed", job, facts: facts("claimed") });
    const abort = new AbortController();
    let lost: string | null = null;
    // The first sign during this attempt that the catalog could not be reached.
    let outage: unknown = null;
    const loseClaim = (reason: string) => {
      if (lost) return;
      lost = reason;
      abort.abort(new ClaimLost(reason));
    };
    /** A write during the attempt failed: noted (an outage is kept as the attempt's cause) and reported. */
    const noteError = (error: unknown) => {
      const unreachable = isCatalogUnreachable(error);
      if (unreachable) outage ??= error;
      const code = unreachable ? CATALOG_OUTAGE.code : "RENEWAL_FAILED";
      emit({ type: "error", error, job, facts: facts("running", { code, message: messageOf(error) }) });
    };
    const onStop = () => abort.abort(stopping.signal.reason);
    stopping.signal.addEventListener("abort", onStop);
    const heartbeatMs = opts.heartbeatMs ?? Math.max(200, (job.leaseSeconds * 1000) / 4);
    const beat = setInterval(() => {
      opts.port
        .heartbeat(job)
        .then((held) => (held ? undefined : loseClaim("cancelled or handed to another worker")), noteError);
    }, heartbeatMs);
    const renewOrNote = async <T>(write: () => Promise<T>): Promise<T> => {
      try {
        return await write();
      } catch (error) {
        if (isCatalogUnreachable(error)) outage ??= error;
        throw error;
      }
    };
    const ctx: JobContext = {
      signal: abort.signal,
      async progress(progress) {
        if (lost) throw new ClaimLost(lost);
        if (!(await renewOrNote(() => opts.port.heartbeat(job, progress)))) {
          loseClaim("cancelled or handed to another worker");
        }
        if (lost) throw new ClaimLost(lost);
      },
      async remember(memo) {
        if (!(await renewOrNote(() => opts.port.remember(job, memo)))) {
          loseClaim("cancelled or handed to another worker");
        }
        if (lost) throw new ClaimLost(lost);
      },
    };
    /**
     * Runs one settling write, trying again while the database cannot be reached: null when the
     * worker stopped before the database answered (the lease then hands the job out again).
     */
    const settle = async <T>(write: () => Promise<T>): Promise<T | null> => {
      let delay = 250;
      for (;;) {
        try {
          return await write();
        } catch (error) {
          if (!isCatalogUnreachable(error)) throw error;
          if (!outage) noteError(error);
          outage ??= error;
          if (stopping.signal.aborted) return null;
          await sleep(delay);
          if (stopping.signal.aborted) return null;
          delay = Math.min(delay * 2, outageRetryMaxMs);
        }
      }
    };
    const emitLost = (reason: string) => {
      const cause = outage
        ? { code: CATALOG_OUTAGE.code, message: `${CATALOG_OUTAGE.message} ${reason}` }
        : { code: "CLAIM_LOST", message: reason };
      emit({ type: "lost", job, reason, durationMs: Date.now() - claimedAt, facts: facts("lost", cause) });
    };
    try {
      let result: Prisma.InputJsonValue;
      try {
        result = await opts.handle(job, ctx);
      } catch (error) {
        if (lost) {
          emitLost(lost);
          return;
        }
        const failure: JobFailure = stopping.signal.aborted
          ? { code: "WORKER_STOPPED", message: "The worker stopped while running the job.", retryable: true }
          : failureOf(error);
        const outcome = await settle(() => opts.port.fail(job, failure));
        if (outcome === null) {
          emitLost("the worker stopped before the database answered again");
          return;
        }
        emit({
          type: "failed",
          job,
          outcome,
          failure,
          error,
          durationMs: Date.now() - claimedAt,
          // The log line says what the handler threw; the job says only `failure`.
          facts: facts(outcome, {
            code: failure.code,
            message: failure.code === "INTERNAL" && !isStrataError(error) ? messageOf(error) : failure.message,
          }),
        });
        return;
      }
      if (lost) {
        emitLost(lost);
        return;
      }
      const completed = await settle(() => opts.port.complete(job, result));
      if (completed) {
        emit({ type: "completed", job, durationMs: Date.now() - claimedAt, facts: facts("completed") });
      } else {
        emitLost(
          completed === null
            ? "the worker stopped before the database answered again"
            : "the claim was gone at completion",
        );
      }
    } finally {
      clearInterval(beat);
      stopping.signal.removeEventListener("abort", onStop);
    }
  }

  async function loop(): Promise<void> {
    while (!stopping.signal.aborted) {
      try {
        if (opts.idle) await opts.idle();
        if (stopping.signal.aborted) break;
        const job = await opts.port.fetch();
        if (job) {
          await runOne(job);
          continue;
        }
      } catch (error) {
        emit({ type: "error", error });
      }
      if (!stopping.signal.aborted) await sleep(pollMs);
    }
  }

  const done = loop();
  return {
    async stop() {
      stopping.abort(new Error("the worker is stopping"));
      wake?.();
      await done;
    },
    done,
  };
}
