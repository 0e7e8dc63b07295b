import type { Command } from "commander";
import type { Config } from "../../server/config/config.ts";
import type { WorkerEvent } from "../../server/jobs/worker.ts";
import { openMigratedCatalog } from "../catalog.ts";
import { CliError, EXIT, progressDone } from "../output.ts";

/** One line per job event on stderr (stdout stays free for scripts). */
/** What the configuration says about a worker, for `strata worker` and the one `strata serve` runs. */
export function workerSettings(config: Config) {
  return {
    dataDir: config.dataDir,
    schedule: { sweepIntervalSeconds: config.sweepIntervalSeconds, gcIntervalSeconds: config.gcIntervalSeconds },
    retry: { leaseSeconds: config.jobLeaseSeconds },
    onEvent: logWorkerEvent,
  };
}

export function logWorkerEvent(event: WorkerEvent): void {
  const line = (() => {
    switch (event.type) {
      case "claimed":
        return `job ${event.job.id} (${event.job.kind}) claimed, attempt ${event.job.attempt}`;
      case "completed":
        return `job ${event.job.id} (${event.job.kind}) completed`;
      case "failed":
        return `job ${event.job.id} (${event.job.kind}) failed [${event.failure.code}]: ${event.failure.message} → ${event.outcome}`;
      case "lost":
        return `job ${event.job.id} (${event.job.kind}) given up: ${event.reason}`;
      case "error":
        return `worker error: ${(event.error as Error)?.message ?? String(event.error)}`;
    }
  })();
  process.stderr.write(`strata worker: ${line}\n`);
}

/**
 * Test seam: STRATA_TEST_PAUSE_AT=<point> makes the worker announce `paused at <point>` on stderr
 * and block there (so a test can SIGKILL it at that exact point). Never set in production.
 */
function pauseSeam(): ((point: string) => void) | undefined {
  const at = process.env.STRATA_TEST_PAUSE_AT;
  if (!at) return undefined;
  return (point) => {
    if (point !== at) return;
    process.stderr.write(`strata worker: paused at ${point}\n`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120_000);
  };
}

export function registerWorker(program: Command): void {
  program
    .command("worker")
    .description("run capture and restore jobs addressed to this host, and the sweeper and collection on a schedule")
    .option("--host <name>", "the host name jobs are addressed to (default: STRATA_HOST, else the machine's name)")
    .option("--poll-ms <ms>", "how long to wait between polls when there is nothing to do", "1000")
    .action(async (opts: { host?: string; pollMs: string }) => {
      const [{ describeDatabase, loadConfig }, { hostNameSchema }, { startWorkerProcess }] = await Promise.all([
        import("../../server/config/config.ts"),
        import("../../server/domain/jobs.ts"),
        import("../../server/jobs/worker-process.ts"),
      ]);
      const config = loadConfig();
      const host = hostNameSchema.safeParse(opts.host ?? config.host);
      if (!host.success) throw new CliError(`--host: ${host.error.issues[0]?.message ?? "invalid"}`, EXIT.USAGE);
      const pollMs = Number(opts.pollMs);
      if (!Number.isInteger(pollMs) || pollMs < 10) throw new CliError("--poll-ms must be an integer ≥ 10", EXIT.USAGE);

      const { catalog } = await openMigratedCatalog(config.databaseUrl, { poolSize: 4 });
      const checkpoint = pauseSeam();
      const worker = await startWorkerProcess({
        catalog,
        ...workerSettings(config),
        host: host.data,
        pollIntervalMs: pollMs,
        housekeepingMs: Math.min(5_000, config.jobLeaseSeconds * 500),
        ...(checkpoint ? { checkpoint } : {}),
      });
      progressDone(
        `Worker ${worker.workerId} on host ${host.data} is running jobs from ${describeDatabase(config.databaseUrl)}`,
      );
      const stop = () => void worker.stop();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      await worker.done;
      await catalog.close();
    });
}
