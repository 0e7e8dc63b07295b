// Every difference between the two catalog databases, in one object per provider (pg-boss v12's
// src/dialect.ts is the model): the only place a reader looks to learn how SQLite and PostgreSQL
// differ here. openCatalog chooses the dialect once from the URL; any handle of that catalog, the
// client or a transaction opened by inTransaction, finds it with dialectOf. Nothing reads Prisma's
// private fields, and no service takes a database kind.
//
// SQLite needs no row locks: each of its transactions holds the database write lock
// (server/db/sqlite-serial.ts).
import type { SqlDriverAdapter } from "@prisma/driver-adapter-utils";
import type pg from "pg";
import type { Db } from "./handle.ts";

export type DatabaseKind = "sqlite" | "postgres";
type LockMode = "update" | "share" | "update skip locked";

export interface Dialect {
  /** For reports (health, logs) and for choosing a migrations folder; code asks the methods below. */
  readonly kind: DatabaseKind;
  /** The provider name Prisma and better-auth's Prisma adapter use. */
  readonly prismaProvider: "postgresql" | "sqlite";
  /** `$n` on PostgreSQL, `?` on SQLite, for the n-th (1-based) parameter. */
  p(n: number): string;
  /** A parenthesized list of `count` placeholders starting at parameter `from`. */
  list(count: number, from?: number): string;
  /** A row-lock suffix (PostgreSQL) or nothing (SQLite). */
  lock(mode: LockMode): string;
  /**
   * SQLite's planner has no statistics and picks `layers_state_idx` for "state = 'available'"
   * over the far more selective index a query is written for, which turns a probe into a scan.
   * `INDEXED BY` pins the index there; PostgreSQL's planner needs no help.
   */
  indexedBy(index: string): string;
  /** The database's clock, which every process sharing the catalog agrees on. */
  now(db: Db): Promise<Date>;
  /** The clock inside a transaction: its start on PostgreSQL (as a queue's leases need), the statement's on SQLite. */
  transactionNow(db: Db): Promise<Date>;
  /**
   * Timestamps inside one statement, in the form the DateTime columns store (UTC): the database
   * clock, a bound Date parameter, and a timestamp plus a number of seconds (both SQL).
   */
  readonly timestamps: {
    readonly now: string;
    param(placeholder: string): string;
    plusSeconds(timestamp: string, seconds: string): string;
  };
  /**
   * Reads one row by id, locked until the transaction ends (`FOR UPDATE` / `FOR SHARE` on
   * PostgreSQL); null when there is no such row. `columns` is SQL, written by the caller.
   */
  lockRow<T extends object>(
    tx: Db,
    table: LockableTable,
    id: string,
    columns: string,
    mode?: "update" | "share",
  ): Promise<T | null>;
  /**
   * One blob chunk's bytes in and out. On the catalog client these go straight to the driver
   * (pg's pool, or the SQLite adapter behind the same serializing gate): Prisma's engine carries
   * bytes as base64 text in JSON and hands them back as arrays of numbers, which made a 256 KiB
   * row cost about 20 ms to write. Inside a transaction they go through the transaction.
   */
  readonly blobChunks: {
    insert(db: Db, blobId: string, seq: number, data: Uint8Array): Promise<void>;
    /** Null when there is no such chunk. */
    read(db: Db, blobId: string, seq: number): Promise<Buffer | null>;
  };
  /** A blob chunk's bytes as text (the adapters turn bytea/blob into arrays of numbers), and back. */
  readonly chunkText: {
    select: string;
    /** The column expression giving the bytes of `column` as text. */
    of(column: string): string;
    decode(text: string): Buffer;
  };
  /**
   * A SELECT of the distinct digests (column `digest`) listed in live snapshots' metadata
   * `manifest.blobDigests` that are among the placeholders `digests` (from dialect.list).
   */
  listedBlobDigests(digests: string): string;
  /** The catalog's own tables (not the provider's), by name. */
  tableNames(db: Db): Promise<string[]>;
  /**
   * Where PostgreSQL's set-based statements (the acquire) run for this handle: the pg pool for
   * a catalog client, where concurrent callers may share a statement, or the transaction
   * itself, so the statement commits or rolls back with the caller's writes. Null on SQLite,
   * whose implementation is Prisma's in a transaction.
   */
  statementRunner(db: Db): StatementRunner | null;
}

/** Runs one SQL statement with `$n` parameters and returns its rows. */
export interface StatementRunner {
  /** `pool`: concurrent callers may be coalesced into one statement; `transaction`: alone. */
  readonly on: "pool" | "transaction";
  /** `name` lets a pool connection plan the statement once. */
  query<T>(name: string, text: string, values: unknown[]): Promise<T[]>;
}

/** The tables whose rows a transaction locks one by one. */
type LockableTable = "snapshots" | "lineages" | "restores" | "dependency_caches";

