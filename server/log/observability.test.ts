// The log and /metrics as operators rely on them, on both databases: the app's HTTP server (the
// request path `strata serve` runs) and a real `strata worker` process do an agent's flow with
// seeded secrets (a checkout whose .env holds a secret, an agent token, a dashboard password and
// its session cookie, a blob's bytes); every line is JSON with the fields the docs name, and no
// secret appears anywhere in it. STRATA_LOG_LEVEL=warn keeps info lines out; /metrics answers
// 404 without a token configured, 401 without the right one, and the metrics with it.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "../auth/agents.ts";
import { createAuth, createUser } from "../auth/dashboard-auth.ts";
import { loadConfig } from "../config/config.ts";
import { runStrata, STRATA_BIN, type StrataRun } from "../testing/cli.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { serveApp, type TestServer } from "../testing/http-server.ts";
import { uniqueName } from "../testing/lineage.ts";
import { initRepository, removeTemporaryDirectories, write } from "../testing/repos.ts";
import { testHostRoots } from "../testing/host-roots.ts";
import { migrate } from "../db/migrate.ts";
import { JobQueue } from "../jobs/queue.ts";
import { readQueueDepth } from "../jobs/queue-depth.ts";
import { freePort } from "../testing/ports.ts";
import { startPrivatePostgres, type PrivatePostgres } from "../testing/private-postgres.ts";
import { killWorkers, startWorker, stopGently, waitFor, type WorkerChild } from "../testing/worker-processes.ts";
import { configureLogging } from "./logger.ts";
import { answerMetrics, startMetrics, type Metrics } from "./metrics.ts";

const dataDir = mkdtempSync(path.join(os.tmpdir(), "strata-log-"));
afterAll(() => {
  killWorkers();
  rmSync(dataDir, { recursive: true, force: true });
  removeTemporaryDirectories();
});

type Line = Record<string, unknown>;

const METRICS_TOKEN = `metrics-${randomBytes(12).toString("hex")}`;

