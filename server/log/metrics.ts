// GET /metrics in the Prometheus text format (prom-client), for the process that serves it: its
// requests, acquires, the acquire statements on PostgreSQL, job attempts (the worker inside
// `strata serve`) and collection and sweep runs. Behind STRATA_METRICS_TOKEN: none configured
// → 404, a wrong or missing token → 401.
import { timingSafeEqual, createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";
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

/** Creates this process's metrics and makes every measure count in them. */
export function startMetrics(): Metrics {
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
    help: "Job attempts this process's worker ended, by kind and outcome",
    labelNames: ["kind", "outcome"],
    registers: [registry],
  });
  const jobDurations = new Histogram({
    name: "strata_job_attempt_duration_seconds",
    help: "Job attempt durations, by kind and outcome",
    labelNames: ["kind", "outcome"],
    buckets: LONG_SECONDS,
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
        jobAttempts.inc({ kind: m.kind, outcome: m.outcome });
        jobDurations.observe({ kind: m.kind, outcome: m.outcome }, m.seconds);
        return;
      case "run":
        runs.inc({ run: m.run, outcome: m.outcome });
        runDurations.observe({ run: m.run, outcome: m.outcome }, m.seconds);
        return;
    }
  });
  return { registry, stop: () => setMeasureSink(null) };
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