function placeholders(p: (n: number) => string) {
  return (count: number, from = 1) => `(${Array.from({ length: count }, (_, i) => p(from + i)).join(", ")})`;
}

function isTransaction(db: Db): boolean {
  return !("$transaction" in db);
}

type ChunkText = Dialect["chunkText"];
type BlobChunks = Dialect["blobChunks"];
type DirectChunks = {
  insert(blobId: string, seq: number, data: Uint8Array): Promise<void>;
  read(blobId: string, seq: number): Promise<Buffer | null>;
};

const INSERT_CHUNK = (p: (n: number) => string) =>
  `INSERT INTO blob_chunks (blob_id, seq, data) VALUES (${p(1)}, ${p(2)}, ${p(3)})`;

/**
 * Blob chunks on `direct` (the driver) for a catalog client, and through Prisma on a
 * transaction, so they commit or roll back with it.
 */
function blobChunks(p: (n: number) => string, text: ChunkText, direct: DirectChunks): BlobChunks {
  return {
    async insert(db, blobId, seq, data) {
      if (isTransaction(db)) await db.$executeRawUnsafe(INSERT_CHUNK(p), blobId, seq, data);
      else await direct.insert(blobId, seq, data);
    },
    async read(db, blobId, seq) {
      if (!isTransaction(db)) return direct.read(blobId, seq);
      const [row] = await db.$queryRawUnsafe<{ text: string }[]>(text.select, blobId, seq);
      return row ? text.decode(row.text) : null;
    },
  };
}

/**
 * SQLite's dialect. `adapter` gives the adapter the catalog client connected (connecting it
 * first if need be), for the statements that bypass Prisma's engine.
 */
export function sqliteDialect(adapter: () => Promise<SqlDriverAdapter>): Dialect {
  const p = () => "?";
  const chunkText: ChunkText = {
    select: `SELECT hex(data) AS text FROM blob_chunks WHERE blob_id = ? AND seq = ?`,
    of: (column: string) => `hex(${column})`,
    decode: (text: string) => Buffer.from(text, "hex"),
  };
  const clock = async (db: Db) => {
    const [row] = await db.$queryRawUnsafe<{ now: string }[]>("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now");
    return new Date(row!.now);
  };
  return {
    kind: "sqlite",
    prismaProvider: "sqlite",
    p,
    list: placeholders(p),
    lock: () => "",
    indexedBy: (index) => ` INDEXED BY ${index}`,
    now: clock,
    transactionNow: clock,
    // Prisma stores a DateTime as ISO text with "+00:00", and compares it as text.
    timestamps: {
      now: `strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')`,
      param: (placeholder) => placeholder,
      plusSeconds: (timestamp, seconds) =>
        `strftime('%Y-%m-%dT%H:%M:%f+00:00', ${timestamp}, '+' || ${seconds} || ' seconds')`,
    },
    async lockRow<T extends object>(tx: Db, table: LockableTable, id: string, columns: string) {
      const rows = await tx.$queryRawUnsafe<T[]>(`SELECT ${columns} FROM ${table} WHERE id = ?`, id);
      return rows[0] ?? null;
    },
    blobChunks: blobChunks(p, chunkText, {
      async insert(blobId, seq, data) {
        await (
          await adapter()
        ).executeRaw({
          sql: INSERT_CHUNK(p),
          args: [blobId, seq, Buffer.from(data.buffer, data.byteOffset, data.byteLength)],
          argTypes: [
            { scalarType: "string", arity: "scalar" },
            { scalarType: "int", arity: "scalar" },
            { scalarType: "bytes", arity: "scalar" },
          ],
        });
      },
      async read(blobId, seq) {
        const result = await (
          await adapter()
        ).queryRaw({
          sql: chunkText.select,
          args: [blobId, seq],
          argTypes: [
            { scalarType: "string", arity: "scalar" },
            { scalarType: "int", arity: "scalar" },
          ],
        });
        const text = result.rows[0]?.[0];
        return typeof text === "string" ? chunkText.decode(text) : null;
      },
    }),
    chunkText,
    listedBlobDigests: (digests) =>
      `SELECT DISTINCT e.value AS digest FROM snapshots s, json_each(s.metadata, '$.manifest.blobDigests') e ` +
      `WHERE s.metadata IS NOT NULL AND json_valid(s.metadata) AND s.state <> 'deleted' AND e.value IN ${digests}`,
    async tableNames(db) {
      const rows = await db.$queryRawUnsafe<{ name: string }[]>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      );
      return rows.map((r) => r.name);
    },
    statementRunner: () => null,
  };
}

const PG_CHUNK_TEXT: ChunkText = {
  select: `SELECT encode(data, 'base64') AS text FROM blob_chunks WHERE blob_id = $1 AND seq = $2`,
  of: (column: string) => `encode(${column}, 'base64')`,
  decode: (text: string) => Buffer.from(text, "base64"),
};