describeEachDatabase("structured logs and /metrics", (catalog, kind) => {
  let metrics: Metrics;
  let server: TestServer;
  let token: string;
  let agentName: string;
  const roots = testHostRoots();
  let password: string;
  const envSecret = `ENV-SECRET-${randomBytes(9).toString("hex")}`;
  const blobSecret = `BLOB-CONTENT-${randomBytes(9).toString("hex")}`;
  const captured: string[] = [];
  const host = uniqueName("host");
  let worker: ChildProcess;
  let workerLog = "";
  let workerExited: Promise<unknown>;
  let quietRun: Promise<StrataRun>;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        captured.push(chunk.toString());
        done();
      },
    });
    await configureLogging({ level: "info", destination: sink });
    metrics = startMetrics();
    // Processes start while the rest is set up (each takes a moment): a real worker for this
    // suite's host, and a collection run at STRATA_LOG_LEVEL=warn.
    worker = spawn(process.execPath, [STRATA_BIN, "worker", "--host", host, "--poll-ms", "50"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        NODE_ENV: "test",
        DATABASE_URL: catalog().url,
        STRATA_DATA_DIR: dataDir,
        STRATA_SWEEP_INTERVAL_SECONDS: "0",
        STRATA_GC_INTERVAL_SECONDS: "0",
        ...roots.env,
      },
    });
    worker.stderr!.on("data", (c: Buffer) => (workerLog += c.toString()));
    worker.stdout!.on("data", (c: Buffer) => (workerLog += c.toString()));
    workerExited = new Promise((resolve) => worker.on("exit", resolve));
    quietRun = runStrata(["gc", "collect", "--force"], {
      DATABASE_URL: catalog().url,
      STRATA_DATA_DIR: dataDir,
      STRATA_LOG_LEVEL: "warn",
    });
    agentName = uniqueName("logged");
    token = (await createAgent(catalog().db, { name: agentName })).token;
    password = `pw-${randomBytes(12).toString("hex")}`;
    await createUser(catalog().db, { email: `admin-${kind}@example.com`, role: "admin", password });
    const auth = createAuth(
      catalog(),
      loadConfig({ STRATA_DATA_DIR: dataDir, STRATA_SIGNIN_ATTEMPTS_PER_MINUTE: "1000" }),
    );
    server = await serveApp({ db: catalog().db, auth, metrics: { metrics, token: METRICS_TOKEN } });
  });
  afterAll(async () => {
    metrics?.stop();
    if (worker?.exitCode === null) worker.kill("SIGKILL");
    await quietRun?.catch(() => undefined);
    await server?.close();
  });

  const logText = () => captured.join("");
  const logLines = () =>
    logText()
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Line);

  const call = (procedure: string, input: unknown, headers: Record<string, string>) =>
    fetch(`${server.url}/api/trpc/${procedure}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ json: input }),
    });
  const query = (procedure: string, input: unknown, headers: Record<string, string>) =>
    fetch(`${server.url}/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`, {
      headers,
    });

  it("logs every request and job attempt as JSON with its fields, and no secret anywhere", async () => {
    const bearer = { authorization: `Bearer ${token}` };
    const checkout = roots.give(agentName, initRepository({ "README.md": "# logged\n" }));
    write(checkout, ".env", `API_KEY=${envSecret}\n`);
    write(checkout, "src/work.txt", "work in progress\n");
    const key = {
      repository: { identity: `example.invalid/${uniqueName("logged")}` },
      backendKind: "local",
      baseImage: "img",
      workContextId: uniqueName("wc"),
    };

    const enqueued = await call("job.enqueueCapture", { host, dir: checkout, key }, bearer);
    expect(enqueued.status).toBe(200);
    const requestId = enqueued.headers.get("x-request-id");
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const job = ((await enqueued.json()) as { result: { data: { json: { id: string } } } }).result.data.json;

    // The worker started by beforeAll captures the checkout (its .env is denied, never stored or logged).
    try {
      for (let i = 0; ; i++) {
        const row = await catalog().db.job.findUniqueOrThrow({ where: { id: job.id } });
        if (row.state === "completed" || row.state === "failed") {
          expect(row.state, JSON.stringify(row.error)).toBe("completed");
          break;
        }
        if (i > 600) throw new Error(`the capture job did not finish: ${workerLog}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      worker.kill("SIGTERM");
      await workerExited;
    }

    // The rest of an agent's flow: acquire, a blob upload, a refused token.
    const acquired = await call(
      "workspace.acquire",
      { ...key, canonicalRef: "refs/heads/main", workspace: "/workspaces/elsewhere", host },
      bearer,
    );
    expect(acquired.status).toBe(200);
    const digest = createHash("sha256").update(blobSecret).digest("hex");
    const put = await fetch(`${server.url}/api/blobs/${digest}`, { method: "PUT", headers: bearer, body: blobSecret });
    expect(put.status).toBe(201);
    const refused = await query("job.list", {}, { authorization: `Bearer ${token}x` });
    expect(refused.status).toBe(401);
    // The same calls over REST (/api/v1).
    const restRefused = await fetch(`${server.url}/api/v1/job/list`, {
      headers: { authorization: `Bearer ${token}x` },
    });
    expect(restRefused.status).toBe(401);
    expect((await fetch(`${server.url}/api/v1/job/list?limit=5`, { headers: bearer })).status).toBe(200);

    // A dashboard user signs in with a password; their session cookie calls a page's query.
    const signIn = await fetch(`${server.url}/api/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://localhost:3000" },
      body: JSON.stringify({ email: `admin-${kind}@example.com`, password }),
    });
    expect(signIn.status).toBe(200);
    const cookies = signIn.headers.getSetCookie().map((c) => c.split(";")[0]!);
    expect(cookies.length).toBeGreaterThan(0);
    const overview = await query("dashboard.collection", undefined, { cookie: cookies.join("; ") });
    expect(overview.status).toBe(200);

    const lines = logLines();
    const requests = lines.filter((l) => l.msg === "request");
    for (const line of requests) {
      expect(line).toMatchObject({ level: "info", reqId: expect.any(String), method: expect.any(String) });
      expect(line).toHaveProperty("route");
      expect(line).toHaveProperty("status");
      expect(line).toHaveProperty("outcome");
      expect(typeof line.durationMs).toBe("number");
      expect(typeof line.time).toBe("string");
    }
    const agent = await catalog().db.agentToken.findFirstOrThrow({ where: { prefix: token.slice(0, 13) } });
    expect(requests).toContainEqual(
      expect.objectContaining({
        reqId: requestId,
        method: "POST",
        route: "trpc:job.enqueueCapture",
        procedures: ["job.enqueueCapture"],
        agentId: agent.agentId,
        status: 200,
        outcome: "OK",
      }),
    );
    expect(requests).toContainEqual(
      expect.objectContaining({ route: "trpc:workspace.acquire", agentId: agent.agentId, outcome: "OK" }),
    );
    expect(requests).toContainEqual(
      expect.objectContaining({ route: "/api/blobs/:digest", method: "PUT", agentId: agent.agentId, status: 201 }),
    );
    expect(requests).toContainEqual(
      expect.objectContaining({ procedures: ["job.list"], status: 401, outcome: "UNAUTHORIZED" }),
    );
    expect(requests).toContainEqual(
      expect.objectContaining({ route: "/api/v1/job/list", status: 401, outcome: "UNAUTHORIZED" }),
    );
    expect(requests).toContainEqual(
      expect.objectContaining({ route: "/api/v1/job/list", agentId: agent.agentId, status: 200, outcome: "OK" }),
    );
    const user = await catalog().db.user.findFirstOrThrow({ where: { email: `admin-${kind}@example.com` } });
    expect(requests).toContainEqual(
      expect.objectContaining({ procedures: ["dashboard.collection"], userId: user.id, status: 200 }),
    );

    // The worker's stderr is JSON lines too: one per job attempt, naming the job.
    const workerLines = workerLog
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Line);
    expect(workerLines).toContainEqual(
      expect.objectContaining({
        level: "info",
        msg: "job attempt",
        jobId: job.id,
        kind: "capture",
        host,
        attempt: 1,
        outcome: "completed",
        durationMs: expect.any(Number),
      }),
    );

    // No secret, token, password or cookie anywhere in either log.
    const everything = logText() + workerLog;
    for (const secret of [envSecret, blobSecret, token, token.slice("strata_".length), password, ...cookies]) {
      expect(everything).not.toContain(secret);
    }
    for (const cookie of cookies) expect(everything).not.toContain(cookie.slice(cookie.indexOf("=") + 1));
  }, 60_000);

  it("keeps info lines out at STRATA_LOG_LEVEL=warn", async () => {
    const sink: string[] = [];
    await configureLogging({
      level: "warn",
      destination: new Writable({ write: (c: Buffer, _e, done) => done(void sink.push(c.toString())) }),
    });
    expect((await query("job.list", {}, { authorization: `Bearer ${token}` })).status).toBe(200);
    expect(sink.join("")).toBe("");

    const run = await quietRun;
    expect(run.code, run.stderr).toBe(0);
    // (cli/commands/gc.test.ts reads the same line at the default level.)
    expect(run.stderr).not.toContain("collection run");
  });

  it("serves /metrics behind its token", async () => {
    const off = await serveApp({ db: catalog().db, metrics: { metrics: null, token: undefined } });
    try {
      expect((await fetch(`${off.url}/metrics`)).status).toBe(404);
    } finally {
      await off.close();
    }
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer wrong-token" } })).status).toBe(
      401,
    );
    const scraped = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await scraped.text();
    for (const name of [
      "strata_http_request_duration_seconds",
      "strata_acquire_duration_seconds",
      "strata_db_statement_duration_seconds",
      "strata_db_statement_requests",
      "strata_job_attempts_total",
      "strata_job_attempt_duration_seconds",
      "strata_collection_runs_total",
      "strata_collection_run_duration_seconds",
    ]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
    expect(text).toMatch(
      /strata_http_request_duration_seconds_count\{route="trpc:job.enqueueCapture",status_class="2xx"\} 1/,
    );
    expect(text).toMatch(/strata_acquire_duration_seconds_count\{outcome="OK"\} 1/);
    // PostgreSQL decides an acquire in a set-based statement, measured with the acquires it
    // carried; SQLite's runs in a Prisma transaction, with no statement to measure.
    const statements = /strata_db_statement_requests_count\{statement="acquire",outcome="ok"\} (\d+)/.exec(text);
    const carried = /strata_db_statement_requests_sum\{statement="acquire",outcome="ok"\} (\d+)/.exec(text);
    if (kind === "sqlite") {
      expect(statements).toBeNull();
    } else {
      expect(Number(statements?.[1])).toBeGreaterThanOrEqual(1);
      expect(Number(carried?.[1])).toBeGreaterThanOrEqual(1);
      expect(text).toMatch(/strata_db_statement_duration_seconds_count\{statement="acquire",outcome="ok"\} [1-9]/);
    }
    expect(text).not.toContain(METRICS_TOKEN);
  });
});

/** The JSON line a `strata worker` writes once it has started. */
function startLine(worker: WorkerChild): Promise<Line> {
  return waitFor("the worker's start line", async () =>
    worker
      .stderr()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Line)
      .find((l) => l.msg === "worker started"),
  );
}

describeEachDatabase("a worker's /metrics and the queue's depth", (catalog) => {
  it("a `strata worker` with a metrics port counts its job attempts by kind, outcome and host, behind the token", async () => {
    const port = await freePort();
    const host = uniqueName("metered");
    const worker = startWorker(catalog().url, host, dataDir, {
      STRATA_METRICS_TOKEN: METRICS_TOKEN,
      STRATA_WORKER_METRICS_PORT: String(port),
    });
    try {
      const started = await startLine(worker);
      expect(started.metrics).toBe(`http://127.0.0.1:${port}/metrics`);
      // A maintenance job any worker may run: this one is the only worker of the catalog.
      const job = await new JobQueue(catalog().db).enqueue(catalog().db, {
        kind: "sweep",
        host: null,
        agentId: null,
        data: {},
      });
      await waitFor("the sweep to complete", async () => {
        const row = await catalog().db.job.findUniqueOrThrow({ where: { id: job!.id } });
        expect(row.state, `${JSON.stringify(row.error)}\n${worker.stderr()}`).not.toBe("failed");
        return row.state === "completed";
      });

      const url = `http://127.0.0.1:${port}/metrics`;
      expect((await fetch(url)).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: "Bearer wrong-token-0123456789" } })).status).toBe(401);
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404);
      const scraped = await fetch(url, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(scraped.status).toBe(200);
      const text = await scraped.text();
      expect(text).toContain(`strata_job_attempts_total{kind="sweep",outcome="completed",host="${host}"} 1`);
      expect(text).toMatch(
        new RegExp(`strata_job_attempt_duration_seconds_count\\{kind="sweep",outcome="completed",host="${host}"\\} 1`),
      );
      expect(text).toContain("# TYPE strata_job_lease_expiries_total counter");
      expect(text).toContain("# TYPE strata_job_reclaims_total counter");
      // The app's queue gauges are the app's: a worker has no catalog reader for them.
      expect(text).not.toContain("strata_jobs_waiting");
    } finally {
      await stopGently(worker);
    }
  }, 60_000);

  it("a worker without a metrics port serves nothing, and says so", async () => {
    const worker = startWorker(catalog().url, uniqueName("unmetered"), dataDir, {
      STRATA_METRICS_TOKEN: METRICS_TOKEN,
    });
    try {
      const started = await startLine(worker);
      expect(started.metrics).toBe("none (no --metrics-port or STRATA_WORKER_METRICS_PORT)");
    } finally {
      await stopGently(worker);
    }
  }, 60_000);

  it("routes better-auth's own lines through the JSON log", async () => {
    const lines: string[] = [];
    await configureLogging({
      level: "info",
      destination: new Writable({ write: (c: Buffer, _e, done) => done(void lines.push(c.toString())) }),
    });
    const auth = createAuth(catalog(), loadConfig({ STRATA_DATA_DIR: dataDir, STRATA_LOG_LEVEL: "info" }));
    const answer = await auth.handler(
      new Request("http://localhost:3000/api/auth/sign-in/email", {
        method: "POST",
        headers: { "content-type": "application/json", origin: "http://localhost:3000" },
        body: JSON.stringify({ email: "nobody@example.com", password: "not-the-password-1" }),
      }),
    );
    expect(answer.status).toBe(401);
    const parsed = lines.map((l) => JSON.parse(l) as Line);
    expect(parsed).toContainEqual(expect.objectContaining({ level: "warn", component: "better-auth" }));
  });

  describe("the app's queue gauges", () => {
    const scrape = async (metrics: Metrics) => {
      const { createServer } = await import("node:http");
      const server = createServer((req, res) => void answerMetrics(req, res, { metrics, token: METRICS_TOKEN }));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      try {
        const { port } = server.address() as { port: number };
        const response = await fetch(`http://127.0.0.1:${port}/metrics`, {
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
        });
        return { status: response.status, text: await response.text() };
      } finally {
        server.close();
      }
    };

    it("give the jobs waiting, running and the oldest waiting age by host and kind, read at scrape time", async () => {
      const db = catalog().db;
      const queue = new JobQueue(db);
      const agent = await createAgent(db, { name: uniqueName("queued") });
      const hostA = uniqueName("hosta");
      const hostB = uniqueName("hostb");
      const target = (host: string, kind: "capture" | "restore") =>
        ({ kind, host, agentId: agent.agentId, data: {} }) as const;
      const first = await queue.enqueue(db, target(hostA, "capture"));
      await queue.enqueue(db, target(hostA, "capture"));
      await queue.enqueue(db, target(hostA, "restore"));
      await queue.enqueue(db, target(hostB, "restore"));
      expect(await queue.fetch({ host: hostB, workerId: `${hostB}|1|||||` })).not.toBeNull();
      await queue.enqueue(db, { kind: "gc", host: null, agentId: null, data: {} });
      const now = first!.createdAt.getTime() + 90_000;

      let reads = 0;
      const metrics = startMetrics({
        queueDepth: () => {
          reads += 1;
          return readQueueDepth(db);
        },
        now: () => now,
      });
      try {
        const { status, text } = await scrape(metrics);
        expect(status).toBe(200);
        expect(reads).toBe(1);
        expect(text).toContain(`strata_jobs_waiting{host="${hostA}",kind="capture"} 2`);
        expect(text).toContain(`strata_jobs_waiting{host="${hostA}",kind="restore"} 1`);
        expect(text).toContain(`strata_jobs_active{host="${hostA}",kind="capture"} 0`);
        expect(text).toContain(`strata_jobs_waiting{host="${hostB}",kind="restore"} 0`);
        expect(text).toContain(`strata_jobs_active{host="${hostB}",kind="restore"} 1`);
        expect(text).toContain(`strata_jobs_waiting{host="",kind="gc"} 1`);
        expect(text).toContain(`strata_job_oldest_waiting_seconds{host="${hostA}",kind="capture"} 90`);
        expect(text).not.toMatch(new RegExp(`strata_job_oldest_waiting_seconds\\{host="${hostB}"`));
        expect(text).toContain(`strata_metrics_scrape_errors_total{source="queue"} 0`);

        // Read again at the next scrape: the claimed job is gone from the waiting count.
        await queue.fetch({ host: hostA, workerId: `${hostA}|1|||||` });
        const again = await scrape(metrics);
        expect(reads).toBe(2);
        expect(again.text).toContain(`strata_jobs_waiting{host="${hostA}",kind="capture"} 1`);
        expect(again.text).toContain(`strata_jobs_active{host="${hostA}",kind="capture"} 1`);
      } finally {
        metrics.stop();
      }
    });

    it("leave a scrape whole when the catalog cannot be read, and count the failure", async () => {
      const metrics = startMetrics({
        queueDepth: () => Promise.reject(Object.assign(new Error("Can't reach database server"), { code: "P1001" })),
      });
      try {
        const { status, text } = await scrape(metrics);
        expect(status).toBe(200);
        expect(text).toContain("# TYPE strata_jobs_waiting gauge");
        expect(text).not.toMatch(/^strata_jobs_waiting\{/m);
        expect(text).toContain(`strata_metrics_scrape_errors_total{source="queue"} 1`);
        expect(text).toContain("strata_process_cpu_seconds_total");
        expect((await scrape(metrics)).text).toContain(`strata_metrics_scrape_errors_total{source="queue"} 2`);
      } finally {
        metrics.stop();
      }
    });

    it("answer a scrape without them when the catalog does not answer in time", async () => {
      // A catalog cut off by the network: the read never settles.
      const metrics = startMetrics({ queueDepth: () => new Promise(() => undefined), queueTimeoutMs: 200 });
      try {
        const started = Date.now();
        const { status, text } = await scrape(metrics);
        expect(status).toBe(200);
        expect(Date.now() - started).toBeLessThan(2_000);
        expect(text).not.toMatch(/^strata_jobs_active\{/m);
        expect(text).toContain(`strata_metrics_scrape_errors_total{source="queue"} 1`);
      } finally {
        metrics.stop();
      }
    });
  });
});

