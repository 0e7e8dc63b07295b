import { spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import type next from "next";
import { describeDatabase, loadConfig, type Config } from "../../server/config/config.ts";
import { getCatalog } from "../../server/db/catalog.ts";
import { openCatalog } from "../../server/db/client.ts";
import { readQueueDepth } from "../../server/jobs/queue-depth.ts";
import { handleTrpcNodeRequest, TRPC_ENDPOINT } from "../../server/trpc/http-handler.ts";
import { createContext } from "../../server/trpc/init.ts";
import type { WorkerProcess } from "../../server/jobs/worker-process.ts";
import { JobQueue } from "../../server/jobs/queue.ts";
import { failJobsWithoutWorker } from "../../server/jobs/worker-hosts.ts";
import { configureLogging, errorFields, logger } from "../../server/log/logger.ts";
import { answerMetrics, METRICS_PATH, startMetrics } from "../../server/log/metrics.ts";
import { routeConsoleToLog } from "../../server/log/console-log.ts";
import { createObservedServer } from "../../server/log/request-log.ts";
import { markStart, startPhases } from "../../server/log/start-phases.ts";
import { CliError, EXIT, progressDone } from "../output.ts";
import { checkMigrated } from "../catalog.ts";
import { workerSettings } from "./worker.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SOURCES = ["app", "components", "server", "public", "next.config.mjs", "package.json"];

/** The newest modification time under the app's sources (generated code excluded). */
function newestSource(entry: string): number {
  const full = path.join(ROOT, entry);
  if (!existsSync(full)) return 0;
  const stat = statSync(full);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const child of readdirSync(full)) {
    if (child === "generated" || child === "node_modules") continue;
    newest = Math.max(newest, newestSource(path.join(entry, child)));
  }
  return newest;
}

function buildIsCurrent(): boolean {
  const buildId = path.join(ROOT, ".next", "BUILD_ID");
  if (!existsSync(buildId)) return false;
  const built = statSync(buildId).mtimeMs;
  return SOURCES.every((s) => newestSource(s) <= built);
}

/**
 * Builds the dashboard. On a terminal the build shows its progress; otherwise (a JSON log) its
 * output is kept and the build leaves one line, its output shown in full only when it fails.
 */
async function buildApp(): Promise<void> {
  const terminal = process.stderr.isTTY === true;
  if (terminal) progressDone("Building the dashboard (first start or sources changed; about 30 s)…");
  else logger().info("building the dashboard (first start or sources changed)");
  const started = Date.now();
  let output = "";
  const keep = (chunk: Buffer) => void (output += chunk.toString());
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, "node_modules", "next", "dist", "bin", "next"), "build"], {
      cwd: ROOT,
      stdio: ["ignore", terminal ? "inherit" : "pipe", terminal ? "inherit" : "pipe"],
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
    });
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code === 0) return resolve();
      if (!terminal) process.stderr.write(output);
      reject(new CliError(`next build failed (exit ${code})`));
    });
  });
  if (!terminal) {
    const warnings = output.match(/^Warning:/gm)?.length ?? 0;
    logger().info({ durationMs: Date.now() - started, warnings }, "dashboard built");
  }
}

/**
 * Answers a node request for a plain JSON tRPC call with the app's handler and context (the
 * same as the Next route's); false, having read nothing, for any other request.
 */
function apiHandler(): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  return (req, res) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else if (value !== undefined) headers.set(name, value);
    }
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
    return handleTrpcNodeRequest(req, res, { url, headers }, () => createContext({ req: { headers } }));
  };
}

/** An unexpected failure of a request: logged (with the request's id), answered as INTERNAL. */
function failed(res: ServerResponse, error: unknown): void {
  logger().error({ err: errorFields(error) }, "request failed");
  if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { code: "INTERNAL", message: "The request failed unexpectedly." } }));
}

/** Starts a worker inside this process for STRATA_HOST. */
async function startServeWorker(config: Config, enabled: boolean): Promise<WorkerProcess | null> {
  if (!enabled) return null;
  // Loaded here, after the server listens: the job handlers are not the API's.
  const { startWorkerProcess } = await import("../../server/jobs/worker-process.ts");
  const catalog = openCatalog(config.databaseUrl, { poolSize: 4 });
  const worker = await startWorkerProcess({
    ...workerSettings(config),
    catalog,
    host: config.host,
  });
  logger().info({ workerId: worker.workerId, host: config.host }, "worker started (--no-worker turns it off)");
  return {
    ...worker,
    stop: () => worker.stop().finally(() => catalog.close()),
  };
}

/** How often an app without a worker of its own looks for jobs no worker will come for. */
const NO_WORKER_CHECK_MS = 10_000;

/**
 * Without a worker in this process (--no-worker), the app itself fails the jobs addressed to a
 * host that has had no live worker for STRATA_NO_WORKER_SECONDS (NO_WORKER), as every worker's
 * housekeeping does: with no worker anywhere, nothing else would. Returns the stop.
 */
function startNoWorkerCheck(config: Config): () => void {
  const queue = new JobQueue(getCatalog().db);
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    failJobsWithoutWorker(queue, { afterSeconds: config.noWorkerSeconds })
      .catch((error: unknown) => logger().error({ err: errorFields(error) }, "no-worker check failed"))
      .finally(() => (checking = false));
  }, NO_WORKER_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

type NextApp = ReturnType<typeof next>;
type RequestHandler = ReturnType<NextApp["getRequestHandler"]>;

