import type { Command } from "commander";
import { runMigrate } from "../catalog.ts";
import { emit } from "../output.ts";

export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("apply pending catalog migrations to DATABASE_URL (default: the embedded SQLite file)")
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean }) => {
      const { loadConfig } = await import("../../server/config/config.ts");
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