export function postgresDialect(pool: pg.Pool): Dialect {
  const poolRunner: StatementRunner = {
    on: "pool",
    async query<T>(name: string, text: string, values: unknown[]) {
      return (await pool.query({ name, text, values })).rows as T[];
    },
  };
  const transactionRunner = (tx: Db): StatementRunner => ({
    on: "transaction",
    query: <T>(_name: string, text: string, values: unknown[]) => tx.$queryRawUnsafe<T[]>(text, ...values),
  });
  const p = (n: number) => `$${n}`;
  const lock = (mode: LockMode) => ` FOR ${mode.toUpperCase()}`;
  const clock = (sql: string) => async (db: Db) => {
    const [row] = await db.$queryRawUnsafe<{ now: Date }[]>(sql);
    return new Date(row!.now);
  };
  return {
    kind: "postgres",
    prismaProvider: "postgresql",
    p,
    list: placeholders(p),
    lock,
    indexedBy: () => "",
    now: clock("SELECT clock_timestamp() AS now"),
    transactionNow: clock("SELECT now() AS now"),
    // The columns are `timestamp(3)` holding UTC: now() is read in UTC, whatever the session's zone.
    timestamps: {
      now: `(now() AT TIME ZONE 'UTC')`,
      param: (placeholder) => `CAST(${placeholder} AS timestamp(3))`,
      plusSeconds: (timestamp, seconds) => `(${timestamp} + ${seconds} * interval '1 second')`,
    },
    async lockRow<T extends object>(
      tx: Db,
      table: LockableTable,
      id: string,
      columns: string,
      mode: "update" | "share" = "update",
    ) {
      const rows = await tx.$queryRawUnsafe<T[]>(`SELECT ${columns} FROM ${table} WHERE id = $1${lock(mode)}`, id);
      return rows[0] ?? null;
    },
    blobChunks: blobChunks(p, PG_CHUNK_TEXT, {
      async insert(blobId, seq, data) {
        await pool.query({ name: "strata_chunk_insert", text: INSERT_CHUNK(p), values: [blobId, seq, data] });
      },
      async read(blobId, seq) {
        const { rows } = await pool.query<{ data: Buffer }>({
          name: "strata_chunk_read",
          text: "SELECT data FROM blob_chunks WHERE blob_id = $1 AND seq = $2",
          values: [blobId, seq],
        });
        return rows[0]?.data ?? null;
      },
    }),
    chunkText: PG_CHUNK_TEXT,
    listedBlobDigests: (digests) =>
      `SELECT DISTINCT e.value AS digest FROM snapshots s CROSS JOIN LATERAL jsonb_array_elements_text(` +
      `CASE WHEN jsonb_typeof(s.metadata -> 'manifest' -> 'blobDigests') = 'array' ` +
      `THEN s.metadata -> 'manifest' -> 'blobDigests' ELSE '[]'::jsonb END) AS e(value) ` +
      `WHERE s.metadata IS NOT NULL AND s.state <> 'deleted' AND e.value IN ${digests}`,
    async tableNames(db) {
      const rows = await db.$queryRawUnsafe<{ name: string }[]>(
        "SELECT tablename::text AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
      );
      return rows.map((r) => r.name);
    },
    statementRunner: (db) => (isTransaction(db) ? transactionRunner(db) : poolRunner),
  };
}

/**
 * The dialect of each open catalog client and of each transaction opened on one. A WeakMap, not
 * a Prisma client extension: an extended client has another type than PrismaClient and
 * Prisma.TransactionClient, which every service is typed against.
 */
const registry = globalThis as unknown as { __strataDialects?: WeakMap<object, Dialect> };
// Process-wide, like the catalog handle (catalog.ts): `strata serve` runs Next's bundle of this
// code beside the CLI's, and a handle one bundle opened must be known to the other.
const dialects = (registry.__strataDialects ??= new WeakMap<object, Dialect>());

/** Records a handle's dialect: openCatalog for a client, inTransaction for each transaction. */
export function bindDialect(db: Db, dialect: Dialect): void {
  dialects.set(db, dialect);
}

/** The dialect of a catalog client or of a transaction opened on one with inTransaction. */
export function dialectOf(db: Db): Dialect {
  const dialect = dialects.get(db);
  if (!dialect) {
    throw new Error(
      "This database handle has no dialect: open catalogs with openCatalog and transactions with inTransaction.",
    );
  }
  return dialect;
}

/** The file a SQLite URL (`file:…`) names, without its query string. */
export function sqlitePath(url: string): string {
  return url.replace(/^file:/, "").replace(/\?.*$/, "");
}

/** The kind of catalog a URL names. */
export function kindOfUrl(url: string): DatabaseKind {
  if (url.startsWith("file:")) return "sqlite";
  if (/^postgres(ql)?:\/\//.test(url)) return "postgres";
  throw new Error("DATABASE_URL must start with file: or postgresql://");
}
