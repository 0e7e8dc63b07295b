import type { Command } from "commander";
import type { Config } from "../../server/config/config.ts";
import type { WorkerEvent } from "../../server/jobs/worker.ts";
import type { ReclaimedJob } from "../../server/jobs/queue.ts";
import { configureLogging, errorFields, logger, scrubText } from "../../server/log/logger.ts";
import { measure } from "../../server/log/measures.ts";
import { openMigratedCatalog } from "../catalog.ts";
import { CliError, EXIT } from "../output.ts";

/** What the configuration says about a worker, for `strata worker` and the one `strata serve` runs. */
export function workerSettings(config: Config) {
  return {
    dataDir: config.dataDir,
    schedule: { sweepIntervalSeconds: config.sweepIntervalSeconds, gcIntervalSeconds: config.gcIntervalSeconds },
    retry: { leaseSeconds: config.jobLeaseSeconds },
    onEvent: logWorkerEvent,
    onReclaim: logReclaimed,
  };
}

/** One line per job handed back at once because the process that held it is gone. */
function logReclaimed(jobs: ReclaimedJob[]): void {
  for (const job of jobs) {
    logger().warn(
      { jobId: job.id, kind: job.kind, attempt: job.attempt, deadHolder: job.claimedBy, outcome: job.outcome },
      "job of a dead worker handed back",
    );
  }
}

/** One job attempt as the worker reports it (server/jobs/worker.ts): flat, without job data. */
type AttemptFacts = Extract<WorkerEvent, { type: "claimed" }>["facts"];

/** The fields of an attempt's log line; the cause's message with tokens and credentials blanked. */
function attemptFields(facts: AttemptFacts) {
  return {
    jobId: facts.jobId,
    kind: facts.kind,
    host: facts.host,
    workerId: facts.workerId,
    attempt: facts.attempt,
    maxAttempts: facts.maxAttempts,
    outcome: facts.outcome,
    ...(facts.code ? { cause: { code: facts.code, message: scrubText(facts.message ?? "") } } : {}),
    durationMs: facts.durationMs,
  };
}

/** One structured line per job attempt (and per worker error) on stderr; stdout stays free for scripts. */
export function logWorkerEvent(event: WorkerEvent): void {
  const log = logger();
  if (event.type === "error") {
    log.error({ ...(event.facts ? attemptFields(event.facts) : {}), err: errorFields(event.error) }, "worker error");
    return;
  }
  const fields = attemptFields(event.facts);
  if (event.type === "claimed") {
    log.debug(fields, "job claimed");
    return;
  }
  if (fields.outcome === "completed") log.info(fields, "job attempt");
  else if (fields.outcome === "retry") log.warn(fields, "job attempt");
  else log.error(fields, "job attempt");
  measure({ type: "job", kind: fields.kind, outcome: fields.outcome, seconds: fields.durationMs / 1000 });
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
      await configureLogging({ level: config.logLevel });
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
      logger().info(
        { workerId: worker.workerId, host: host.data, database: describeDatabase(config.databaseUrl) },
        "worker started",
      );
      const stop = () => void worker.stop();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      await worker.done;
      await catalog.close();
    });
}
