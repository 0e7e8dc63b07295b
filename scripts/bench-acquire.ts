// `npm run bench:acquire`: acquire latency (p50/p99) on PostgreSQL with 16 concurrent clients,
// at 10k, 100k and 1M snapshots. Each size gets a fresh database, bulk-filled with SQL, and the
// measured calls are the real service (decision, lineage, pin and restore row, committed).
// Clients are closed loops with no pause between acquires: the worst case for queueing, and
// the case the goal is judged on. A single client is measured too, for the latency of one
// acquire without queueing, and the 16 clients again paced at --paced-rate acquires per second
// in total (default 1000; each counted from when it was due), for latency under heavy but not
// saturating load. Every load runs twice: in process (the service called directly) and over HTTP
// the way agents call it — a node:http server in this process serving the app's tRPC handler,
// each request authenticated by its agent token, driven by keep-alive clients sending tRPC's
// requests from a child process (scripts/bench-acquire-clients.ts), so this event loop only
// serves, as it does for agents on other machines — and the HTTP rows give their p99 as a
// multiple of the in-process p99 measured in the same run. The CPU column is per acquire: this
// process (the service, and for HTTP the serving; the in-process rows' clients are a loop of
// calls) + the PostgreSQL backends (read from /proc, so PostgreSQL must run on this machine;
// "?" otherwise) — on a shared 2-core machine it tells whether latency moved because the code
// did or because the machine was busy. Beside it, the ms per acquire the same threads spent
// runnable but waiting for a core (/proc/<pid>/schedstat): the share of the latency the 2 cores
// could not serve at once ("?" for PostgreSQL when a backend ended during the row, as the pool's
// idle connections do under a paced load: an ended process's wait is gone, while its CPU is
// counted through the postmaster's).
// The HTTP clients' process is counted apart (agents pay it on their own
// machines; here it shares the 2 cores with the server and PostgreSQL).
// The http-floor rows run the same clients against a bare node:http server that answers every
// request with one recorded acquire answer: what HTTP itself costs on this machine, the least
// any server code could add, printed beside the goal. The http-direct rows run them against a
// bare node:http server that does the acquire itself (the service called as the in-process rows
// call it, with the agent the token names): HTTP plus the same database work, with no tRPC and
// no token lookup, the least any server that really acquires could take here.
// The HTTP clients write tRPC's requests by hand on keep-alive connections, the least CPU a client
// can spend on the cores it shares with the server here (see bench-acquire-clients.ts;
// --http-client node sends them through tRPC's client on node:http, --http-client fetch on fetch).
// The db-floor rows run the same in-process clients, coalesced the same way on the same pool, but
// each records one row of a one-column table instead of acquiring: the least any acquire that
// commits what it decided can take on this machine (a round trip, a commit, a WAL flush).
// The no-disk-wait rows are a diagnosis, never the product's setting: the in-process acquire
// again, on connections that commit without waiting for the WAL to reach the disk
// (synchronous_commit off for the bench's database alone). Set beside the in-process rows they
// show how much of the latency, and of the paced tail above all, is the disk's flush at commit:
// a stall of the disk holds every durable commit in flight, and a paced load meets one in every
// acquire that falls due during it.
// The statement columns are the acquire statements this process ran for the row, as /metrics
// records them: their round trip (execution, commit, flush) and how many acquires each carried.
// Under each HTTP goal line, the share of the row the server's event loop was busy (Node's
// event loop utilization) beside the bare server's and the in-process one's: the one thread that
// reads every request and writes every answer, which the requests queue for.
// Each row also says what the machine did meanwhile (scripts/bench-machine-probe.ts): the CPU the
// hypervisor stole, and the p99 and worst latency of a small fdatasync on the same disk.
// Above the table: the PostgreSQL settings the figures depend on; under it, at each size, whether
// the acquire statement's plan reaches snapshots and lineages by index only, and at the goal size
// the bytes allocated per acquire in this process by the in-process, http and http-direct
// transports (a closed-loop pass of its own under V8's sampling heap profiler). That figure moves
// by a few percent between runs where the latency rows move by half, so it shows a cut in the
// serving path's cost per call that the latency rows on a shared 2-core machine cannot.
// Options: --sizes 10000,100000,1000000 --clients 1,16 --paced-rate 1000 --acquires 10000
// --transports in-process,db-floor,no-disk-wait,http,http-direct,http-floor --http-client raw|node|fetch
// --disk-probe-ms 10 (0: no disk probe).
import { fork } from "node:child_process";
import { availableParallelism } from "node:os";
import { readFileSync } from "node:fs";
import type { HeapProfiler } from "node:inspector";
import { Session } from "node:inspector/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import superjson from "superjson";
import { createTestCatalog, type TestCatalog } from "../server/testing/catalog.ts";
import { openCatalog } from "../server/db/client.ts";
import { trustAgent } from "../server/domain/scope.ts";
import { createAgentToken } from "../server/auth/agents.ts";
import { acquireWorkspace } from "../server/acquire/acquire-workspace.ts";
import { coalesce } from "../server/db/coalesce.ts";
import { dialectOf } from "../server/db/dialect.ts";
import { TRPC_ENDPOINT } from "../server/trpc/http-handler.ts";
import { serveApp } from "../server/testing/http-server.ts";
import type { ClientsReply, ClientsRequest, HttpClient } from "./bench-acquire-clients.ts";
import { AGENTS, runLoad, type Load, type LoadResult, type Shape } from "./bench-acquire-load.ts";
import { startMachineProbe, type MachineFigures } from "./bench-machine-probe.ts";
import { percentile } from "./stats.ts";
import type { RestorePlan } from "../server/domain/views.ts";
import type { StatementRunner } from "../server/db/dialect.ts";
import { runAcquireStatement } from "../server/db/statements/acquire.ts";
import { snapshotRefSelect } from "../server/lineage/snapshots.ts";
import { setMeasureSink } from "../server/log/measures.ts";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "10000,100000,1000000" },
    clients: { type: "string", default: "1,16" },
    "paced-rate": { type: "string", default: "1000" },
    acquires: { type: "string", default: "10000" },
    warmup: { type: "string", default: "400" },
    transports: { type: "string", default: "in-process,db-floor,no-disk-wait,http,http-direct,http-floor" },
    "http-client": { type: "string", default: "raw" },
    "disk-probe-ms": { type: "string", default: "10" },
  },
});
const TRANSPORT_NAMES = ["in-process", "db-floor", "no-disk-wait", "http", "http-direct", "http-floor"] as const;
type Transport = (typeof TRANSPORT_NAMES)[number];
const TRANSPORTS = values.transports.split(",") as Transport[];
const HTTP_CLIENT = values["http-client"] as HttpClient;
if (!["raw", "node", "fetch"].includes(HTTP_CLIENT)) throw new Error(`unknown --http-client ${HTTP_CLIENT}`);
for (const t of TRANSPORTS) {
  if (!TRANSPORT_NAMES.includes(t)) throw new Error(`unknown transport ${t}`);
}
const SIZES = values.sizes.split(",").map(Number);
const CLIENT_COUNTS = values.clients.split(",").map(Number);
/** Acquires per second for the paced run of the most clients (0: none). */
const PACED_RATE = Number(values["paced-rate"]);
const LOADS: Load[] = [
  ...CLIENT_COUNTS.map((clients) => ({ clients, rate: null })),
  ...(PACED_RATE > 0 ? [{ clients: Math.max(...CLIENT_COUNTS), rate: PACED_RATE }] : []),
];
/** The goal is stated for this many clients at the largest size. */
const GOAL_CLIENTS = 16;
const GOAL_P99_MS = 5;
const GOAL_SIZE = 100_000;
/** HTTP p99 at most this multiple of the in-process p99. */
const GOAL_HTTP_RATIO = 2;
/** The goals at that size, judged the same way for every row they are asked of. */
const meetsClosedGoal = (closed: { p99: number }) => closed.p99 < GOAL_P99_MS;
const meetsPacedGoal = (paced: { p99: number }, closed: { p99: number }) => paced.p99 <= closed.p99;
const ACQUIRES = Number(values.acquires);
/** How often the machine probe fdatasyncs (0: the disk is not probed). */
const DISK_PROBE_MS = Number(values["disk-probe-ms"]);
const WARMUP = Number(values.warmup);

