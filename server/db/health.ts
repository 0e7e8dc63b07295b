import type { Db } from "./client.ts";
import { dialectOf, type DatabaseKind } from "./dialect.ts";

export interface Health {
  status: "ok";
  database: DatabaseKind;
  migration: string | null;
  migrationsApplied: number;
  databaseTime: string;
}

/** The newest migration applied to a catalog (column `name`), the same SQL on both databases. */
export const NEWEST_APPLIED_MIGRATION = `SELECT migration_name AS name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name DESC LIMIT 1`;

/** The newest migration applied to the catalog, or null; fails when it has no migration history. */
export async function newestAppliedMigration(db: Db): Promise<string | null> {
  const rows = await db.$queryRawUnsafe<{ name: string }[]>(NEWEST_APPLIED_MIGRATION);
  return rows[0]?.name ?? null;
}

/** Reports the database kind, the latest applied migration and the database's clock. */
export async function getHealth(db: Db): Promise<Health> {
  const dialect = dialectOf(db);
  const rows = await db.$queryRawUnsafe<{ migration_name: string }[]>(
    `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name`,
  );
  const now = await dialect.now(db);
  return {
    status: "ok",
    database: dialect.kind,
    migration: rows.at(-1)?.migration_name ?? null,
    migrationsApplied: rows.length,
    databaseTime: now.toISOString(),
  };
}
