// What a job records as its error and as the history of its attempts: StrataError shapes only
// (`{ code, message, hint, retryable }`), with messages fit for people. A handler's error that is
// not a StrataError (a Prisma or Node error, a bug) is never stored in its own words: the worker
// logs those, and the job says INTERNAL with one generic sentence. Rows written before this
// shape (`{ code, message }`, with whatever message the worker had) are read tolerantly.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { ERROR_CODES, type ErrorCode } from "../domain/errors.ts";
import type { JobAttemptError, JobError, JobFailure } from "../domain/jobs.ts";

/** What a job says of an error the worker did not expect; the worker's log has the real one. */
export const INTERNAL_JOB_MESSAGE = "The job failed on an internal error; the worker's log has the details.";

/** attempt_errors keeps the causes of this many of a job's latest attempts. */
export const ATTEMPT_ERRORS_KEPT = 20;

const MESSAGE_MAX = 2000;

/**
 * The directory Strata runs from: the nearest one above this module (or its bundle: dist/cli,
 * .next/server) whose package.json is Strata's. Its paths are no one's business. Null when none is
 * found, so that scrubbing can never take a path of the agent's own for one of Strata's.
 */
function installRoot(): string | null {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown };
      if (pkg.name === "strata") return dir.endsWith(path.sep) ? dir : `${dir}${path.sep}`;
    } catch {
      // No package.json here (or not JSON): look further up.
    }
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

const INSTALL_ROOT = installRoot();

/** Words of internal text: a Prisma call site, a stack frame, a source file. */
const INTERNAL_TEXT = /invocation|\n\s*at |\bat \S+ \(|\S+\.(?:ts|tsx|js|mjs|cjs)\b/;

function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

const INSTALL_PATH = INSTALL_ROOT ? new RegExp(`${escapeRegExp(INSTALL_ROOT)}[^\\s'"\`)]*`, "g") : null;

/** `message` without the paths of Strata's own files (a StrataError's message is otherwise kept). */
function withoutInstallPaths(message: string): string {
  return INSTALL_PATH ? message.replace(INSTALL_PATH, "<strata>") : message;
}

/** Prisma's report of a failed call (its call site, code excerpt and the database's words), to the end. */
const PRISMA_CALL = /\s*Invalid `[^`]*` invocation[\s\S]*$/;

/**
 * A typed error's message without a Prisma report some code appended to it (e.g. BLOB_STORE_FAILED's
 * "The catalog could not be reached: <the error>"): what precedes it stays, as a sentence.
 */
function withoutPrismaReport(message: string): string {
  if (!PRISMA_CALL.test(message)) return message;
  const kept = message.replace(PRISMA_CALL, "").replace(/[\s:;,-]+$/, "");
  return kept ? `${kept}.` : "The worker's log has the details.";
}

/**
 * A message as a job may show it: an INTERNAL (or unknown) code's message that reads like internal
 * text is replaced by the generic one; any other (a typed error's, which is for people) loses only
 * a Prisma report appended to it and the paths of Strata's own files.
 */
function safeMessage(code: string, message: string): string {
  if ((code === "INTERNAL" || !isErrorCode(code)) && INTERNAL_TEXT.test(message)) return INTERNAL_JOB_MESSAGE;
  return withoutInstallPaths(withoutPrismaReport(message)).slice(0, MESSAGE_MAX);
}

/** The error a job records for `failure`: a known code (else INTERNAL), a safe message. */
export function jobErrorOf(
  failure: Pick<JobFailure, "code" | "message" | "retryable"> & { hint?: string | null },
): JobError {
  if (!isErrorCode(failure.code)) {
    return { code: "INTERNAL", message: INTERNAL_JOB_MESSAGE, hint: null, retryable: failure.retryable };
  }
  return {
    code: failure.code,
    message: safeMessage(failure.code, failure.message),
    hint: failure.hint ? withoutInstallPaths(failure.hint).slice(0, MESSAGE_MAX) : null,
    retryable: failure.retryable,
  };
}

/** The JSON a job row stores for `error`. */
export function storedJobError(error: JobError): Prisma.InputJsonObject {
  return { code: error.code, message: error.message, hint: error.hint, retryable: error.retryable };
}

/**
 * attempt_errors with one more attempt's cause appended (the latest ATTEMPT_ERRORS_KEPT kept).
 * `at` is the database's clock.
 */
export function withAttemptError(
  stored: Prisma.JsonValue,
  attempt: number,
  at: Date,
  error: JobError,
): Prisma.InputJsonArray {
  const previous = Array.isArray(stored) ? (stored as Prisma.InputJsonValue[]) : [];
  const entry = { attempt, at: at.toISOString(), ...storedJobError(error) };
  return [...previous, entry].slice(-ATTEMPT_ERRORS_KEPT);
}

/**
 * A stored job error as clients see it. Rows of the earlier shape hold `{ code, message }` only:
 * hint null, retryable as the code says (true for a code this server does not know), and a
 * message of internal text replaced by the generic one.
 */
export function readJobError(stored: unknown): JobError | null {
  if (stored === null || typeof stored !== "object" || Array.isArray(stored)) return null;
  const e = stored as { code?: unknown; message?: unknown; hint?: unknown; retryable?: unknown };
  const code = typeof e.code === "string" && e.code !== "" ? e.code : "INTERNAL";
  const message = typeof e.message === "string" ? e.message : "";
  return {
    code,
    message: safeMessage(code, message),
    hint: typeof e.hint === "string" ? withoutInstallPaths(e.hint) : null,
    retryable: typeof e.retryable === "boolean" ? e.retryable : isErrorCode(code) ? ERROR_CODES[code].retryable : true,
  };
}

/** attempt_errors as clients see it; entries that cannot be read (no attempt or time) are left out. */
export function readAttemptErrors(stored: unknown): JobAttemptError[] {
  if (!Array.isArray(stored)) return [];
  const read: JobAttemptError[] = [];
  for (const item of stored as unknown[]) {
    const error = readJobError(item);
    const { attempt, at } = (item ?? {}) as { attempt?: unknown; at?: unknown };
    const when = typeof at === "string" ? new Date(at) : null;
    if (!error || typeof attempt !== "number" || !when || Number.isNaN(when.getTime())) continue;
    read.push({ attempt, at: when, ...error });
  }
  return read;
}