const BASELINES_PER_KEY = 5; // 4 superseded + 1 ready
const CHECKPOINTS_PER_LINEAGE = 10; // 9 superseded + 1 ready head

/** A fifth of the rows are baselines, the rest checkpoint chains. */
function shapeFor(snapshots: number): Shape {
  const baselineKeys = Math.max(1, Math.round((snapshots * 0.2) / BASELINES_PER_KEY));
  const lineages = Math.max(1, Math.round((snapshots * 0.8) / CHECKPOINTS_PER_LINEAGE));
  return { repositories: Math.max(1, Math.ceil(baselineKeys / AGENTS)), baselineKeys, lineages };
}

async function fill(catalog: TestCatalog, shape: Shape): Promise<number> {
  const db = catalog.db;
  const { repositories: R, baselineKeys: K, lineages: L } = shape;
  await db.$executeRawUnsafe(
    `INSERT INTO agents (id, name) SELECT 'agent-' || a, 'bench-' || a FROM generate_series(0, ${AGENTS - 1}) a`,
  );
  await db.$executeRawUnsafe(
    `INSERT INTO repositories (id, identity, name)
     SELECT 'repo-' || r, 'bench.test/acme/repo-' || r, 'repo-' || r FROM generate_series(0, ${R - 1}) r`,
  );
  // Baseline key k belongs to agent k % AGENTS and repository k / AGENTS; version v = 4 is ready.
  await db.$executeRawUnsafe(
    `INSERT INTO snapshots (id, class, state, agent_id, repository_id, backend_kind, base_image, canonical_ref,
       canonical_commit, validation, tree_id, head_commit, branch, manifest_digest, metadata, created_at, ready_at,
       superseded_at)
     SELECT 'b-' || k || '-' || v, 'baseline', CASE WHEN v = ${BASELINES_PER_KEY - 1} THEN 'ready' ELSE 'superseded' END,
       'agent-' || (k % ${AGENTS}), 'repo-' || (k / ${AGENTS}), 'modal', 'img-1', 'refs/heads/main',
       substr(md5('c' || k || v) || md5('d' || k || v), 1, 40), '{"fetched": true}'::jsonb,
       substr(md5('t' || k || v) || md5('u' || k || v), 1, 40), substr(md5('c' || k || v) || md5('d' || k || v), 1, 40),
       'main', md5('m' || k || v) || md5('n' || k || v), '{"manifest": {"blobDigests": []}}'::jsonb,
       now() - ((${BASELINES_PER_KEY} - v) || ' days')::interval, now() - ((${BASELINES_PER_KEY} - v) || ' days')::interval,
       CASE WHEN v = ${BASELINES_PER_KEY - 1} THEN NULL ELSE now() END
     FROM generate_series(0, ${K - 1}) k, generate_series(0, ${BASELINES_PER_KEY - 1}) v`,
  );
  // Lineage l: agent l % AGENTS, work context wc-l, a chain of checkpoints whose last is the head.
  await db.$executeRawUnsafe(
    `INSERT INTO lineages (id, agent_id, work_context_id, repository_id, backend_kind, base_image, created_at)
     SELECT 'l-' || l, 'agent-' || (l % ${AGENTS}), 'wc-' || l, 'repo-' || ((l / ${AGENTS}) % ${R}), 'modal', 'img-1',
       now() - interval '3 days'
     FROM generate_series(0, ${L - 1}) l`,
  );
  await db.$executeRawUnsafe(
    `INSERT INTO snapshots (id, class, state, agent_id, repository_id, backend_kind, base_image, work_context_id,
       lineage_id, sequence, predecessor_id, tree_id, head_commit, branch, manifest_digest, metadata, created_at,
       ready_at, superseded_at)
     SELECT 'c-' || l || '-' || s, 'checkpoint', CASE WHEN s = ${CHECKPOINTS_PER_LINEAGE} THEN 'ready' ELSE 'superseded' END,
       'agent-' || (l % ${AGENTS}), 'repo-' || ((l / ${AGENTS}) % ${R}), 'modal', 'img-1', 'wc-' || l, 'l-' || l, s,
       CASE WHEN s = 1 THEN NULL ELSE 'c-' || l || '-' || (s - 1) END,
       substr(md5('t' || l || s) || md5('u' || l || s), 1, 40), substr(md5('h' || l || s) || md5('i' || l || s), 1, 40),
       'task-' || l, md5('m' || l || s) || md5('n' || l || s), '{"manifest": {"blobDigests": []}}'::jsonb,
       now() - ((${CHECKPOINTS_PER_LINEAGE} - s) || ' hours')::interval,
       now() - ((${CHECKPOINTS_PER_LINEAGE} - s) || ' hours')::interval,
       CASE WHEN s = ${CHECKPOINTS_PER_LINEAGE} THEN NULL ELSE now() END
     FROM generate_series(0, ${L - 1}) l, generate_series(1, ${CHECKPOINTS_PER_LINEAGE}) s`,
  );
  await db.$executeRawUnsafe(`CREATE TABLE bench_floor (id text PRIMARY KEY)`);
  await db.$executeRawUnsafe(`ANALYZE`);
  // Write the fill out before measuring. From 100k rows the fill outgrows shared_buffers and
  // leaves ~100 MB dirty in the OS page cache, which the kernel writes back in one burst 30 s
  // later (vm.dirty_expire_centisecs): every commit's WAL fsync then waits 100-200 ms behind it.
  // That burst landed in the paced run and was its whole p99 — a cost of loading the bench
  // database in bulk, not of acquiring. A checkpoint writes and fsyncs it now, outside the runs.
  await db.$executeRawUnsafe(`CHECKPOINT`);
  const rows = await db.$queryRawUnsafe<{ n: bigint | number }[]>(`SELECT count(*) AS n FROM snapshots`);
  return Number(rows[0]?.n ?? 0);
}

