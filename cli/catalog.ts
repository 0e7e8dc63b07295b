// Opening this machine's catalog for a command: the configuration, the database client and the
// migration check, each loaded when a command first opens the catalog (never by `strata --help`
// or by a command that does not use the database).
import type { Catalog, CatalogHandle } from "../server/db/client.ts";
import type { MigrateResult } from "../server/db/migrate.ts";
import { markStart } from "../server/log/start-phases.ts";
import { CliError, EXIT } from "./output.ts";

function databaseName(databaseUrl: string): string {
  return databaseUrl.startsWith("file:") ? "SQLite" : "PostgreSQL";
}

/** A migration that fails is a database failure (exit 4), named without the URL's password. */
export async function migrating(databaseUrl: string, run: () => Promise<MigrateResult>): Promise<MigrateResult> {
  try {
    return await run();
  } catch (error) {
    throw new CliError(
      `could not migrate the ${databaseName(databaseUrl)} catalog: ${(error as Error).message}`,
      EXIT.DATABASE,
    );
  }
}

/** Applies every pending migration (`strata migrate`): reads and checks the whole history. */
export async function runMigrate(databaseUrl: string): Promise<MigrateResult> {
  const { migrate } = await import("../server/db/migrate.ts");
  return migrating(databaseUrl, () => migrate(databaseUrl));
}

/**
 * Checks that the open catalog `db` at `databaseUrl` is migrated: one query on its connection
 * when it is (which also readies the client for the queries that follow), else a migration.
 */
export async function checkMigrated(databaseUrl: string, db: Catalog): Promise<MigrateResult> {
  const [{ ensureMigrated }, { newestAppliedMigration }] = await Promise.all([
    import("../server/db/migrate.ts"),
    import("../server/db/health.ts"),
  ]);
  const migrated = await migrating(databaseUrl, () => ensureMigrated(databaseUrl, () => newestAppliedMigration(db)));
  markStart("migrations-checked");
  return migrated;
}

/**
 * Opens the catalog at `databaseUrl` and checks that it is migrated (one query; it migrates when
 * it is not). The caller closes it.
 */
export async function openMigratedCatalog(
  databaseUrl: string,
  options: { poolSize: number },
): Promise<{ catalog: CatalogHandle; migrated: MigrateResult }> {
  const { openCatalog } = await import("../server/db/client.ts");
  markStart("catalog-loaded");
  const catalog = openCatalog(databaseUrl, options);
  try {
    const migrated = await checkMigrated(databaseUrl, catalog.db);
    return { catalog, migrated };
  } catch (error) {
    await catalog.close();
    throw error;
  }
}

/** Opens the configured catalog (checked to be migrated), runs fn, and closes it. */
export async function withCatalog<T>(fn: (db: Catalog) => Promise<T>): Promise<T> {
  const { loadConfig } = await import("../server/config/config.ts");
  const { catalog } = await openMigratedCatalog(loadConfig().databaseUrl, { poolSize: 2 });
  try {
    return await fn(catalog.db);
  } finally {
    await catalog.close();
  }
}
