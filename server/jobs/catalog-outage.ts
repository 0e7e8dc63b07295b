// Telling "the catalog database could not be reached" from every other error, so that a job
// interrupted by an outage records the outage as its cause (worker.ts), not whatever the lease
// expiry would have said. Recognized on both drivers: Prisma's connection codes, the PostgreSQL
// driver adapter's connection kinds, PostgreSQL's shutdown/connection SQLSTATEs, and the words
// pg and Node use when a socket is refused, reset or closed.
import { isStrataError } from "../domain/errors.ts";

const PRISMA_CONNECTION_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024"]);
const ADAPTER_CONNECTION_KINDS = new Set([
  "DatabaseNotReachable",
  "ConnectionClosed",
  "SocketTimeout",
  "TooManyConnections",
]);
/** admin_shutdown, crash_shutdown, cannot_connect_now, and class 08 (connection exception). */
const SQLSTATE = /^(57P0[123]|08\w{3})$/;
const WORDS =
  /can't reach database server|ECONNREFUSED|ECONNRESET|EPIPE|connection terminated|terminating connection|the database system is (shutting down|starting up|in recovery mode)|server closed the connection|connection (ended|closed) unexpectedly|client has encountered a connection error|timed out fetching a new connection|Connection is closed|socket hang up/i;

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: unknown };
}

function unreachable(error: unknown, depth: number): boolean {
  if (!error || typeof error !== "object" || depth > 4) return false;
  const e = error as ErrorLike;
  if (isStrataError(error, "UNAVAILABLE")) return true;
  if (typeof e.code === "string" && (PRISMA_CONNECTION_CODES.has(e.code) || SQLSTATE.test(e.code))) return true;
  if (typeof e.kind === "string" && ADAPTER_CONNECTION_KINDS.has(e.kind)) return true;
  if (typeof e.originalCode === "string" && SQLSTATE.test(e.originalCode)) return true;
  if (typeof e.message === "string" && WORDS.test(e.message)) return true;
  return unreachable(e.cause, depth + 1) || unreachable(e.meta?.driverAdapterError, depth + 1);
}

/** Whether `error` says the catalog database could not be reached (down, restarting, refused). */
export function isCatalogUnreachable(error: unknown): boolean {
  return unreachable(error, 0);
}

/** The cause a job interrupted by an outage records once the database answers again. */
export const CATALOG_OUTAGE = {
  code: "UNAVAILABLE",
  message: "The catalog database was unreachable during the job.",
  retryable: true,
} as const;