describe("a `strata worker`'s log during a PostgreSQL outage", () => {
  let cluster: PrivatePostgres | null = null;
  afterAll(async () => {
    await cluster?.destroy();
  });

  it("says once that the catalog is unreachable, with its code only, and once that it is back", async () => {
    cluster = await startPrivatePostgres();
    await migrate(cluster.url);
    const worker = startWorker(cluster.url, uniqueName("outage"), dataDir, { STRATA_LOG_LEVEL: "info" });
    const lines = () =>
      worker
        .stderr()
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as Line);
    try {
      await waitFor("the worker's start line", async () => lines().some((l) => l.msg === "worker started"));
      const down = Date.now();
      await cluster.stop();
      // Its loop polls every 50 ms and its hand-back timer runs every second: dozens of failed tries.
      await new Promise((r) => setTimeout(r, 4_000));
      await cluster.start();
      await waitFor("the worker to see the catalog again", async () =>
        lines().some((l) => String(l.msg).startsWith("catalog reachable again")),
      );
      const during = lines().filter((l) => Date.parse(String(l.time)) >= down);
      const unreachable = during.filter((l) => String(l.msg).startsWith("catalog unreachable since"));
      expect(unreachable).toHaveLength(1);
      expect(unreachable[0]).toMatchObject({ level: "warn", code: expect.stringMatching(/^[A-Z0-9_]+$/) });
      expect(unreachable[0]!.failedTries).toBe(1);
      const back = during.filter((l) => String(l.msg).startsWith("catalog reachable again"));
      expect(back).toEqual([expect.objectContaining({ level: "info", failedTries: expect.any(Number) })]);
      expect(back[0]!.failedTries as number).toBeGreaterThan(1);
      // Nothing else at warn or above (the pool's notes of the connections it lost are debug lines).
      const loud = during.filter((l) => l.level === "warn" || l.level === "error");
      expect(loud.filter((l) => l !== unreachable[0])).toEqual([]);
      expect(worker.stderr()).not.toContain("Invalid `");
    } finally {
      await stopGently(worker);
    }
  }, 90_000);
});
