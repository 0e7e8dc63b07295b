// The one error type of the domain. Code checks `code`; `message` and `hint` are for people.

export const ERROR_CODES = {
  INVALID_INPUT: { status: "BAD_REQUEST", retryable: false },
  // The request itself is wrong before any input is read (HTTP 405 and 415).
  METHOD_NOT_ALLOWED: { status: "METHOD_NOT_SUPPORTED", retryable: false },
  UNSUPPORTED_MEDIA_TYPE: { status: "UNSUPPORTED_MEDIA_TYPE", retryable: false },
  NOT_FOUND: { status: "NOT_FOUND", retryable: false },
  FORBIDDEN: { status: "FORBIDDEN", retryable: false },
  UNAUTHORIZED: { status: "UNAUTHORIZED", retryable: false },
  CONFLICT: { status: "CONFLICT", retryable: false },
  EVIDENCE_INVALID: { status: "UNPROCESSABLE_CONTENT", retryable: false },
  BASELINE_STALE: { status: "CONFLICT", retryable: true },
  FENCE_LOST: { status: "CONFLICT", retryable: false },
  SNAPSHOT_RETIRED: { status: "PRECONDITION_FAILED", retryable: false },
  PIN_REFUSED: { status: "PRECONDITION_FAILED", retryable: false },
  PIN_CLOSED: { status: "CONFLICT", retryable: false },
  // A live hold is taken only on the pause's checkpoint: its lineage's ready head.
  HOLD_REFUSED: { status: "PRECONDITION_FAILED", retryable: false },
  BLOB_CORRUPT: { status: "UNPROCESSABLE_CONTENT", retryable: true },
  BLOB_MISSING: { status: "NOT_FOUND", retryable: false },
  BLOB_TOO_LARGE: { status: "PAYLOAD_TOO_LARGE", retryable: false },
  LAYER_CONFLICT: { status: "CONFLICT", retryable: false },
  LAYER_UNAVAILABLE: { status: "PRECONDITION_FAILED", retryable: false },
  UNAVAILABLE: { status: "SERVICE_UNAVAILABLE", retryable: true },
  INTERNAL: { status: "INTERNAL_SERVER_ERROR", retryable: true },
  // Jobs: how an attempt ended when its handler did not say (server/jobs/queue.ts, worker.ts);
  // never an API answer, the error of a job or of one of its attempts.
  LEASE_EXPIRED: { status: "TIMEOUT", retryable: true },
  WORKER_DIED: { status: "INTERNAL_SERVER_ERROR", retryable: true },
  WORKER_STOPPED: { status: "SERVICE_UNAVAILABLE", retryable: true },
  CLAIM_LOST: { status: "CONFLICT", retryable: false },
  CANCELLED: { status: "CLIENT_CLOSED_REQUEST", retryable: false },
  // Git-side failures of capture, restore and evidence (server/git and the engines).
  NOT_A_REPOSITORY: { status: "PRECONDITION_FAILED", retryable: false },
  GIT_UNAVAILABLE: { status: "PRECONDITION_FAILED", retryable: false },
  UNREADABLE_PATH: { status: "PRECONDITION_FAILED", retryable: false },
  GIT_FAILED: { status: "INTERNAL_SERVER_ERROR", retryable: false },
  TIMEOUT: { status: "TIMEOUT", retryable: true },
  ABORTED: { status: "CLIENT_CLOSED_REQUEST", retryable: false },
  BLOB_STORE_FAILED: { status: "SERVICE_UNAVAILABLE", retryable: true },
  // Restore: refusals (nothing is written) and the failures the degraded ladder handles.
  UNSAFE_TARGET: { status: "PRECONDITION_FAILED", retryable: false },
  // Workers: a job's directory is outside the host's roots or not its agent's (host-access.ts).
  PATH_NOT_ALLOWED: { status: "FORBIDDEN", retryable: false },
  INVALID_SNAPSHOT: { status: "UNPROCESSABLE_CONTENT", retryable: false },
  COMMITS_UNAVAILABLE: { status: "PRECONDITION_FAILED", retryable: false },
  DELTA_FAILED: { status: "UNPROCESSABLE_CONTENT", retryable: false },
  TREE_MISMATCH: { status: "UNPROCESSABLE_CONTENT", retryable: false },
  // Verify: a checkout on this host is not what its snapshot recorded (data: what drifted).
  WORKSPACE_DRIFT: { status: "PRECONDITION_FAILED", retryable: false },
  // The pool: a task no longer holds its pooled worktree (another task took it); record nothing.
  POOLED_WORKTREE_LOST: { status: "CONFLICT", retryable: false },
  // Backends: an artifact names a kind of backend this server does not have.
  UNKNOWN_BACKEND: { status: "BAD_REQUEST", retryable: false },
  // Idempotency keys (docs/api.md "Idempotency"): a key reused for a different call.
  IDEMPOTENCY_CONFLICT: { status: "CONFLICT", retryable: false },
  // Jobs: a capture or restore addressed to a host no live worker serves waited too long
  // (server/jobs/worker-hosts.ts); never an API answer, the error of the failed job.
  NO_WORKER: { status: "PRECONDITION_FAILED", retryable: false },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface StrataErrorOptions {
  hint?: string;
  retryable?: boolean;
  /** Machine-readable details. Never put secrets or request values that may hold them here. */
  data?: Record<string, unknown>;
  cause?: unknown;
}

export class StrataError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly retryable: boolean;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: StrataErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "StrataError";
    this.code = code;
    this.hint = options.hint;
    this.retryable = options.retryable ?? ERROR_CODES[code].retryable;
    this.data = options.data;
  }

  toJSON(): StrataErrorShape {
    return {
      code: this.code,
      message: this.message,
      hint: this.hint ?? null,
      retryable: this.retryable,
      data: this.data ?? null,
    };
  }
}

export interface StrataErrorShape {
  code: ErrorCode;
  message: string;
  hint: string | null;
  retryable: boolean;
  data: Record<string, unknown> | null;
}

export function isStrataError(error: unknown, code?: ErrorCode): error is StrataError {
  return error instanceof StrataError && (code === undefined || error.code === code);
}
