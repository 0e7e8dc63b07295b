import { resolve } from "node:path";
import type { Command } from "commander";
import type { Config } from "../../server/config/config.ts";
import type { WorkerEvent } from "../../server/jobs/worker.ts";
import type { ReclaimedJob } from "../../server/jobs/queue.ts";
import { configureLogging, errorFields, logger, scrubText } from "../../server/log/logger.ts";
import { routeConsoleToLog } from "../../server/log/console-log.ts";
import { measure } from "../../server/log/measures.ts";
import { OutageLog, type OutageLine } from "../../server/jobs/outage-log.ts";
import { openMigratedCatalog } from "../catalog.ts";
import { CliError, EXIT } from "../output.ts";

/** What the configuration says about a worker, for `strata worker` and the one `strata serve` runs. */
export function workerSettings(config: Config) {
  // One per worker: its failed tries while the catalog is down make one line, not one each.
  const outage = new OutageLog();
  return {
    dataDir: config.dataDir,
    schedule: { sweepIntervalSeconds: config.sweepIntervalSeconds, gcIntervalSeconds: config.gcIntervalSeconds },
    retry: { leaseSeconds: config.jobLeaseSeconds },
    noWorkerSeconds: config.noWorkerSeconds,
    roots: config.workerRoots,
    agentRoots: config.workerAgentRoots,
    onEvent: (event: WorkerEvent) => logWorkerEvent(event, outage),
    onCatalogAnswer: () => logOutageLine(outage.answered()),
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

function logOutageLine(line: OutageLine | null): void {
  if (line) logger()[line.level](line.fields, line.msg);
}

/**
 * One structured line per job attempt (and per worker error) on stderr; stdout stays free for
 * scripts. An error that says the catalog is unreachable goes to `outage`, which logs the outage's
 * start, a line a minute while it lasts, and (through onCatalogAnswer) its end.
 */
export function logWorkerEvent(event: WorkerEvent, outage?: OutageLog): void {
  const log = logger();
  if (event.type === "error") {
    const noted = outage?.failed(event.error);
    if (noted?.handled) return logOutageLine(noted.line);
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
  measure({
    type: "job",
    kind: fields.kind,
    outcome: fields.outcome,
    host: fields.host ?? "",
    seconds: fields.durationMs / 1000,
  });
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

/** Collects a repeatable path option, absolute. */
function collectPaths(value: string, previous: string[] = []): string[] {
  return [...previous, resolve(value)];
}

/**
 * GET /metrics of a `strata worker`: its job attempts, lease expiries and hand-backs, on its own
 * port at STRATA_BIND, behind STRATA_METRICS_TOKEN as the app's. Without a port or a token it
 * serves nothing, and `where` says why. Measures count from the start; the port is opened by
 * `listen`, once the worker runs (a worker that fails to start leaves nothing listening).
 */
async function workerMetrics(config: Config, port: number | undefined) {
  if (port === undefined || !config.metricsToken) {
    const why =
      port === undefined ? "no --metrics-port or STRATA_WORKER_METRICS_PORT" : "STRATA_METRICS_TOKEN is not set";
    return { where: `none (${why})`, listen: async () => undefined, close: async () => undefined };
  }
  const token = config.metricsToken;
  const { listenForMetrics, METRICS_PATH, startMetrics } = await import("../../server/log/metrics.ts");
  const metrics = startMetrics();
  let listening: { close(): Promise<void> } | null = null;
  return {
    where: `http://${config.bind}:${port}${METRICS_PATH}`,
    async listen() {
      listening = await listenForMetrics({ metrics, token, port, bind: config.bind }).catch(
        (error: NodeJS.ErrnoException) => {
          if (error.code !== "EADDRINUSE") throw error;
          throw new CliError(`metrics port ${port} is in use: set --metrics-port to another port`, EXIT.CONFIG);
        },
      );
    },
    async close() {
      await listening?.close();
      metrics.stop();
    },
  };
}

export function registerWorker(program: Command): void {
  program
    .command("worker")
    .description("run capture and restore jobs addressed to this host, and the sweeper and collection on a schedule")
    .option("--host <name>", "the host name jobs are addressed to (default: STRATA_HOST, else the machine's name)")
    .option("--poll-ms <ms>", "how long to wait between polls when there is nothing to do", "1000")
    .option(
      "--metrics-port <port>",
      "serve GET /metrics on this port at STRATA_BIND, behind STRATA_METRICS_TOKEN (default: STRATA_WORKER_METRICS_PORT, else none)",
    )
    .option(
      "--root <dir>",
      "a directory jobs may capture from and restore into (repeatable; default: STRATA_WORKER_ROOTS, else the data directory's worktrees/ and restored/)",
      collectPaths,
    )
    .option(
      "--agent-root <dir>",
      "a directory in which each agent owns the folder named after it (repeatable; default: STRATA_WORKER_AGENT_ROOTS, else the data directory's agents/)",
      collectPaths,
    )
    .action(
      async (opts: { host?: string; pollMs: string; metricsPort?: string; root?: string[]; agentRoot?: string[] }) => {
        const [{ describeDatabase, loadConfig }, { hostNameSchema }, { startWorkerProcess }] = await Promise.all([
          import("../../server/config/config.ts"),
          import("../../server/domain/jobs.ts"),
          import("../../server/jobs/worker-process.ts"),
        ]);
        const config = loadConfig();
        await configureLogging({ level: config.logLevel });
        // Libraries writing with console.* (Prisma's warnings) log JSON lines like the worker's own.
        routeConsoleToLog("console");
        const host = hostNameSchema.safeParse(opts.host ?? config.host);
        if (!host.success) throw new CliError(`--host: ${host.error.issues[0]?.message ?? "invalid"}`, EXIT.USAGE);
        const pollMs = Number(opts.pollMs);
        if (!Number.isInteger(pollMs) || pollMs < 10)
          throw new CliError("--poll-ms must be an integer ≥ 10", EXIT.USAGE);
        const metricsPort = opts.metricsPort === undefined ? config.workerMetricsPort : Number(opts.metricsPort);
        if (metricsPort !== undefined && !(Number.isInteger(metricsPort) && metricsPort >= 1 && metricsPort <= 65535)) {
          throw new CliError("--metrics-port must be a port number (1–65535)", EXIT.USAGE);
        }
        const metrics = await workerMetrics(config, metricsPort);

        const { catalog } = await openMigratedCatalog(config.databaseUrl, { poolSize: 4 });
        const checkpoint = pauseSeam();
        const worker = await startWorkerProcess({
          catalog,
          ...workerSettings(config),
          // Roots given as flags replace the configured ones (and the defaults) as a whole.
          ...(opts.root || opts.agentRoot ? { roots: opts.root ?? [], agentRoots: opts.agentRoot ?? [] } : {}),
          host: host.data,
          pollIntervalMs: pollMs,
          housekeepingMs: Math.min(5_000, config.jobLeaseSeconds * 500),
          ...(checkpoint ? { checkpoint } : {}),
        });
        await metrics.listen().catch(async (error: unknown) => {
          await worker.stop();
          await catalog.close();
          throw error;
        });
        logger().info(
          {
            workerId: worker.workerId,
            host: host.data,
            database: describeDatabase(config.databaseUrl),
            metrics: metrics.where,
            roots: worker.roots.roots,
            agentRoots: worker.roots.agentRoots,
          },
          "worker started",
        );
        const stop = () => void worker.stop();
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
        await worker.done;
        await Promise.all([catalog.close(), metrics.close()]);
      },
    );
}
