import type { Command } from "commander";
import { DEFAULT_SWEEP_SETTINGS } from "../../server/domain/retention.ts";
import { withCatalog } from "../catalog.ts";
import { CliError, EXIT, emit } from "../output.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

function days(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new CliError(`--${name} must be a positive number of days`, EXIT.USAGE);
  return n * DAY_MS;
}

export function registerSweep(program: Command): void {
  program
    .command("sweep")
    .description("retire stale checkpoint heads and hand expired snapshots to garbage collection")
    .option("--stale-days <days>", "retire heads neither captured nor restored for this long", "14")
    .option("--retention-days <days>", "keep superseded, retired and failed snapshots this long", "7")
    .option("--json", "print the result as JSON")
    .action(async (opts: { staleDays: string; retentionDays: string; json?: boolean }) => {
      const settings = {
        ...DEFAULT_SWEEP_SETTINGS,
        staleAfterMs: days(opts.staleDays, "stale-days"),
        retentionMs: days(opts.retentionDays, "retention-days"),
      };
      const [{ sweepSnapshots }, { sweepDependencyCaches }] = await Promise.all([
        import("../../server/lineage/sweeper.ts"),
        import("../../server/caches/sweep-dependency-caches.ts"),
      ]);
      const now = new Date();
      const [result, caches] = await withCatalog(
        async (db) =>
          [
            await sweepSnapshots(db, { now, settings }),
            await sweepDependencyCaches(db, { now, retentionMs: settings.retentionMs }),
          ] as const,
      );
      const moved = result.movedToDeleting;
      const failed = [...result.reclaimed.failed, ...caches.failed];
      emit(
        Boolean(opts.json),
        { ...result, dependencyCaches: caches },
        `Retired ${result.staleCheckpointIds.length} stale checkpoint head(s) and ${result.staleLineageIds.length} ` +
          `lineage(s); moved ${moved.superseded + moved.retired + moved.failed} snapshot(s) to deleting ` +
          `(${moved.superseded} superseded, ${moved.retired} retired, ${moved.failed} failed); ` +
          `${result.keptForPins} kept for active pins; deleted ${result.reclaimed.deleted} snapshot artifact(s) and ` +
          `${caches.deleted} dependency cache(s) through their backends` +
          (failed.length > 0
            ? `; ${failed.length} delete(s) failed and will be tried again (${failed[0]!.error})`
            : "") +
          ".",
      );
    });
}
