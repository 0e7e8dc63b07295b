// GET /metrics in the Prometheus text format (prom-client), for the process that serves it: its
// requests, acquires, the acquire statements on PostgreSQL, job attempts, lease expiries and
// hand-backs (of the worker inside `strata serve`, or of a `strata worker` given a metrics port),
// collection and sweep runs, and — where a queue reader is given (`strata serve`) — the queue's
// depth read from the catalog at each scrape. Behind STRATA_METRICS_TOKEN: none configured →
// 404, a wrong or missing token → 401.
import { timingSafeEqual, createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { setMeasureSink } from "./measures.ts";

export const METRICS_PATH = "/metrics";

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** A statement's round trip: from a millisecond up. */
const STATEMENT_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Requests per coalesced statement (at most MAX_BATCH of server/acquire/acquire-statement.ts). */
const BATCH_SIZES = [1, 2, 4, 8, 16, 32];
const LONG_SECONDS = [0.05, 0.25, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600];

export interface Metrics {
  registry: Registry;
  /** Stops collecting (the measure sink is removed). */
  stop(): void;
}

/** One host and kind's open jobs (server/jobs/queue-depth.ts reads them; host null: maintenance). */
interface QueueDepth {
  host: string | null;
  kind: string;
  waiting: number;
  active: number;
  oldestWaitingSince: Date | null;
}

export interface MetricsOptions {
  /** The catalog's open jobs by host and kind, read at every scrape (the app's; a worker has none). */
  queueDepth?: () => Promise<QueueDepth[]>;
  /** The clock the oldest waiting job's age is measured on (tests). */
  now?: () => number;
  /** How long a scrape waits for the queue's read before it answers without it (default 3 s). */
  queueTimeoutMs?: number;
}

/** Creates this process's metrics and makes every measure count in them. */
export function startMetrics(opts: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const requests = new Histogram({
    name: "strata_http_request_duration_seconds",
    help: "HTTP requests answered, by route or tRPC procedure and status class",
    labelNames: ["route", "status_class"],
    buckets: SECONDS,
    registers: [registry],
  });
  const acquires = new Histogram({
    name: "strata_acquire_duration_seconds",
    help: "workspace.acquire calls, by outcome",
    labelNames: ["outcome"],
    buckets: SECONDS,
    registers: [registry],
  });
  const statements = new Histogram({
    name: "strata_db_statement_duration_seconds",
    help: "Set-based statements (PostgreSQL's coalesced acquire), their round trip, by statement and outcome",
    labelNames: ["statement", "outcome"],
    buckets: STATEMENT_SECONDS,
    registers: [registry],
  });
  const statementRequests = new Histogram({
    name: "strata_db_statement_requests",
    help: "Requests each set-based statement carried, by statement and outcome",
    labelNames: ["statement", "outcome"],
    buckets: BATCH_SIZES,
    registers: [registry],
  });
  const jobAttempts = new Counter({
    name: "strata_job_attempts_total",
    help: "Job attempts this process's worker ended, by kind, outcome and the worker's host",
    labelNames: ["kind", "outcome", "host"],
    registers: [registry],
  });
  const jobDurations = new Histogram({
    name: "strata_job_attempt_duration_seconds",
    help: "Job attempt durations, by kind, outcome and the worker's host",
    labelNames: ["kind", "outcome", "host"],
    buckets: LONG_SECONDS,
    registers: [registry],
  });
  const leaseExpiries = new Counter({
    name: "strata_job_lease_expiries_total",
    help: "Claims whose lease had passed that this process's worker handed out again, by the worker's host",
    labelNames: ["host"],
    registers: [registry],
  });
  const reclaims = new Counter({
    name: "strata_job_reclaims_total",
    help: "Jobs of dead workers of its host that this process's worker handed back, by host",
    labelNames: ["host"],
    registers: [registry],
  });
  const runs = new Counter({
    name: "strata_collection_runs_total",
    help: "Collection (gc) and sweep runs this process ran, by run and outcome",
    labelNames: ["run", "outcome"],
    registers: [registry],
  });
  const runDurations = new Histogram({
    name: "strata_collection_run_duration_seconds",
    help: "Collection (gc) and sweep run durations, by run and outcome",
    labelNames: ["run", "outcome"],
    buckets: LONG_SECONDS,
    registers: [registry],
  });
  if (opts.queueDepth) {
    registerQueueGauges(registry, opts.queueDepth, {
      now: opts.now ?? Date.now,
      timeoutMs: opts.queueTimeoutMs ?? 3_000,
    });
  }
  collectDefaultMetrics({ register: registry, prefix: "strata_" });
  setMeasureSink((m) => {
    switch (m.type) {
      case "request":
        requests.observe({ route: m.route, status_class: `${Math.floor(m.status / 100)}xx` }, m.seconds);
        return;
      case "acquire":
        acquires.observe({ outcome: m.outcome }, m.seconds);
        return;
      case "statement":
        statements.observe({ statement: m.statement, outcome: m.outcome }, m.seconds);
        statementRequests.observe({ statement: m.statement, outcome: m.outcome }, m.requests);
        return;
      case "job":
        jobAttempts.inc({ kind: m.kind, outcome: m.outcome, host: m.host });
        jobDurations.observe({ kind: m.kind, outcome: m.outcome, host: m.host }, m.seconds);
        return;
      case "claims":
        (m.event === "expired" ? leaseExpiries : reclaims).inc({ host: m.host }, m.count);
        return;
      case "run":
        runs.inc({ run: m.run, outcome: m.outcome });
        runDurations.observe({ run: m.run, outcome: m.outcome }, m.seconds);
        return;
    }
  });
  return { registry, stop: () => setMeasureSink(null) };
}

/**
 * The queue's depth as gauges filled at scrape time from one catalog read, shared by the three
 * gauges of one scrape. A read that fails or takes longer than `timeoutMs` (the catalog is down
 * or cut off) leaves them without samples and counts a scrape error, and the rest of the scrape
 * is answered as usual, well within a scraper's timeout.
 */
function registerQueueGauges(
  registry: Registry,
  read: () => Promise<QueueDepth[]>,
  { now, timeoutMs }: { now: () => number; timeoutMs: number },
): void {
  // prom-client collects every metric of a scrape at once: the first to collect starts the read,
  // the others wait for the same one (the error counter too, so a failed scrape counts itself).
  let reading: Promise<QueueDepth[] | null> | null = null;
  const readInTime = () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("the queue's read timed out")), timeoutMs);
    });
    return Promise.race([read(), late]).finally(() => clearTimeout(timer));
  };
  const readOnce = () =>
    (reading ??= readInTime()
      .catch(() => {
        scrapeErrors.inc({ source: "queue" });
        return null;
      })
      .finally(() => (reading = null)));
  const scrapeErrors = new Counter({
    name: "strata_metrics_scrape_errors_total",
    help: "Scrapes answered without some metrics because reading them failed, by what was read",
    labelNames: ["source"],
    registers: [registry],
    async collect() {
      await readOnce();
    },
  });
  scrapeErrors.inc({ source: "queue" }, 0);
  const gauge = (name: string, help: string, value: (d: QueueDepth) => number | null) => {
    const g: Gauge<"host" | "kind"> = new Gauge({
      name,
      help,
      labelNames: ["host", "kind"],
      registers: [registry],
      async collect() {
        const depths = await readOnce();
        g.reset();
        for (const d of depths ?? []) {
          const v = value(d);
          if (v !== null) g.set({ host: d.host ?? "", kind: d.kind }, v);
        }
      },
    });
  };
  gauge(
    "strata_jobs_waiting",
    "Jobs queued or waiting for a retry, by host (empty: any worker) and kind",
    (d) => d.waiting,
  );
  gauge("strata_jobs_active", "Jobs a worker is running, by host (empty: any worker) and kind", (d) => d.active);
  gauge(
    "strata_job_oldest_waiting_seconds",
    "Age of the oldest queued or retrying job, by host (empty: any worker) and kind",
    (d) => (d.oldestWaitingSince ? Math.max(0, (now() - d.oldestWaitingSince.getTime()) / 1000) : null),
  );
}

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** True when the request's `Authorization: Bearer …` is the token (compared in constant time). */
function presentsToken(req: IncomingMessage, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
  return match?.[1] !== undefined && timingSafeEqual(digest(match[1]), digest(token));
}

