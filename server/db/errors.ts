// Recognizing database errors the same way on both providers.
import { StrataError } from "../domain/errors.ts";

interface PrismaLikeError {
  code?: string;
  message?: string;
  cause?: { originalCode?: string; kind?: string };
}

/** The database's own words: SQLite trigger messages sit in the driver adapter error's cause. */
function databaseText(error: unknown): string {
  const e = error as
    (PrismaLikeError & { meta?: { driverAdapterError?: { cause?: { originalMessage?: string } } } }) | null;
  return `${e?.message ?? ""} ${e?.meta?.driverAdapterError?.cause?.originalMessage ?? ""}`;
}

/**
 * A write refused by a one-way state rule (migration 20261201200000_one_way_states: a retired
 * snapshot never ready again, a reported restore never pending again, …). The services only
 * make allowed moves with conditional updates, so this reaching a caller is a bug, never bad
 * input: it is an internal error, and this lets logs and tests name it.
 */
export function isOneWayStateViolation(error: unknown): boolean {
  return /one-way state:/.test(databaseText(error));
}

/** A unique or primary-key violation (P2002 on both providers). */
export function isUniqueViolation(error: unknown): boolean {
  return (error as PrismaLikeError | null)?.code === "P2002";
}

/**
 * Thrown inside a transaction to have its owner run it again from the start, e.g. after losing
 * an insert race on PostgreSQL, where the failed statement has aborted the transaction.
 */
export class RetryTransaction extends Error {
  constructor(reason: string) {
    super(`transaction must be retried: ${reason}`);
    this.name = "RetryTransaction";
  }
}

/** A PostgreSQL serialization failure or deadlock, SQLite busy, or RetryTransaction. */
export function isRetryableConflict(error: unknown): boolean {
  if (error instanceof RetryTransaction) return true;
  const e = error as PrismaLikeError | null;
  if (!e) return false;
  if (e.code === "P2034") return true;
  const text = `${e.message ?? ""} ${e.cause?.originalCode ?? ""}`;
  return /could not serialize|deadlock detected|40001|40P01|SQLITE_BUSY|database is locked/i.test(text);
}

// Outages: the catalog database cannot be reached or cannot take the work now ----------------

/** Prisma's codes for "cannot reach / lost / timed out / too many connections". */
const UNAVAILABLE_PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024", "P2037"]);
/** Prisma's driver adapter error kinds for the same (P2010, a failed raw query, carries them too). */
const UNAVAILABLE_ADAPTER_KINDS = new Set([
  "DatabaseNotReachable",
  "ConnectionClosed",
  "SocketTimeout",
  "TooManyConnections",
]);
/** Node's socket errors (pg's when the catalog's pool is used directly). */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
/**
 * PostgreSQL: connection exceptions (class 08), a server shutting down or starting up (57P01–03),
 * too many connections (53300). SQLite: busy or locked past the busy timeout, a file that cannot be
 * opened (its directory gone or unreadable).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300|SQLITE_(BUSY|LOCKED|CANTOPEN)(_\w+)?)$/;
/** The words of the errors pg, the pool, Prisma's transaction manager and better-sqlite3 throw bare. */
const UNAVAILABLE_TEXT =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|terminating connection due to administrator command|the database system is (shutting down|starting up|in recovery mode)|Can't reach database server|Server has closed the connection|Unable to start a transaction in the given time|Cannot open database because the directory does not exist|unable to open database file|database is locked/;
/**
 * Prisma's transaction manager (P2028) about an interactive transaction that is gone: rolled back
 * under it, expired while the database did not answer, or no longer known after the connection
 * went. Its cause cannot be told from the error (a transaction that simply ran too long reads the
 * same); for a client the honest answer to all of them is the same: retry. A statement sent on a
 * transaction that committed is the caller's bug, never an outage, and is left out.
 */
const TRANSACTION_GONE_TEXT =
  /Transaction already closed(?!: A \w+ cannot be executed on a committed transaction)|Transaction not found|cannot be executed on an expired transaction/;

interface OutageLikeError {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown; originalCode?: unknown; code?: unknown } } };
}

function isOutage(e: OutageLikeError): boolean {
  if (e.name === "PrismaClientInitializationError") return true;
  const code = typeof e.code === "string" ? e.code : "";
  if (UNAVAILABLE_PRISMA_CODES.has(code) || SOCKET_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)) return true;
  const adapter = e.meta?.driverAdapterError?.cause;
  if (adapter) {
    if (UNAVAILABLE_ADAPTER_KINDS.has(String(adapter.kind))) return true;
    if (UNAVAILABLE_SQLSTATE.test(String(adapter.originalCode ?? adapter.code ?? ""))) return true;
  }
  return typeof e.message === "string" && (UNAVAILABLE_TEXT.test(e.message) || TRANSACTION_GONE_TEXT.test(e.message));
}

/**
 * The catalog database cannot be reached or cannot take the work now (stopped, refusing or
 * dropping connections, the pool exhausted, SQLite busy past its timeout or its file gone), on
 * either provider, whether Prisma, its driver adapter, pg or better-sqlite3 threw it; the error's
 * causes are looked at too. An interactive transaction that the outage closed (Prisma's
 * "Transaction already closed", "Transaction not found", an expired transaction) is one too.
 * A conflict that retrying the transaction fixes is not one.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== null && typeof current === "object"; depth += 1) {
    // Already typed: it says what it is.
    if (current instanceof StrataError) return false;
    if (isOutage(current as OutageLikeError)) return true;
    current = (current as OutageLikeError).cause;
  }
  return false;
}

/** How long a client waits before retrying a call refused by an outage (Retry-After, in seconds). */
export const OUTAGE_RETRY_AFTER_SECONDS = 3;

/**
 * What every route answers during an outage: UNAVAILABLE, retryable, and nothing of the cause
 * (no host, port, SQL or driver text), which is kept as the error's `cause` for the server's log.
 */
export function catalogUnavailable(cause?: unknown): StrataError {
  return new StrataError("UNAVAILABLE", "The catalog database is unavailable.", {
    hint: "Retry in a few seconds.",
    retryable: true,
    cause,
  });
}

/** catalogUnavailable() for an outage, else null. */
export function asCatalogUnavailable(error: unknown): StrataError | null {
  return isDatabaseUnavailable(error) ? catalogUnavailable(error) : null;
}
