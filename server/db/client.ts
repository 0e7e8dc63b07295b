// The Prisma client factory for both providers. The app is typed against the PostgreSQL
// client; the SQLite client is generated from the same models and has the same API.
import { mkdirSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { parseIntoClientConfig } from "pg-connection-string";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaClient, type Prisma } from "./generated/postgres/client.ts";
import { PrismaClient as SqlitePrismaClient } from "./generated/sqlite/client.ts";
import { serializeSqlite } from "./sqlite-serial.ts";
import { isRetryableConflict } from "./errors.ts";
import { logger, scrubText } from "../log/logger.ts";
import {
  bindDialect,
  dialectOf,
  kindOfUrl,
  postgresDialect,
  sqliteDialect,
  sqlitePath,
  type Dialect,
} from "./dialect.ts";

export { sqlitePath };

export type { DatabaseKind } from "./dialect.ts";
import type { Db } from "./handle.ts";

export type { Db };
export type Catalog = PrismaClient;

/**
 * The pg client of a PostgreSQL catalog. Two things on top of pg's:
 * - Catalog columns typed `name`/`char` (OIDs 19/18), which Prisma's adapter cannot deserialize
 *   (prisma/orm#27403), come back as text, as they are for every purpose here.
 * - Queries go one after another. Inside an interactive transaction Prisma loads a nested
 *   select's relations concurrently on the transaction's one connection; pg queues such calls
 *   itself, with a deprecation warning, and pg 9 will refuse them. Queued here, they run as they
 *   always did (pg never overlapped them on the wire) and nothing depends on pg's queue.
 */
class CatalogPgClient extends pg.Client {
  #tail: Promise<unknown> = Promise.resolve();

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pg's overloads are untypable here
  override query(...args: any[]): any {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const send = () => (super.query as (...a: any[]) => any)(...args);
    // Callback and submittable (cursor, stream) calls keep pg's own handling.
    const first = args[0] as { submit?: unknown } | undefined;
    if (typeof args.at(-1) === "function" || typeof first?.submit === "function") return send();
    const result = this.#tail.then(send, send);
    this.#tail = result.catch(() => undefined);
    return result.then(relabelTextTypes, (error: unknown) => {
      // Prisma 6.19 gives a transaction's connection back to the pool only after its COMMIT or
      // ROLLBACK succeeded: when that statement fails (the server went away, a serialization
      // failure at commit) the connection would stay taken for ever, and a few such failures
      // exhaust the pool. Given back broken (pg then discards it) instead.
      if (endsTransaction(first)) (this as { release?: (error: Error) => void }).release?.(asError(error));
      throw error;
    });
  }
}

function endsTransaction(query: unknown): boolean {
  const text = typeof query === "string" ? query : (query as { text?: unknown } | undefined)?.text;
  return text === "COMMIT" || text === "ROLLBACK";
}

const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

function relabelTextTypes<T>(result: T): T {
  const fields = (result as { fields?: { dataTypeID: number }[] } | undefined)?.fields;
  for (const field of fields ?? []) {
    if (field.dataTypeID === 18 || field.dataTypeID === 19) field.dataTypeID = 25;
  }
  return result;
}

/** How long PostgreSQL lets a catalog connection sit idle inside a transaction. */
const IDLE_TRANSACTION_MS = 30_000;

function createPgPool(url: string, max = 10, connectTimeoutMs = 10_000): pg.Pool {
  // The URL parsed into discrete fields with pg-connection-string, not handed to pg as
  // connectionString: migrate.ts and the test support connect the same way, so every
  // connection to the catalog reads one URL alike.
  const config = parseIntoClientConfig(url);
  return new pg.Pool({
    ...(config as pg.PoolConfig),
    max,
    Client: CatalogPgClient,
    allowExitOnIdle: true,
    // A server that never answers (a host dropping packets, a pool that stays exhausted) is an
    // outage the caller hears about (UNAVAILABLE) after a while, not a request that hangs until
    // the operating system gives up.
    connectionTimeoutMillis: connectTimeoutMs,
    // A transaction whose process stopped answering (paused, hung, cut off) is ended by the
    // server after 30 s idle, releasing its row locks: a job row a paused worker locked would
    // otherwise stay locked, and its job out of everyone's reach, for as long as the pause.
    // Strata's own transactions give up after 20 s (inTransaction).
    options: [(config as pg.PoolConfig).options, `-c idle_in_transaction_session_timeout=${IDLE_TRANSACTION_MS}`]
      .filter(Boolean)
      .join(" "),
  });
}

