import { userInfo } from "node:os";
import type { Command } from "commander";
import { collectAndAudit } from "../../server/gc/audited-collection.ts";
// The collector's defaults are shown by `strata gc collect --help`, so this module loads it.
import { DEFAULT_GC_SETTINGS, listCollectionRuns, type CollectResult } from "../../server/gc/collect-garbage.ts";
import { configureLogging } from "../../server/log/logger.ts";
import { withCatalog } from "../catalog.ts";
import { CliError, EXIT, emit } from "../output.ts";

/** Who runs the command, for the audit log: the operating-system user (the CLI has no sign-in). */
function cliActor(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return "cli";
  }
}

function whole(value: string, name: string, min = 0): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new CliError(`--${name} must be a whole number ≥ ${min}`, EXIT.USAGE);
  return n;
}

/** One run's figures per kind, as a person reads them; a dry run says what a run would do. */
function describeRun(result: Exclude<CollectResult, { status: "skipped" }>): string {
  const t = result.tally;
  const verb = result.dryRun ? "would delete" : "deleted";
  const head = result.dryRun
    ? `Dry run ${result.status === "failed" ? "failed" : "finished"}${result.errorCode ? ` [${result.errorCode}]` : ""}, nothing changed. A collection now:`
    : `Collection ${result.status}${result.errorCode ? ` [${result.errorCode}]` : ""}:`;
  return [
    head,
    `  pins:      ${result.dryRun ? "would close" : "closed"} ${t.pinsExpired} expired`,
    `  snapshots: ${result.dryRun ? "would release" : "released"} the heads of ${t.snapshotsReleased} retired (${t.headsReleased} head(s))`,
    `  layers:    ${verb} ${t.layersDeleted} (${t.layerBytes} bytes declared)`,
    `  blobs:     ${verb} ${t.blobsDeleted} and ${t.uploadsAbandoned} abandoned upload(s)`,
    `  freed:     ${t.bytesFreed} bytes${result.dryRun ? " (would be)" : ""}`,
  ].join("\n");
}

export function registerGc(program: Command): void {
  const gc = program.command("gc").description("garbage collection of layers and blobs");

  gc.command("collect")
    .description("run a collection (at most one at a time across every process on the database)")
    .option("--force", "run even if the last collection finished less than the interval ago")
    .option("--dry-run", "say what a run would delete and free, and change nothing (recorded as a dry run)")
    .option(
      "--grace <seconds>",
      "keep unreferenced blobs stored or reused this recently",
      String(DEFAULT_GC_SETTINGS.graceSeconds),
    )
    .option("--interval <seconds>", "at most one collection per this long", String(DEFAULT_GC_SETTINGS.intervalSeconds))
    .option("--batch <rows>", "rows per transaction", String(DEFAULT_GC_SETTINGS.batchSize))
    .option("--json", "print the result as JSON")
    .action(
      async (opts: {
        force?: boolean;
        dryRun?: boolean;
        grace: string;
        interval: string;
        batch: string;
        json?: boolean;
      }) => {
        await configureLogging();
        const actor = cliActor();
        const result = await withCatalog((db) =>
          collectAndAudit(db, {
            force: Boolean(opts.force),
            dryRun: Boolean(opts.dryRun),
            graceSeconds: whole(opts.grace, "grace"),
            intervalSeconds: whole(opts.interval, "interval"),
            batchSize: whole(opts.batch, "batch", 1),
            host: actor,
            actor: { type: "system", id: actor },
            reason: "run with strata gc collect",
          }),
        );
        if (result.status === "skipped") {
          const why = result.reason === "running" ? "another collection is running" : "the last one is too recent";
          emit(Boolean(opts.json), result, `Skipped: ${why} (until ${result.until.toISOString()}).`);
          return;
        }
        emit(Boolean(opts.json), result, describeRun(result));
        if (result.status === "failed") process.exitCode = EXIT.FAILURE;
      },
    );

  gc.command("release-heads")
    .description("release the heads of retired snapshots that no active pin protects")
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean }) => {
      const { releaseRetiredHeads } = await import("../../server/lineage/retirement.ts");
      const tally = await withCatalog((db) => releaseRetiredHeads(db));
      emit(
        Boolean(opts.json),
        tally,
        `Released ${tally.headsReleased} head(s) of ${tally.snapshotsReleased} snapshot(s); ` +
          `${tally.snapshotsKept} kept for active pins.`,
      );
    });

  gc.command("runs")
    .description("list recent collection runs")
    .option("--limit <n>", "how many", "20")
    .option("--json", "print the result as JSON")
    .action(async (opts: { limit: string; json?: boolean }) => {
      const runs = await withCatalog((db) => listCollectionRuns(db, { limit: whole(opts.limit, "limit", 1) }));
      const lines = runs.map(
        (r) =>
          `${r.startedAt.toISOString()}  ${(r.dryRun ? "dry-run" : "real").padEnd(7)} ${r.status.padEnd(8)} ` +
          `layers ${r.layersDeleted} blobs ${r.blobsDeleted} heads ${r.headsReleased} freed ${r.bytesFreed}` +
          `${r.host ? `  by ${r.host}` : ""}${r.errorCode ? `  ${r.errorCode}` : ""}`,
      );
      emit(Boolean(opts.json), runs, lines.join("\n") || "No collection runs yet.");
    });
}