/** The index each lookup of the decision uses at this size (a sequential scan would not scale). */
async function plans(catalog: TestCatalog): Promise<string[]> {
  const lookups = {
    baseline: `SELECT id FROM snapshots WHERE agent_id = 'agent-3' AND repository_id = 'repo-7' AND backend_kind = 'modal'
      AND base_image = 'img-1' AND canonical_ref = 'refs/heads/main' AND class = 'baseline' AND state = 'ready' LIMIT 1`,
    lineage: `SELECT id FROM lineages WHERE agent_id = 'agent-3' AND work_context_id = 'wc-13' AND repository_id = 'repo-1'
      AND backend_kind = 'modal' AND base_image = 'img-1'`,
    head: `SELECT id FROM snapshots WHERE agent_id = 'agent-3' AND work_context_id = 'wc-13' AND repository_id = 'repo-1'
      AND backend_kind = 'modal' AND base_image = 'img-1' AND lineage_id = 'l-13' AND class = 'checkpoint'
      AND state = 'ready' LIMIT 1`,
  };
  const out: string[] = [];
  for (const [name, sql] of Object.entries(lookups)) {
    const rows = await catalog.db.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(`EXPLAIN ${sql}`);
    const scan = rows.map((r) => r["QUERY PLAN"]).find((l) => /Scan/.test(l)) ?? "?";
    out.push(`${name}: ${planNode(scan)}`);
  }
  return out;
}

/** A line of EXPLAIN's output as the node it names, without its arrow and costs. */
function planNode(line: string): string {
  return line.replace(/^[\s>-]+/, "").replace(/\s+\(cost.*$/, "");
}

/**
 * The acquire statement itself, for a batch of 16 (EXPLAIN does not run its inserts): each of
 * its lookups in the filled tables must stay an index probe at every size; a sequential scan
 * here costs every acquire the whole table. (Restores and pins are empty when it is planned, so
 * a scan of them is cheapest then and says nothing.)
 */
async function acquireStatementPlan(catalog: TestCatalog): Promise<string> {
  const plan: string[] = [];
  const explain: StatementRunner = {
    on: "transaction",
    query: async <T>(_name: string, text: string, values: unknown[]): Promise<T[]> => {
      const rows = await catalog.db.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(`EXPLAIN ${text}`, ...values);
      plan.push(...rows.map((r) => r["QUERY PLAN"]));
      return [];
    },
  };
  const now = new Date();
  const batch = Array.from({ length: 16 }, (_, i) => ({
    agentId: `agent-${i % AGENTS}`,
    repositoryIdentity: "bench.test/acme/repo-0",
    backendKind: "modal",
    baseImage: "img-1",
    canonicalRef: "refs/heads/main",
    requestedWorkContextId: `wc-${i}`,
    workContextId: `wc-${i}`,
    workspace: `/workspaces/${i}`,
    host: "bench",
    now,
    restoreId: `explain-restore-${i}`,
    newLineageId: `explain-lineage-${i}`,
    pinId: `explain-pin-${i}`,
    holder: "bench",
    pinExpiresAt: now,
  }));
  await runAcquireStatement(explain, batch, Object.keys(snapshotRefSelect));
  const scans = plan.filter((l) => /Seq Scan on (snapshots|lineages)\b/.test(l));
  return `acquire statement: ${scans.length === 0 ? "index probes only" : scans.map(planNode).join("; ")}`;
}

/**
 * The PostgreSQL settings the figures depend on, as one line: a commit's flush, autovacuum's
 * periodic work on the tables every acquire writes (off on some CI machines), the buffer cache.
 */
async function serverSettings(catalog: TestCatalog): Promise<string> {
  const names = ["server_version", "synchronous_commit", "fsync", "autovacuum", "shared_buffers", "max_connections"];
  const rows = await catalog.db.$queryRawUnsafe<{ name: string; setting: string; unit: string | null }[]>(
    `SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1::text[])`,
    names,
  );
  const value = (name: string) => {
    const row = rows.find((r) => r.name === name);
    if (!row) return "?";
    // shared_buffers is counted in 8 kB pages.
    return row.unit === "8kB" ? `${Math.round((Number(row.setting) * 8) / 1024)} MB` : row.setting;
  };
  return `PostgreSQL ${value("server_version")}: ${names
    .slice(1)
    .map((n) => `${n} ${value(n)}`)
    .join(", ")}`;
}

/** The fields of /proc/<pid>/stat after the command name; null where it cannot be read. */
function statFields(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  } catch {
    return null;
  }
}

