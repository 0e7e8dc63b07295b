// The worker loop. It is handed its fetch and handle functions (a port, so tests drive it
// without a database): it claims a job, runs the handler with an AbortSignal, renews the claim while the handler runs,
// and settles the job. A claim that cannot be renewed (cancelled, or expired and handed to
// another worker) aborts the handler at once; its outcome is then discarded, never recorded.
import type { Prisma } from "../db/generated/postgres/client.ts";
import { isStrataError } from "../domain/errors.ts";
import type { JobFailure } from "../domain/jobs.ts";
import type { ClaimedJob, FailOutcome } from "./queue.ts";

interface WorkerPort {
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

export type WorkerEvent =
  | { type: "claimed"; job: ClaimedJob }
  | { type: "completed"; job: ClaimedJob }
  | { type: "failed"; job: ClaimedJob; outcome: FailOutcome; failure: JobFailure }
  | { type: "lost"; job: ClaimedJob; reason: string }
  | { type: "error"; error: unknown };

export interface WorkerOptions {
  port: WorkerPort;
  handle: JobHandler;
  /** Between polls when nothing is runnable (and before each poll): expiry, scheduling. */
  idle?: () => Promise<void>;
  pollIntervalMs?: number;
  /** How often a running job's claim is renewed; keep it well under the lease. */
  heartbeatMs?: number;
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

/** What a thrown error means for the job: StrataErrors carry retryable; anything else is retried. */
function failureOf(error: unknown): JobFailure {
  if (isStrataError(error)) return { code: error.code, message: error.message, retryable: error.retryable };
  const e = error as Error | undefined;
  return { code: "INTERNAL", message: e?.message ?? String(error), retryable: true };
}

export function startWorker(opts: WorkerOptions): RunningWorker {
  const pollMs = opts.pollIntervalMs ?? 1_000;
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
    emit({ type: "claimed", job });
    const abort = new AbortController();
    let lost: string | null = null;
    const loseClaim = (reason: string) => {
      if (lost) return;
      lost = reason;
      abort.abort(new ClaimLost(reason));
    };
    const onStop = () => abort.abort(stopping.signal.reason);
    stopping.signal.addEventListener("abort", onStop);
    const heartbeatMs = opts.heartbeatMs ?? Math.max(200, (job.leaseSeconds * 1000) / 3);
    const beat = setInterval(() => {
      opts.port.heartbeat(job).then(
        (held) => (held ? undefined : loseClaim("cancelled or handed to another worker")),
        (error: unknown) => emit({ type: "error", error }),
      );
    }, heartbeatMs);
    const ctx: JobContext = {
      signal: abort.signal,
      async progress(progress) {
        if (lost) throw new ClaimLost(lost);
        if (!(await opts.port.heartbeat(job, progress))) loseClaim("cancelled or handed to another worker");
        if (lost) throw new ClaimLost(lost);
      },
      async remember(memo) {
        if (!(await opts.port.remember(job, memo))) loseClaim("cancelled or handed to another worker");
        if (lost) throw new ClaimLost(lost);
      },
    };
    try {
      const result = await opts.handle(job, ctx);
      if (lost) {
        emit({ type: "lost", job, reason: lost });
      } else if (await opts.port.complete(job, result)) {
        emit({ type: "completed", job });
      } else {
        emit({ type: "lost", job, reason: "the claim was gone at completion" });
      }
    } catch (error) {
      if (lost) {
        emit({ type: "lost", job, reason: lost });
        return;
      }
      const failure: JobFailure = stopping.signal.aborted
        ? { code: "WORKER_STOPPED", message: "The worker stopped while running the job.", retryable: true }
        : failureOf(error);
      const outcome = await opts.port.fail(job, failure);
      emit({ type: "failed", job, outcome, failure });
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