export interface CatalogHandle {
  db: Catalog;
  /** Every difference between the providers, chosen here once (server/db/dialect.ts). */
  dialect: Dialect;
  url: string;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** PostgreSQL pool size. */
  poolSize?: number;
  /** PostgreSQL: how long getting a connection may take, from the pool or the server (default 10 s). */
  connectTimeoutMs?: number;
}

/** Opens the catalog database. It does not migrate: call migrate() first. */
export function openCatalog(url: string, options: OpenOptions = {}): CatalogHandle {
  if (kindOfUrl(url) === "postgres") {
    const pool = createPgPool(url, options.poolSize, options.connectTimeoutMs);
    const adapter = new PrismaPg(pool, { disposeExternalPool: true });
    const db = new PrismaClient({ adapter });
    const dialect = postgresDialect(pool);
    bindDialect(db, dialect);
    // An idle connection the server ends (a restart, an administrator's pg_terminate_backend)
    // leaves the pool, which opens another on next use. Without a listener pg raises it as an
    // unhandled 'error' that ends the process: Prisma's adapter adds one only once Prisma has
    // connected, which a process running only the pool's own statements (the acquire) never did.
    // Logged at debug: the pool replaces the connection by itself, and an outage has its own
    // lines (server/jobs/outage-log.ts) instead of one per pooled connection.
    pool.on("error", (error) =>
      logger().debug(
        // An expected event, not a defect: its SQLSTATE (57P01 for a terminated backend) and message, no stack.
        { sqlState: (error as { code?: unknown }).code, message: scrubText(error.message) },
        "the catalog lost an idle PostgreSQL connection",
      ),
    );
    return {
      db,
      dialect,
      url,
      close: async () => {
        await db.$disconnect();
        // Prisma ends the pool only if it connected; the pool's own statements may have used it alone.
        if (!pool.ended) await pool.end();
      },
    };
  }
  const file = sqlitePath(url);
  if (file !== ":memory:") mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const sqlite = serializeSqlite(new PrismaBetterSQLite3({ url: `file:${file}`, timeout: 15_000 }));
  // Same models, same API: the SQLite client is used through the PostgreSQL client's type.
  const db = new SqlitePrismaClient({ adapter: sqlite.factory }) as unknown as Catalog;
  const dialect = sqliteDialect(async () => {
    if (!sqlite.connected()) await db.$connect();
    return sqlite.connected()!;
  });
  bindDialect(db, dialect);
  return { db, dialect, url, close: () => db.$disconnect() };
}

/**
 * Runs fn in a transaction, reusing the caller's when db already is one. A transaction this
 * call owns is retried whole on serialization conflicts (and on RetryTransaction); inside a
 * caller's transaction the error goes up to the owner, which retries everything.
 */
export async function inTransaction<T>(
  db: Db,
  fn: (tx: Prisma.TransactionClient) => Promise<T>,
  options?: { isolationLevel?: Prisma.TransactionIsolationLevel; timeout?: number; attempts?: number },
): Promise<T> {
  if (!("$transaction" in db)) return fn(db);
  const dialect = dialectOf(db);
  return retryConflicts(
    () =>
      db.$transaction(
        (tx) => {
          bindDialect(tx, dialect);
          return fn(tx);
        },
        {
          maxWait: 10_000,
          timeout: options?.timeout ?? 20_000,
          ...(options?.isolationLevel ? { isolationLevel: options.isolationLevel } : {}),
        },
      ),
    options?.attempts,
  );
}

/**
 * Runs fn again, after a short random pause, while it fails with a serialization conflict, a
 * deadlock, SQLite busy or RetryTransaction; the last error goes up after `attempts` tries.
 */
export async function retryConflicts<T>(fn: () => Promise<T>, attempts = 10): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await fn();
    } catch (error) {
      if (attempt >= attempts || !isRetryableConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 8 * attempt));
    }
  }
}
