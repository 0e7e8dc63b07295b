import type { DatabaseKind, Db } from "./client.ts";

export interface Health {
  status: "ok";
  database: DatabaseKind;
  migration: string | null;
  migrationsApplied: number;
  databaseTime: string;
}

/** Reports the database kind, the latest applied migration and the database's clock. */
export async function getHealth(db: Db, kind: DatabaseKind): Promise<Health> {
  const rows = await db.$queryRawUnsafe<{ migration_name: string }[]>(
    `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name`,
  );
  const now = await databaseNow(db, kind);
  return {
    status: "ok",
    database: kind,
    migration: rows.at(-1)?.migration_name ?? null,
    migrationsApplied: rows.length,
    databaseTime: now.toISOString(),
  };
}

/** The database's clock: every process sharing a catalog agrees on it. */
export async function databaseNow(db: Db, kind: DatabaseKind): Promise<Date> {
  if (kind === "postgres") {
    const [row] = await db.$queryRawUnsafe<{ now: Date }[]>("SELECT clock_timestamp() AS now");
    return new Date(row!.now);
  }
  const [row] = await db.$queryRawUnsafe<{ now: string }[]>("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now");
  return new Date(row!.now);
}
