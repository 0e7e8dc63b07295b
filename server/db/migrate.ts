// Applies the committed migrations of prisma/<provider>/migrations, in name order, each in its
// own transaction, recording them in Prisma's own `_prisma_migrations` table so the Prisma CLI
// sees the same history. Concurrent callers (several processes starting at once) are serialized.
//
// A process that opens the catalog does not migrate it: it checks, with one query, that the
// newest migration applied is the newest this version knows (ensureMigrated), and only
// migrates when it is not. Each database's driver is loaded when that database is migrated.
import { createHash, randomUUID } from "node:crypto";
import { readFileSync, readdirSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ClientConfig } from "pg";
import { kindOfUrl, sqlitePath, type DatabaseKind } from "./dialect.ts";

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  kind: DatabaseKind;
  applied: string[];
  latest: string | null;
}

const PRISMA_DIR = fileURLToPath(new URL("../../prisma/", import.meta.url));

function migrationsDir(kind: DatabaseKind): string {
  return path.join(PRISMA_DIR, kind === "postgres" ? "postgres" : "sqlite", "migrations");
}

export function readMigrations(kind: DatabaseKind): Migration[] {
  const dir = migrationsDir(kind);
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(dir, entry.name, "migration.sql")))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

/**
 * The newest migration this version of Strata knows: the last folder, by name, that holds a
 * migration.sql (what readMigrations would end with, without reading the files).
 */
function latestMigration(kind: DatabaseKind): string | null {
  const dir = migrationsDir(kind);
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  for (let i = names.length - 1; i >= 0; i--) {
    const name = names[i] as string;
    if (existsSync(path.join(dir, name, "migration.sql"))) return name;
  }
  return null;
}

/**
 * Makes sure the catalog at `url` is migrated, at the cost of one query when it is:
 * `newestApplied` reads the newest applied migration on a connection the caller opened anyway
 * (health.ts has the query). When it is not this version's newest (a new database, one behind,
 * one a newer Strata migrated) or cannot be read, migrate() runs and decides: it applies what
 * is pending, or refuses a history it does not know.
 */
export async function ensureMigrated(url: string, newestApplied: () => Promise<string | null>): Promise<MigrateResult> {
  const kind = kindOfUrl(url);
  const latest = latestMigration(kind);
  const applied = await newestApplied().catch(() => undefined);
  if (applied !== undefined && applied === latest) return { kind, applied: [], latest };
  return migrate(url);
}

class MigrationError extends Error {
  readonly code = "MIGRATION_FAILED";
}

function checkHistory(migrations: Migration[], applied: Map<string, string>): Migration[] {
  const known = new Set(migrations.map((m) => m.name));
  for (const name of applied.keys()) {
    if (!known.has(name)) {
      throw new MigrationError(
        `The database has migration ${name}, which this version of Strata does not know. Use a newer Strata or another database.`,
      );
    }
  }
  for (const m of migrations) {
    const checksum = applied.get(m.name);
    if (checksum !== undefined && checksum !== m.checksum) {
      throw new MigrationError(`Migration ${m.name} was changed after it was applied to this database.`);
    }
  }
  return migrations.filter((m) => !applied.has(m.name));
}

const PG_HISTORY = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

const SQLITE_HISTORY = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" TEXT PRIMARY KEY NOT NULL,
  "checksum" TEXT NOT NULL,
  "finished_at" DATETIME,
  "migration_name" TEXT NOT NULL,
  "logs" TEXT,
  "rolled_back_at" DATETIME,
  "started_at" DATETIME NOT NULL DEFAULT current_timestamp,
  "applied_steps_count" INTEGER UNSIGNED NOT NULL DEFAULT 0
)`;

// An arbitrary constant: the advisory lock all Strata processes take while migrating.
const PG_MIGRATION_LOCK = 7_201_455_513;

async function migratePostgres(url: string, migrations: Migration[]): Promise<string[]> {
  const [{ default: pg }, { parseIntoClientConfig }] = await Promise.all([
    import("pg"),
    import("pg-connection-string"),
  ]);
  const client = new pg.Client(parseIntoClientConfig(url) as ClientConfig);
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PG_MIGRATION_LOCK]);
    await client.query(PG_HISTORY);
    const rows = await client.query<{ migration_name: string; checksum: string }>(
      `SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    );
    const pending = checkHistory(migrations, new Map(rows.rows.map((r) => [r.migration_name, r.checksum])));
    for (const m of pending) {
      await client.query("BEGIN");
      try {
        await client.query(m.sql);
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at, applied_steps_count) VALUES ($1, $2, $3, now(), 1)`,
          [randomUUID(), m.checksum, m.name],
        );
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK");
        throw new MigrationError(`Migration ${m.name} failed: ${(error as Error).message}`);
      }
    }
    return pending.map((m) => m.name);
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [PG_MIGRATION_LOCK]).catch(() => undefined);
    await client.end();
  }
}

async function migrateSqlite(url: string, migrations: Migration[]): Promise<string[]> {
  const { default: Database } = await import("better-sqlite3");
  const file = sqlitePath(url);
  if (file !== ":memory:") mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file, { timeout: 15_000 });
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("foreign_keys = ON");
    db.exec(SQLITE_HISTORY);
    const applied: string[] = [];
    // One migration per IMMEDIATE transaction (the write lock first, so a second process waits
    // instead of racing), re-reading the history each time: a failure keeps the ones before it.
    const applyNext = db.transaction((): boolean => {
      const rows = db
        .prepare(
          `SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
        )
        .all() as { migration_name: string; checksum: string }[];
      const next = checkHistory(migrations, new Map(rows.map((r) => [r.migration_name, r.checksum])))[0];
      if (!next) return false;
      try {
        db.exec(next.sql);
      } catch (error) {
        throw new MigrationError(`Migration ${next.name} failed: ${(error as Error).message}`);
      }
      db.prepare(
        `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at, applied_steps_count) VALUES (?, ?, ?, current_timestamp, 1)`,
      ).run(randomUUID(), next.checksum, next.name);
      applied.push(next.name);
      return true;
    });
    while (applyNext.immediate()) {
      // keep going until nothing is pending
    }
    return applied;
  } finally {
    db.close();
  }
}

/** Brings the database at url up to the latest migration. Safe to call from several processes. */
export async function migrate(url: string, options: { migrations?: Migration[] } = {}): Promise<MigrateResult> {
  const kind = kindOfUrl(url);
  const migrations = options.migrations ?? readMigrations(kind);
  const applied = kind === "postgres" ? await migratePostgres(url, migrations) : await migrateSqlite(url, migrations);
  return { kind, applied, latest: migrations.at(-1)?.name ?? null };
}
