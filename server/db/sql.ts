// Small SQL helpers the content services share: the database clock, placeholder lists and row
// locks, written once for both providers. SQLite needs no row locks: each of its transactions
// holds the database write lock (server/db/sqlite-serial.ts).
import type { Db } from "./client.ts";
import { isPostgresClient } from "./errors.ts";
import { databaseNow } from "./health.ts";

/** The database's clock, which every process sharing the catalog agrees on. */
export function dbNow(db: Db): Promise<Date> {
  return databaseNow(db, isPostgresClient(db) ? "postgres" : "sqlite");
}

/** A SQL dialect bound to one handle: placeholders and lock clauses. */
export interface Dialect {
  pg: boolean;
  /** `$n` on PostgreSQL, `?` on SQLite, for the n-th (1-based) parameter. */
  p(n: number): string;
  /** A parenthesized list of `count` placeholders starting at parameter `from`. */
  list(count: number, from?: number): string;
  /** A row-lock suffix (PostgreSQL) or nothing (SQLite). */
  lock(mode: "update" | "share" | "update skip locked"): string;
  /**
   * SQLite's planner has no statistics and picks `layers_state_idx` for "state = 'available'"
   * over the far more selective index a query is written for, which turns a probe into a scan.
   * `INDEXED BY` pins the index there; PostgreSQL's planner needs no help.
   */
  indexedBy(index: string): string;
}

export function dialect(db: Db): Dialect {
  const pg = isPostgresClient(db);
  const p = (n: number) => (pg ? `$${n}` : "?");
  return {
    pg,
    p,
    list: (count, from = 1) => `(${Array.from({ length: count }, (_, i) => p(from + i)).join(", ")})`,
    lock: (mode) => (pg ? ` FOR ${mode.toUpperCase()}` : ""),
    indexedBy: (index) => (pg ? "" : ` INDEXED BY ${index}`),
  };
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
