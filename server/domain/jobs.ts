// Jobs: what a worker process runs. Capture and restore jobs are addressed to the host whose
// disk holds the checkout; sweep and gc are maintenance any worker may run. States are ordered
//   created < retry < active < completed | cancelled | failed
// and the database enforces each state's shape (CHECK constraints); every move is a conditional
// update from the state the mover saw.
import { z } from "zod";
import type { ErrorCode } from "./errors.ts";
import { lineageKeySchema } from "./snapshot-keys.ts";

export const JOB_KINDS = ["capture", "restore", "sweep", "gc"] as const;
export type JobKind = (typeof JOB_KINDS)[number];

export const JOB_STATES = ["created", "retry", "active", "completed", "cancelled", "failed"] as const;
export type JobState = (typeof JOB_STATES)[number];
/** States a worker may claim from. */
export const CLAIMABLE_STATES = ["created", "retry"] as const satisfies readonly JobState[];
/** States a job never leaves. */
export const FINAL_STATES = ["completed", "cancelled", "failed"] as const satisfies readonly JobState[];
/** States a cancel applies to. */
export const CANCELLABLE_STATES = ["created", "retry", "active"] as const satisfies readonly JobState[];

/** A worker host name: it names a queue and appears in logs, so it is kept plain. */
export const hostNameSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, "letters, digits, '.', '_' and '-', starting with a letter or digit");

export interface RetryPolicy {
  /** Claims allowed in all (the first run counts). */
  maxAttempts: number;
  /** The delay before the second attempt; it doubles for each later one… */
  backoffMs: number;
  /** …up to this. */
  backoffMaxMs: number;
  /** A claim not renewed for this long is presumed dead and the job is handed out again. */
  leaseSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  backoffMs: 2_000,
  backoffMaxMs: 5 * 60_000,
  leaseSeconds: 60,
};

/**
 * The wait before the next attempt after `attempt` failed: exponential, capped, and jittered
 * into its upper half so that jobs failing together do not come back together.
 */
export function retryDelayMs(
  policy: Pick<RetryPolicy, "backoffMs" | "backoffMaxMs">,
  attempt: number,
  random = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const ceiling = Math.min(policy.backoffMaxMs, policy.backoffMs * 2 ** exponent);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/** Why an attempt failed, as a worker reports it: a StrataError's code, message and hint. */
export interface JobFailure {
  code: ErrorCode;
  message: string;
  hint?: string | null;
  /** False sends the job straight to `failed`, whatever attempts remain. */
  retryable: boolean;
}

/**
 * A job's error as clients see it: a StrataError's shape (code checks `code`; `message` and
 * `hint` are for people, never internal text). `code` is a string: a row may predate a code.
 */
export interface JobError {
  code: string;
  message: string;
  hint: string | null;
  retryable: boolean;
}

/** The cause one attempt ended with, at that time (the database's clock). */
export interface JobAttemptError extends JobError {
  attempt: number;
  at: Date;
}

const jobErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  hint: z.string().nullable(),
  retryable: z.boolean(),
});

/**
 * A job addressed to a host that no live worker serves (worker-hosts.ts): when a worker of it was
 * last seen (null: never), and when the job fails with NO_WORKER if none comes.
 */
export interface WaitingForHost {
  host: string;
  lastSeenAt: Date | null;
  failsAt: Date;
}

export interface JobView {
  id: string;
  kind: JobKind;
  host: string | null;
  agentId: string | null;
  state: JobState;
  data: unknown;
  progress: unknown;
  result: unknown;
  /** Why the job failed, or the cause of its last attempt while it waits to retry; null once completed. */
  error: JobError | null;
  /** The causes of its attempts that ended without completing, oldest first (the latest 20). */
  attemptErrors: JobAttemptError[];
  attempts: number;
  maxAttempts: number;
  runAfter: Date;
  claimedBy: string | null;
  leaseExpiresAt: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Non-null exactly while the job waits (created, retry) for a host with no live worker. */
  waitingForHost: WaitingForHost | null;
}

export const jobViewSchema = z.object({
  id: z.string(),
  kind: z.enum(JOB_KINDS),
  host: z.string().nullable(),
  agentId: z.string().nullable(),
  state: z.enum(JOB_STATES),
  data: z.unknown(),
  progress: z.unknown(),
  result: z.unknown(),
  error: jobErrorSchema.nullable(),
  attemptErrors: z.array(jobErrorSchema.extend({ attempt: z.number().int(), at: z.date() })),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  runAfter: z.date(),
  claimedBy: z.string().nullable(),
  leaseExpiresAt: z.date().nullable(),
  createdAt: z.date(),
  startedAt: z.date().nullable(),
  finishedAt: z.date().nullable(),
  waitingForHost: z.object({ host: z.string(), lastSeenAt: z.date().nullable(), failsAt: z.date() }).nullable(),
}) satisfies z.ZodType<JobView>;

/** An absolute path on the worker's host (POSIX or Windows form), never a relative one. */
export const hostPathSchema = z
  .string()
  .trim()
  .min(2)
  .max(4096)
  .refine((p) => p.startsWith("/") || /^[A-Za-z]:[\\/]/.test(p), "must be an absolute path on the worker's host")
  // eslint-disable-next-line no-control-regex
  .refine((p) => !/[\u0000-\u001f]/.test(p), "must not contain control characters");

/** A capture job: capture the checkout at `dir` on the host and append it to the lineage of `key`. */
export const captureJobDataSchema = z.strictObject({
  dir: hostPathSchema,
  key: lineageKeySchema,
});

/** A restore job: restore what acquire decided (restore `restoreId`, then the ladder) into `into`. */
export const restoreJobDataSchema = z.strictObject({
  restoreId: z.string().min(1),
  into: hostPathSchema,
});
