import type { Db } from "./client.ts";
import { dialectOf, type DatabaseKind } from "./dialect.ts";

export interface Health {
  status: "ok";
  database: DatabaseKind;
  migration: string | null;
  migrationsApplied: number;
  databaseTime: string;
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
