import type { Command } from "commander";
import { loadConfig } from "../../server/config/config.ts";
import { migrate } from "../../server/db/migrate.ts";
import { CliError, EXIT, emit } from "../output.ts";

export async function runMigrate(databaseUrl: string) {
  try {
    return await migrate(databaseUrl);
  } catch (error) {
    throw new CliError(
      `could not migrate the ${databaseUrl.startsWith("file:") ? "SQLite" : "PostgreSQL"} catalog: ${(error as Error).message}`,
      EXIT.DATABASE,
    );
  }
}

export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("apply pending catalog migrations to DATABASE_URL (default: the embedded SQLite file)")
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      const result = await runMigrate(config.databaseUrl);
      emit(
        Boolean(opts.json),
        result,
        result.applied.length
          ? `Applied ${result.applied.length} migration(s) to the ${result.kind} catalog: ${result.applied.join(", ")}`
          : `The ${result.kind} catalog is up to date (${result.latest ?? "no migrations"}).`,
      );
    });
}