/** Ms of CPU in two clock-tick fields of /proc/<pid>/stat; null where it cannot be read. */
function statCpuMs(pid: number, userField: number, systemField: number): number | null {
  const fields = statFields(pid);
  return fields ? ((Number(fields[userField]) + Number(fields[systemField])) / CLOCK_TICKS) * 1000 : null;
}

/**
 * The CPU of a process's children that have ended and been reaped (cutime + cstime), in ms. A
 * backend that ends during a row (the pool closes connections idle for 10 s, which a paced load
 * leaves) is no longer in /proc when the row ends: its whole CPU is then in its parent's, the
 * postmaster's.
 */
const reapedChildrenCpuMs = (pid: number) => statCpuMs(pid, 13, 14);

/** The postmaster of a backend (its parent process); null where /proc cannot tell. */
function parentPid(pid: number): number | null {
  const fields = statFields(pid);
  return fields ? Number(fields[1]) : null;
}
const CLOCK_TICKS = 100;

/**
 * Milliseconds a thread has spent runnable but waiting for a core (the second field of
 * /proc/<pid>/schedstat); null where that cannot be read. On a 2-core machine running the
 * service, PostgreSQL and the clients, this is the part of the latency the work spent queued
 * for a CPU rather than running or waiting on the disk.
 */
function runQueueWaitMs(path: string): number | null {
  try {
    return Number(readFileSync(`/proc/${path}/schedstat`, "utf8").trim().split(" ")[1]) / 1e6;
  } catch {
    return null;
  }
}

/** CPU used and time spent waiting for a core, in ms, of one process (null: not readable). */
interface Usage {
  cpuMs: number | null;
  waitMs: number | null;
}

function usageOf(pid: number): Usage {
  return { cpuMs: statCpuMs(pid, 11, 12), waitMs: runQueueWaitMs(String(pid)) };
}

/**
 * What the backends used of `field` between two readings; null if a backend's cannot be read.
 * `reapedMs`, for the CPU, is what their postmaster reaped meanwhile: the whole use of backends
 * that ended in between, so their use up to the first reading is taken off it. Without it, a
 * backend that ended makes the sum unknown (its wait for a core is gone with it).
 */
function backendsDelta(
  before: Map<number, Usage>,
  after: Map<number, Usage>,
  field: keyof Usage,
  reapedMs?: number | null,
): number | null {
  if (reapedMs === null) return null;
  let sum = reapedMs ?? 0;
  for (const [pid, now] of after) {
    const then = before.get(pid)?.[field] ?? 0;
    const value = now[field];
    if (value === null && reapedMs === undefined) return null;
    sum += (value ?? 0) - then;
  }
  return sum;
}

/** The PostgreSQL backends serving this catalog (the server runs on this machine in the bench). */
async function backendPids(catalog: TestCatalog): Promise<number[]> {
  const rows = await catalog.db.$queryRawUnsafe<{ pid: number }[]>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`,
  );
  return rows.map((r) => r.pid);
}

const loadName = (load: Load) => (load.rate === null ? "closed" : `${load.rate}/s`);

/**
 * Runs one load's acquires (offset … offset + total - 1) and reports their latencies, and the CPU
 * ms of the clients when they run in a process of their own.
 */
type Runner = (
  shape: Shape,
  load: Load,
  total: number,
  offset: number,
) => Promise<LoadResult & { clientsCpuMs?: number }>;

/** The transports whose allocation is measured at the goal size (the ones serving a real acquire). */
const ALLOCATION_TRANSPORTS: readonly Transport[] = ["in-process", "http", "http-direct"];
/** How many acquires the allocation pass runs, closed-loop with the goal's clients. */
const ALLOCATION_ACQUIRES = 2_000;

/**
 * The bytes this process allocates per acquire while `runAcquires` runs `total` of them: V8's
 * sampling heap profiler with the objects collected meanwhile counted too, so it is what the
 * garbage collector had to deal with, not what stayed. It moves by a few percent between runs,
 * latency by half: the figure to watch when cutting the serving path's cost per call. In process
 * that is the service and its in-process clients; over HTTP the server alone (its clients run
 * apart).
 */
async function allocatedPerAcquire(runAcquires: () => Promise<unknown>, total: number): Promise<number> {
  const session = new Session();
  session.connect();
  try {
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 1024,
      // Accepted by Node 20's V8; @types/node does not list them.
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as HeapProfiler.StartSamplingParameterType);
    await runAcquires();
    const { profile } = await session.post("HeapProfiler.stopSampling");
    let bytes = 0;
    const stack = [profile.head];
    for (let node = stack.pop(); node; node = stack.pop()) {
      bytes += node.selfSize;
      stack.push(...node.children);
    }
    return bytes / total;
  } finally {
    session.disconnect();
  }
}

/** The service called directly, from this process. */
const inProcess = (catalog: Pick<TestCatalog, "db">): Runner =>
  runLoad.bind(null, (agent, input) =>
    acquireWorkspace(catalog.db, { ...input, agent: trustAgent(`agent-${agent}`, `bench-${agent}`) }),
  );

/**
 * The in-process acquire on a second handle to the same database whose connections commit
 * without waiting for the WAL flush (synchronous_commit off, set on the bench's database while
 * the handle is open and reset on close).
 */
async function noDiskWait(catalog: TestCatalog): Promise<{ run: Runner; close(): Promise<void> }> {
  const setting = (value: string) =>
    catalog.db.$executeRawUnsafe(
      `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I ${value}', current_database()); END $$`,
    );
  await setting("SET synchronous_commit = off");
  const handle = openCatalog(catalog.url, { poolSize: 20 });
  return {
    run: inProcess(handle),
    close: async () => {
      await handle.close();
      await setting("RESET synchronous_commit");
    },
  };
}

/**
 * The least an acquire that records its decision can cost here: the same clients and coalescing
 * (as many per statement, one statement at a time, on the catalog's pool), each request
 * inserting one key into bench_floor, committed. The plan handed back is a fixed cold one.
 */
