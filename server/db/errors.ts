// Recognizing database errors the same way on both providers.

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