/** Next.js, loaded and prepared (in production it loads every route's module first). */
async function prepareNext(options: {
  dev: boolean;
  config: Config;
}): Promise<{ app: NextApp; handle: RequestHandler }> {
  process.env.NEXT_TELEMETRY_DISABLED = "1";
  const { default: createNext } = await import("next");
  markStart("next-loaded");
  const app = createNext({ dev: options.dev, dir: ROOT, hostname: options.config.bind, port: options.config.port });
  await app.prepare();
  markStart("next-prepared");
  return { app, handle: app.getRequestHandler() };
}

export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("migrate the catalog, then serve the dashboard and the API")
    .option("--dev", "run Next.js in development mode (hot reload)")
    .option("--rebuild", "rebuild the dashboard even if the build looks current")
    .option("--no-worker", "do not run a worker in this process (run `strata worker` elsewhere)")
    .action(async (opts: { dev?: boolean; rebuild?: boolean; worker: boolean }) => {
      const config = loadConfig();
      await configureLogging({ level: config.logLevel });
      // Next.js (and any other library) writes with console.*: those lines go through the log too.
      routeConsoleToLog("console");
      const metricsToken = config.metricsToken;
      // The app's own catalog, checked with one query (migrated only when it is not): the API
      // answers on it as soon as the server listens.
      const migrated = await checkMigrated(config.databaseUrl, getCatalog().db);
      logger().info(
        {
          database: describeDatabase(config.databaseUrl),
          migration: migrated.latest ?? null,
          appliedNow: migrated.applied.length,
        },
        "catalog ready",
      );
      const dev = Boolean(opts.dev);
      if (!dev && (opts.rebuild || !buildIsCurrent())) await buildApp();
      markStart("app-build-checked");

      // Next.js loads and prepares (about a second, several under load) while the server already
      // listens and answers what does not need it: tRPC calls and /metrics. Anything for Next
      // waits until it is ready, then takes the same path as every later request. It begins once
      // the worker (if any) has polled once, whose first claim so waits for none of Next's loading.
      let beginNext: () => void = () => undefined;
      const nextReady = new Promise<void>((resolve) => (beginNext = resolve)).then(() => prepareNext({ dev, config }));
      // Its failure is handled below, once the server listens; not an unhandled rejection before.
      nextReady.catch(() => undefined);
      let handle: RequestHandler | null = null;
      const toNext = (req: IncomingMessage, res: ServerResponse): Promise<void> =>
        handle
          ? handle(req, res)
          : nextReady.then(
              (ready) => ready.handle(req, res),
              (error: unknown) => failed(res, error),
            );
      const serveApi = apiHandler();
      // The queue's depth is read from the app's catalog at each scrape.
      const metrics = metricsToken ? startMetrics({ queueDepth: () => readQueueDepth(getCatalog().db) }) : null;
      // Every request gets its one log line, its measures and X-Request-Id (createObservedServer).
      const server = createObservedServer({}, (req, res) => {
        if (req.url === METRICS_PATH || req.url?.startsWith(`${METRICS_PATH}?`)) {
          void answerMetrics(req, res, { metrics, token: metricsToken }).catch((error: unknown) => failed(res, error));
          return;
        }
        // Agents' tRPC calls are answered here, before Next (whose request conversion costs
        // more CPU than a small call); anything else, and any call this path declines, goes
        // to Next, whose route serves the same handler.
        if (req.url?.startsWith(TRPC_ENDPOINT)) {
          void serveApi(req, res)
            .then((answered) => (answered ? undefined : toNext(req, res)))
            .catch((error: unknown) => failed(res, error));
          return;
        }
        void toNext(req, res);
      });
      await new Promise<void>((resolve, reject) => {
        server.once("error", (error: NodeJS.ErrnoException) =>
          reject(
            error.code === "EADDRINUSE"
              ? new CliError(`port ${config.port} is in use: set PORT to another port`, EXIT.CONFIG)
              : error,
          ),
        );
        server.listen(config.port, config.bind, resolve);
      });
      markStart("listening");

      // The quick start's promise: dashboard, API and a worker from one `npm start`.
      const [started] = await Promise.allSettled([startServeWorker(config, opts.worker)]);
      if (started.status === "fulfilled" && started.value) {
        // Not longer than a second, though: a slow catalog must not hold up the dashboard too.
        await Promise.race([started.value.firstPoll, started.value.done, delay(1_000, undefined, { ref: false })]);
      }
      beginNext();
      const [prepared] = await Promise.allSettled([nextReady]);
      if (started.status === "rejected" || prepared.status === "rejected") {
        // Nothing is left running: the command fails as it did before it listened.
        server.close();
        await Promise.allSettled([
          started.status === "fulfilled" ? started.value?.stop() : undefined,
          prepared.status === "fulfilled" ? prepared.value.app.close() : undefined,
        ]);
        throw started.status === "rejected" ? started.reason : (prepared as PromiseRejectedResult).reason;
      }
      const worker = started.value;
      const { app } = prepared.value;
      handle = prepared.value.handle;
      const shown = config.bind === "0.0.0.0" ? "localhost" : config.bind;
      logger().info(
        { url: `http://${shown}:${config.port}`, metrics: metrics ? METRICS_PATH : null, startMs: startPhases() },
        "serving the dashboard and API",
      );
      const stopNoWorkerCheck = worker ? null : startNoWorkerCheck(config);

      const stop = () => {
        stopNoWorkerCheck?.();
        server.close();
        void Promise.all([app.close(), worker?.stop()]).finally(() => process.exit(0));
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
}