function dbFloor(catalog: TestCatalog): Runner {
  const runner = dialectOf(catalog.db).statementRunner(catalog.db);
  if (!runner) throw new Error("db-floor needs PostgreSQL's statement runner");
  const insert = coalesce(
    (ids: string[]) =>
      runner.query<{ id: string }>(
        "bench_floor",
        "INSERT INTO bench_floor (id) SELECT value FROM jsonb_array_elements_text($1::jsonb) RETURNING id",
        [JSON.stringify(ids)],
      ),
    { maxBatch: 32, maxInFlight: 1 },
  );
  let n = 0;
  const cold = { rung: "cold" } as RestorePlan;
  return runLoad.bind(null, async () => {
    await insert(`floor-${n++}`);
    return cold;
  });
}

/**
 * The bench's HTTP clients in a child process (scripts/bench-acquire-clients.ts): one client per
 * agent (no batching: one acquire, one request) on keep-alive connections.
 */
async function httpClients(url: string, tokens: string[]): Promise<{ run: Runner; close(): Promise<void> }> {
  const child = fork(new URL("./bench-acquire-clients.ts", import.meta.url), { stdio: "inherit" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ask = (request: ClientsRequest) =>
    new Promise<ClientsReply>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the HTTP clients' process exited (${code})`));
      child.once("exit", onExit);
      child.once("message", (reply: ClientsReply) => {
        child.off("exit", onExit);
        if (reply.type === "error") reject(new Error(`HTTP clients: ${reply.message}`));
        else resolve(reply);
      });
      child.send(request);
    });
  await ask({ type: "connect", url, tokens, httpClient: HTTP_CLIENT });
  return {
    run: async (shape, load, total, offset) => {
      const reply = await ask({ type: "run", shape, load, total, offset });
      if (reply.type !== "result") throw new Error(`HTTP clients answered ${reply.type}`);
      return { ...reply.result, clientsCpuMs: reply.cpuMs };
    },
    close: async () => {
      child.disconnect();
      await exited;
    },
  };
}

/**
 * Acquire over HTTP as an agent does it: the app's tRPC handler on a node:http server in this
 * process, one token per agent checked on every request, driven by httpClients.
 */
async function overHttp(catalog: TestCatalog): Promise<{ run: Runner; close(): Promise<void> }> {
  const server = await serveApp({ db: catalog.db });
  const tokens: string[] = [];
  for (let a = 0; a < AGENTS; a++) tokens.push((await createAgentToken(catalog.db, { name: `bench-${a}` })).token);
  const clients = await httpClients(`${server.url}${TRPC_ENDPOINT}`, tokens);
  return {
    run: clients.run,
    close: async () => {
      await clients.close();
      await server.close();
    },
  };
}

/**
 * The floor of any acquire over HTTP on this machine: the same clients, process, requests and
 * answer bytes, answered by a bare node:http server in this process with one recorded acquire
 * answer — no tRPC, no token check, no database. What HTTP itself costs here (sockets, parsing,
 * the clients' CPU on the same two cores): no server code can answer faster than this.
 */
async function httpFloor(catalog: TestCatalog): Promise<{ run: Runner; close(): Promise<void> }> {
  const plan = await acquireWorkspace(catalog.db, {
    agent: trustAgent("agent-0", "bench-0"),
    repository: { identity: "bench.invalid/floor" },
    backendKind: "modal",
    baseImage: "img",
    canonicalRef: "main",
    workspace: "/w/floor",
    host: "floor",
  });
  const answer = Buffer.from(JSON.stringify({ result: { data: superjson.serialize(plan) } }));
  const tokens = Array.from({ length: AGENTS }, (_, a) => `floor-token-${a}`);
  return bareServer(tokens, async () => answer);
}