/** Answers GET /metrics: 404 without a configured token, 401 without the right one, else the metrics. */
export async function answerMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  opts: { metrics: Metrics | null; token: string | undefined },
): Promise<void> {
  const json = (status: number, code: string, message: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify({ error: { code, message } }));
  };
  if (!opts.token || !opts.metrics) return json(404, "NOT_FOUND", "Metrics are off: set STRATA_METRICS_TOKEN.");
  if (!presentsToken(req, opts.token)) {
    return json(401, "UNAUTHORIZED", "Send Authorization: Bearer <STRATA_METRICS_TOKEN>.", {
      "www-authenticate": 'Bearer realm="strata-metrics"',
    });
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    return json(405, "METHOD_NOT_ALLOWED", "GET /metrics.", { allow: "GET, HEAD" });
  }
  const text = await opts.metrics.registry.metrics();
  res.writeHead(200, { "content-type": opts.metrics.registry.contentType, "cache-control": "no-store" });
  res.end(req.method === "HEAD" ? undefined : text);
}

/**
 * A server that answers GET /metrics only (a `strata worker`'s; the app answers it among its
 * routes), listening on `bind`:`port`. Rejects when it cannot listen (EADDRINUSE…).
 */
export async function listenForMetrics(opts: {
  metrics: Metrics;
  token: string;
  port: number;
  bind: string;
}): Promise<{ close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.url !== METRICS_PATH && !req.url?.startsWith(`${METRICS_PATH}?`)) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "NOT_FOUND", message: `Only ${METRICS_PATH} is served here.` } }));
      return;
    }
    answerMetrics(req, res, { metrics: opts.metrics, token: opts.token }).catch(() => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "INTERNAL", message: "The metrics could not be read." } }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.bind, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
