// Small SQL helpers the capabilities share. What differs between the providers (placeholders,
// locks, the clock) is the dialect's (server/db/dialect.ts).
import type { Db } from "./client.ts";
import { dialectOf } from "./dialect.ts";

/** The database's clock, which every process sharing the catalog agrees on. */
export function dbNow(db: Db): Promise<Date> {
  return dialectOf(db).now(db);
}

/** Raw counts come back as bigint on SQLite and, for count(*), on PostgreSQL too. */
export function toNumber(value: bigint | number | string | null | undefined): number {
  return value === null || value === undefined ? 0 : Number(value);
}

/** Splits a list into pieces of at most `size` (bounded IN lists and batches). */
export function slices<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