/** A bare node:http server on a free local port, with the bench's HTTP clients pointed at it. */
async function bareServer(
  tokens: string[],
  answer: (body: Buffer, authorization: string) => Promise<Buffer>,
): Promise<{ run: Runner; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      answer(Buffer.concat(chunks), req.headers.authorization ?? "").then(
        (bytes) => {
          res.writeHead(200, { "content-type": "application/json", "content-length": bytes.length });
          res.end(bytes);
        },
        (error: unknown) => {
          res.writeHead(500, { "content-type": "text/plain" });
          res.end(String(error));
        },
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const clients = await httpClients(`http://127.0.0.1:${port}${TRPC_ENDPOINT}`, tokens);
  return {
    run: clients.run,
    close: async () => {
      await clients.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * HTTP plus the same database work, nothing else: a bare node:http server that reads tRPC's
 * request body and calls the acquire service as the in-process rows do, for the agent its token
 * names (no token lookup), and answers tRPC's response shape.
 */
async function httpDirect(catalog: TestCatalog): Promise<{ run: Runner; close(): Promise<void> }> {
  const tokens = Array.from({ length: AGENTS }, (_, a) => `direct-token-${a}`);
  return bareServer(tokens, async (body, authorization) => {
    const agent = Number(authorization.slice("Bearer direct-token-".length));
    const input = superjson.deserialize(JSON.parse(body.toString("utf8"))) as Omit<
      Parameters<typeof acquireWorkspace>[1],
      "agent"
    >;
    const plan = await acquireWorkspace(catalog.db, {
      ...input,
      agent: trustAgent(`agent-${agent}`, `bench-${agent}`),
    });
    return Buffer.from(JSON.stringify({ result: { data: superjson.serialize(plan) } }));
  });
}

/** A transport's runner, and what to close once its loads are measured. */
async function openTransport(
  transport: Transport,
  catalog: TestCatalog,
): Promise<{ run: Runner; close?: () => Promise<void> }> {
  switch (transport) {
    case "in-process":
      return { run: inProcess(catalog) };
    case "db-floor":
      return { run: dbFloor(catalog) };
    case "no-disk-wait":
      return noDiskWait(catalog);
    case "http":
      return overHttp(catalog);
    case "http-direct":
      return httpDirect(catalog);
    case "http-floor":
      return httpFloor(catalog);
  }
}

/** A row's acquire statements: their round trip p50/p99 in ms and the acquires each carried on average. */
interface StatementFigures {
  p50: number;
  p99: number;
  perStatement: number;
}

async function measure(
  catalog: TestCatalog,
  shape: Shape,
  run: Runner,
  load: Load,
  total: number,
  offset: number,
  probe?: Awaited<ReturnType<typeof startMachineProbe>>,
) {
  await probe?.begin();
  const before = new Map((await backendPids(catalog)).map((pid) => [pid, usageOf(pid)]));
  const postmaster = parentPid([...before.keys()][0] ?? -1);
  const reapedBefore = postmaster === null ? null : reapedChildrenCpuMs(postmaster);
  const mainThread = `${process.pid}/task/${process.pid}`;
  const nodeWaitBefore = runQueueWaitMs(mainThread);
  // The acquire statements' round trips and sizes, as /metrics records them (in this process:
  // the in-process rows' service and the HTTP rows' server).
  const statementMs: number[] = [];
  let carried = 0;
  setMeasureSink((m) => {
    if (m.type !== "statement" || m.outcome !== "ok") return;
    statementMs.push(m.seconds * 1000);
    carried += m.requests;
  });
  const nodeBefore = process.cpuUsage();
  const loopBefore = performance.eventLoopUtilization();
  const { latencies, rungs, elapsedMs, clientsCpuMs } = await run(shape, load, total, offset).finally(() =>
    setMeasureSink(null),
  );
  const node = process.cpuUsage(nodeBefore);
  const loop = performance.eventLoopUtilization(loopBefore);
  const machine: MachineFigures | null = probe ? await probe.end() : null;
  const nodeWaitAfter = runQueueWaitMs(mainThread);
  const pids = new Set([...before.keys(), ...(await backendPids(catalog))]);
  const after = new Map([...pids].map((pid) => [pid, usageOf(pid)]));
  const reapedAfter = postmaster === null ? null : reapedChildrenCpuMs(postmaster);
  const postgresCpuMs = backendsDelta(
    before,
    after,
    "cpuMs",
    reapedBefore === null || reapedAfter === null ? null : reapedAfter - reapedBefore,
  );
  const postgresWaitMs = backendsDelta(before, after, "waitMs");
  latencies.sort((a, b) => a - b);
  statementMs.sort((a, b) => a - b);
  return {
    /** Null when no acquire statement ran (SQLite, the floors). */
    statement:
      statementMs.length === 0
        ? null
        : ({
            p50: percentile(statementMs, 50),
            p99: percentile(statementMs, 99),
            perStatement: carried / statementMs.length,
          } satisfies StatementFigures),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? Number.NaN,
    throughput: total / (elapsedMs / 1000),
    /** CPU per acquire in ms: this process (the service, and for HTTP the serving) and the PostgreSQL backends. */
    nodeCpu: (node.user + node.system) / 1000 / total,
    postgresCpu: postgresCpuMs === null ? null : postgresCpuMs / total,
    /** Ms per acquire that this process's main thread and the PostgreSQL backends waited for a core. */
    nodeWait: nodeWaitBefore === null || nodeWaitAfter === null ? null : (nodeWaitAfter - nodeWaitBefore) / total,
    postgresWait: postgresWaitMs === null ? null : postgresWaitMs / total,
    /** CPU per acquire in ms of the HTTP clients' process (null in process). */
    clientsCpu: clientsCpuMs === undefined ? null : clientsCpuMs / total,
    /**
     * The share of the row this process's event loop spent running code rather than waiting for
     * events: the service's and its clients' in process, the server's over HTTP.
     */
    loopBusy: loop.utilization,
    rungs,
    machine,
  };
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  const results: {
    size: number;
    transport: Transport;
    clients: number;
    rate: number | null;
    p50: number;
    p99: number;
    /** Node + PostgreSQL CPU ms per acquire (null when PostgreSQL's could not be read). */
    cpuPerAcquire: number | null;
    /** The HTTP clients' process's CPU ms per acquire (null in process). */
    clientsCpu: number | null;
    /** The share of the row this process's event loop was busy (0 to 1). */
    loopBusy: number;
    statement: StatementFigures | null;
    machine: MachineFigures | null;
  }[] = [];
  /** In-process p99 by size and load, for the HTTP rows' ratio. */
  const inProcessP99 = new Map<string, number>();
  const probe = await startMachineProbe(DISK_PROBE_MS);
  let settings = "";
  /** Each size's plan of the acquire statement, printed under the table. */
  const statementPlans: string[] = [];
  /** What each transport allocates per acquire at the goal size, printed under the table. */
  const allocations: string[] = [];
  for (const size of SIZES) {
    const shape = shapeFor(size);
    process.stderr.write(`filling a fresh PostgreSQL catalog with ~${size} snapshots…\n`);
    const catalog = await createTestCatalog("postgres");
    try {
      const count = await fill(catalog, shape);
      for (const line of await plans(catalog)) process.stderr.write(`  ${line}\n`);
      statementPlans.push(`at ${size}: ${await acquireStatementPlan(catalog)}`);
      settings ||= await serverSettings(catalog);
      let offset = 0;
      for (const transport of TRANSPORTS) {
        const { run, close } = await openTransport(transport, catalog);
        try {
          for (const load of LOADS) {
            const { clients, rate } = load;
            // Warm caches and connections (for HTTP, the keep-alive connections too).
            await measure(catalog, shape, run, { clients, rate: null }, WARMUP, 10_000_000 + offset);
            process.stderr.write(
              `measuring ${ACQUIRES} acquires with ${clients} client(s), ${loadName(load)}, ${transport}…\n`,
            );
            const m = await measure(catalog, shape, run, load, ACQUIRES, offset, probe);
            offset += ACQUIRES;
            const key = `${size}/${clients}/${loadName(load)}`;
            if (transport === "in-process") inProcessP99.set(key, m.p99);
            results.push({
              size,
              transport,
              clients,
              rate,
              p50: m.p50,
              p99: m.p99,
              cpuPerAcquire: m.postgresCpu === null ? null : m.nodeCpu + m.postgresCpu,
              clientsCpu: m.clientsCpu,
              loopBusy: m.loopBusy,
              statement: m.statement,
              machine: m.machine,
            });
            const baseP99 = inProcessP99.get(key);
            rows.push([
              String(count),
              transport,
              String(clients),
              loadName(load),
              String(ACQUIRES),
              m.p50.toFixed(2),
              m.p99.toFixed(2),
              m.max.toFixed(2),
              m.throughput.toFixed(0),
              `${m.nodeCpu.toFixed(3)}+${m.postgresCpu === null ? "?" : m.postgresCpu.toFixed(3)}`,
              `${m.nodeWait === null ? "?" : m.nodeWait.toFixed(3)}+${m.postgresWait === null ? "?" : m.postgresWait.toFixed(3)}`,
              m.clientsCpu === null ? "" : m.clientsCpu.toFixed(3),
              m.statement ? `${m.statement.p50.toFixed(2)}/${m.statement.p99.toFixed(2)}` : "",
              m.statement ? m.statement.perStatement.toFixed(1) : "",
              `${m.rungs.checkpoint}/${m.rungs.baseline}/${m.rungs.cold}`,
              transport !== "in-process" && baseP99 !== undefined ? `${(m.p99 / baseP99).toFixed(2)}x` : "",
              m.machine?.stealPercent == null ? "?" : m.machine.stealPercent.toFixed(1),
              m.machine?.fsync ? `${m.machine.fsync.p99.toFixed(1)}/${m.machine.fsync.max.toFixed(1)}` : "off",
            ]);
          }
          if (size === GOAL_SIZE && ALLOCATION_TRANSPORTS.includes(transport)) {
            process.stderr.write(`measuring what ${ALLOCATION_ACQUIRES} acquires allocate, ${transport}…\n`);
            const load = { clients: GOAL_CLIENTS, rate: null };
            const bytes = await allocatedPerAcquire(
              () => run(shape, load, ALLOCATION_ACQUIRES, 20_000_000 + offset),
              ALLOCATION_ACQUIRES,
            );
            allocations.push(`${transport} ${(bytes / 1000).toFixed(1)} kB`);
          }
        } finally {
          await close?.();
        }
      }
    } finally {
      await catalog.drop();
    }
  }
  await probe.close();
  const header = [
    "snapshots",
    "transport",
    "clients",
    "load",
    "acquires",
    "p50 ms",
    "p99 ms",
    "max ms",
    "acquires/s",
    "cpu ms node+pg",
    "cpu wait ms node+pg",
    "clients cpu ms",
    "statement p50/p99 ms",
    "acquires/statement",
    "ckpt/base/cold",
    "p99 vs in-process",
    "steal %",
    "fsync p99/max ms",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join("  ");
  process.stdout.write(
    `\nacquire latency, PostgreSQL (goal: p99 < ${GOAL_P99_MS} ms at 100k with ${GOAL_CLIENTS} clients)\n${settings}\n`,
  );
  process.stdout.write(`${line(header)}\n${line(widths.map((w) => "-".repeat(w)))}\n`);
  for (const row of rows) process.stdout.write(`${line(row)}\n`);
  for (const plan of statementPlans) process.stdout.write(`${plan}\n`);
  if (allocations.length > 0) {
    process.stdout.write(
      `allocated per acquire at ${GOAL_SIZE}, ${GOAL_CLIENTS} clients closed-loop, ${ALLOCATION_ACQUIRES} acquires ` +
        `(V8 sampling heap profiler, collected objects included; in process: the service and its clients, ` +
        `over HTTP: the server alone): ${allocations.join(", ")}\n`,
    );
  }
  // The goals are stated at 100k snapshots with 16 clients.
  const at = (transport: Transport, paced: boolean) =>
    results.find(
      (r) =>
        r.size === GOAL_SIZE && r.clients === GOAL_CLIENTS && r.transport === transport && (r.rate !== null) === paced,
    );
  const verdict = (met: boolean) => (met ? "met" : "MISSED");
  const closed = at("in-process", false);
  const paced = at("in-process", true);
  if (closed) {
    process.stdout.write(
      `goal ${verdict(meetsClosedGoal(closed))}: p99 ${closed.p99.toFixed(2)} ms < ${GOAL_P99_MS} ms, ${GOAL_CLIENTS} clients closed-loop at ${GOAL_SIZE}\n`,
    );
    if (closed.cpuPerAcquire !== null) {
      // One statement in flight: each closed-loop acquire waits for its whole batch, whose CPU
      // (the service's and PostgreSQL's, one after the other) is about clients × CPU per acquire.
      const cycle = GOAL_CLIENTS * closed.cpuPerAcquire;
      process.stdout.write(
        `  closed: a batch of ${GOAL_CLIENTS} acquires costs ${cycle.toFixed(2)} ms of CPU (${GOAL_CLIENTS} x ${closed.cpuPerAcquire.toFixed(3)} ms), ` +
          `run one after the other; every acquire in it waits that long, against a p99 goal of ${GOAL_P99_MS} ms\n`,
      );
    }
    if (closed.statement) {
      // Each closed-loop acquire waits for the statement that carries it: when the statement's
      // own p99 is at the acquire's, the database's round trip (its CPU and the commit's flush)
      // sets the tail, not the time the service spends around it.
      const st = closed.statement;
      process.stdout.write(
        `  closed: the acquire statement carried ${st.perStatement.toFixed(1)} acquires on average; its round trip ` +
          `(execution, commit and flush) was p50 ${st.p50.toFixed(2)} ms, p99 ${st.p99.toFixed(2)} ms, ` +
          `against the acquire's p50 ${closed.p50.toFixed(2)} ms, p99 ${closed.p99.toFixed(2)} ms\n`,
      );
    }
    if (paced) {
      process.stdout.write(
        `goal ${verdict(meetsPacedGoal(paced, closed))}: paced p99 ${paced.p99.toFixed(2)} ms <= closed p99 ${closed.p99.toFixed(2)} ms at ${GOAL_SIZE}\n`,
      );
    }
    for (const [name, row] of [
      ["closed", closed],
      ["paced", paced],
    ] as const) {
      const floor = at("db-floor", name === "paced");
      if (!row || !floor) continue;
      const m = row.machine;
      process.stdout.write(
        `  ${name}: the commit floor here (one row inserted per request, same clients and coalescing) is p99 ` +
          `${floor.p99.toFixed(2)} ms; ` +
          // The floor runs in a window of its own: when its p99 is the higher, the disk's stalls
          // in that window, not the acquire's work, set the tail.
          (row.p99 >= floor.p99
            ? `the acquire's own work adds ${(row.p99 - floor.p99).toFixed(2)} ms at p99`
            : `above the acquire's (the disk stalled more while the floor ran)`) +
          (m?.fsync
            ? `; meanwhile the disk's fdatasync p99/worst was ${m.fsync.p99.toFixed(1)}/${m.fsync.max.toFixed(1)} ms`
            : "") +
          (m?.stealPercent != null ? ` and ${m.stealPercent.toFixed(1)}% of CPU was stolen` : "") +
          "\n",
      );
    }
    const asyncClosed = at("no-disk-wait", false);
    const asyncPaced = at("no-disk-wait", true);
    if (asyncClosed && asyncPaced) {
      // The same acquires, the same loads, only the commit's wait for the WAL flush removed.
      // Each goal judged again on these rows: met here but missed durably means the wait is what
      // misses it; missed here too means something besides the disk does.
      const judge = (durable: boolean, withoutWait: boolean) =>
        durable
          ? "met with the wait too"
          : withoutWait
            ? "met without it: the WAL flush here is what misses it"
            : "missed without it too";
      const closedLine = judge(meetsClosedGoal(closed), meetsClosedGoal(asyncClosed));
      const pacedLine = judge(
        paced !== undefined && meetsPacedGoal(paced, closed),
        meetsPacedGoal(asyncPaced, asyncClosed),
      );
      process.stdout.write(
        `  without the wait for the disk at commit (no-disk-wait: a diagnosis, never the product's setting): ` +
          `closed p99 ${asyncClosed.p99.toFixed(2)} ms (${closedLine}); ` +
          `paced p99 ${asyncPaced.p99.toFixed(2)} ms against its closed ${asyncClosed.p99.toFixed(2)} ms (${pacedLine})\n`,
      );
    }
  }
  for (const pacedLoad of [false, true]) {
    const base = at("in-process", pacedLoad);
    const http = at("http", pacedLoad);
    if (!base || !http) continue;
    const ratio = http.p99 / base.p99;
    process.stdout.write(
      `goal ${verdict(ratio <= GOAL_HTTP_RATIO)}: HTTP p99 ${http.p99.toFixed(2)} ms = ${ratio.toFixed(2)}x in-process (<= ${GOAL_HTTP_RATIO}x), ${pacedLoad ? "paced" : "closed"} at ${GOAL_SIZE}\n`,
    );
    const floor = at("http-floor", pacedLoad);
    if (floor) {
      const floorRatio = floor.p99 / base.p99;
      process.stdout.write(
        `  the HTTP floor here (no server code at all) is p99 ${floor.p99.toFixed(2)} ms = ${floorRatio.toFixed(2)}x in-process: ` +
          // What the goal leaves any server code at p99, said as a figure: a floor just under 2x leaves
          // next to nothing, which "within reach" would hide.
          `${floorRatio > GOAL_HTTP_RATIO ? "the goal is out of reach on this machine whatever the server does" : `the goal leaves any server code ${(GOAL_HTTP_RATIO * base.p99 - floor.p99).toFixed(2)} ms at p99`}; ` +
          `the server adds ${(http.p99 - floor.p99).toFixed(2)} ms at p99\n`,
      );
    }
    if (!pacedLoad && http.cpuPerAcquire !== null && http.clientsCpu !== null) {
      // Over HTTP the server, PostgreSQL and the clients all need the cores for every acquire, so
      // a round of the closed loop (each client's one acquire) takes at least the CPU it needs
      // spread over all of them, whatever overlaps: a floor under the median, set by the machine.
      const cores = availableParallelism();
      const perAcquire = http.cpuPerAcquire + http.clientsCpu;
      const round = GOAL_CLIENTS * perAcquire;
      const least = round / cores;
      process.stdout.write(
        `  closed: over HTTP a round of ${GOAL_CLIENTS} acquires costs ${round.toFixed(2)} ms of CPU ` +
          `(${GOAL_CLIENTS} x ${perAcquire.toFixed(3)} ms: server and PostgreSQL ` +
          `${http.cpuPerAcquire.toFixed(3)}, clients ${http.clientsCpu.toFixed(3)}); on ${cores} cores no round takes under ` +
          `${least.toFixed(2)} ms = ${(least / base.p50).toFixed(2)}x the in-process p50 (${base.p50.toFixed(2)} ms), ` +
          `against an HTTP p50 of ${http.p50.toFixed(2)} ms\n`,
      );
    }
    const direct = at("http-direct", pacedLoad);
    if (direct) {
      const directRatio = direct.p99 / base.p99;
      process.stdout.write(
        `  HTTP plus the same acquire (no tRPC, no token lookup) is p99 ${direct.p99.toFixed(2)} ms = ${directRatio.toFixed(2)}x in-process: ` +
          // One run's verdict: over a day's runs the bare server meets the goal in some and not others.
          `${directRatio > GOAL_HTTP_RATIO ? "the bare server missed the goal too in this run" : "the bare server met the goal in this run"}; ` +
          (http.p99 >= direct.p99
            ? `tRPC and the token check add ${(http.p99 - direct.p99).toFixed(2)} ms at p99\n`
            : `the app's server came out ${(direct.p99 - http.p99).toFixed(2)} ms faster at p99 than the bare one in this run (each row runs in a window of its own)\n`),
      );
    }
    // One thread reads every request, runs the service's part and writes every answer: the busier
    // it is, the longer each of them waits for it, and in a closed loop the slowest part sets the pace.
    const percent = (share: number) => `${Math.round(share * 100)}%`;
    const beside = [
      ...(direct ? [`the bare server's ${percent(direct.loopBusy)}`] : []),
      `in process the service's and its clients' ${percent(base.loopBusy)}`,
    ];
    process.stdout.write(
      `  ${pacedLoad ? "paced" : "closed"}: the server's event loop was busy ${percent(http.loopBusy)} of the row (${beside.join(", ")})\n`,
    );
  }
}

await main();
