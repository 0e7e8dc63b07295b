// The fault test: real processes (`strata serve --no-worker` and `strata worker`, as an operator
// runs them) on a private PostgreSQL cluster (initdb/pg_ctl from the system's PostgreSQL, never
// the shared server) that this spec stops and starts again. What a client builds on when things
// fail:
//  1. the database stopped: every route class (agent and dashboard tRPC calls, blobs, auth,
//     pages) answers 503 UNAVAILABLE, retryable, with Retry-After and no internal text; the
//     signed-in dashboard says the catalog is unavailable and keeps its session; everything
//     answers again once the database is back;
//  2. an enqueue whose answer is lost (the client timed out while the jobs table was locked),
//     retried with its Idempotency-Key, creates exactly one job;
//  3. a worker killed with SIGKILL and restarted on its host runs its job again at once, long
//     before the lease (ten minutes here) could hand it out;
//  4. a restore job that fails for good leaves no pending restore and no active pin.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, request as requests, test, type APIRequestContext } from "@playwright/test";
import pg from "pg";
import { freePort } from "../server/testing/ports.ts";
import { startPrivatePostgres, type PrivatePostgres } from "../server/testing/private-postgres.ts";
import { killHard, killWorkers, startWorker, stopGently } from "../server/testing/worker-processes.ts";
import { call, dirtyCheckout, finished, type JobView } from "./jobs.ts";

const STRATA = "cli/strata.mjs";
const LEASE_SECONDS = "600";
const EMAIL = "operator@faults.test";
const AGENT = "faults-agent";

test.describe.configure({ mode: "serial" });

/**
 * Seconds from `since` (epoch ms) to the first JSON log line on `stderr` with message `msg` (and,
 * when given, `jobId`), by the time the line itself records; null when there is none.
 */
function secondsToLogLine(stderr: string, since: number, msg: string, jobId?: string): number | null {
  for (const line of stderr.split("\n")) {
    if (!line.startsWith("{")) continue;
    let fields: { msg?: string; time?: string | number; jobId?: string };
    try {
      fields = JSON.parse(line) as typeof fields;
    } catch {
      continue;
    }
    if (fields.msg !== msg || (jobId !== undefined && fields.jobId !== jobId) || fields.time === undefined) continue;
    return (new Date(fields.time).getTime() - since) / 1000;
  }
  return null;
}

/** The status of GET url, 0 when nothing answers (yet). */
function statusOf(url: string): Promise<number> {
  return fetch(url, { redirect: "manual" }).then(
    async (r) => (await r.arrayBuffer(), r.status),
    () => 0,
  );
}

test.describe("faults: a stopped database, a lost answer, a killed worker, a failed restore", () => {
  let cluster: PrivatePostgres;
  let work: string;
  let dataDir: string;
  let base: string;
  let app: ChildProcess | undefined;
  let appOutput = "";
  let env: Record<string, string>;
  let token: string;
  let password: string;
  let agent: APIRequestContext;
  let sql: pg.Pool;

  /** The agent's own folder of the workers' default agent root (the data directory's agents/). */
  const agentFolder = () => {
    const folder = path.join(dataDir, "agents", AGENT);
    mkdirSync(folder, { recursive: true });
    return folder;
  };

  const strata = (args: string[]) =>
    execFileSync(process.execPath, [STRATA, ...args], { encoding: "utf8", env: { ...process.env, ...env } });

  test.beforeAll(async () => {
    test.setTimeout(240_000);
    cluster = await startPrivatePostgres();
    work = mkdtempSync(path.join(tmpdir(), "strata-e2e-faults-"));
    dataDir = path.join(work, "data");
    mkdirSync(dataDir);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = {
      DATABASE_URL: cluster.url,
      STRATA_DATA_DIR: dataDir,
      STRATA_BIND: "127.0.0.1",
      PORT: String(port),
      STRATA_JOB_LEASE_SECONDS: LEASE_SECONDS,
      STRATA_SIGNIN_ATTEMPTS_PER_MINUTE: "1000",
      NEXT_TELEMETRY_DISABLED: "1",
    };
    strata(["migrate"]);
    password = (JSON.parse(strata(["user", "create", EMAIL, "--role", "operator", "--json"])) as { password: string })
      .password;
    token = (JSON.parse(strata(["agent", "create", AGENT, "--json"])) as { token: string }).token;

    app = spawn(process.execPath, [STRATA, "serve", "--no-worker"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    const keep = (chunk: Buffer) => (appOutput += chunk.toString());
    app.stdout!.on("data", keep);
    app.stderr!.on("data", keep);
    await expect
      .poll(
        async () => {
          if (app!.exitCode !== null) throw new Error(`strata serve exited (${app!.exitCode}):\n${appOutput}`);
          return fetch(`${base}/api/trpc/health`).then(
            (r) => r.status,
            () => 0,
          );
        },
        { timeout: 180_000, intervals: [500] },
      )
      .toBe(200);
    agent = await requests.newContext({ baseURL: base, extraHTTPHeaders: { Authorization: `Bearer ${token}` } });
    // The spec's own look at the catalog; its idle connections die when the cluster stops.
    sql = new pg.Pool({ connectionString: cluster.url, max: 2 });
    sql.on("error", () => undefined);
  });

  test.afterAll(async () => {
    killWorkers();
    await sql?.end().catch(() => undefined);
    await agent?.dispose();
    if (app && app.exitCode === null) {
      app.kill("SIGTERM");
      await new Promise((resolve) => app!.once("exit", resolve));
    }
    await cluster?.destroy();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  // eslint-disable-next-line no-empty-pattern -- Playwright needs the fixtures pattern, even an empty one.
  test.afterEach(({}, testInfo) => {
    // The app's whole output, beside the test's other results, when the test failed.
    if (testInfo.status !== testInfo.expectedStatus) writeFileSync(testInfo.outputPath("strata-serve.log"), appOutput);
  });

  const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
  const lineageKey = (name: string) => ({
    repository: { identity: `example.invalid/faults/${name}` },
    backendKind: "local",
    baseImage: "faults-image",
    workContextId: `${name}-${randomUUID()}`,
  });

  test("a stopped database: every route answers 503 UNAVAILABLE, the dashboard keeps its session, all recovers", async ({
    page,
  }) => {
    test.setTimeout(120_000);
    await page.goto(`${base}/signin`);
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("whoami")).toContainText(EMAIL);
    const cookie = (await page.context().cookies(base)).map((c) => `${c.name}=${c.value}`).join("; ");
    expect(cookie).toContain("session_token");

    const bearer = { authorization: `Bearer ${token}` };
    const stored = randomBytes(64);
    const storedDigest = sha256(stored);
    const put = (bytes: Uint8Array<ArrayBuffer>, digest: string) =>
      fetch(`${base}/api/blobs/${digest}`, { method: "PUT", headers: bearer, body: bytes });
    expect((await put(stored, storedDigest)).status).toBe(201);
    const fresh = randomBytes(32);
    const freshDigest = sha256(fresh);
    const input = (value: unknown) => encodeURIComponent(JSON.stringify({ json: value }));
    const batch = encodeURIComponent(JSON.stringify({ 0: { json: {} }, 1: { json: {} } }));

    /** One request of each route class, as clients send them. */
    const calls: Record<string, () => Promise<Response>> = {
      "tRPC agent call": () => fetch(`${base}/api/trpc/lineage.list?input=${input({})}`, { headers: bearer }),
      "tRPC agent batch": () =>
        fetch(`${base}/api/trpc/lineage.list,lineage.list?batch=1&input=${batch}`, { headers: bearer }),
      "tRPC dashboard call": () => fetch(`${base}/api/trpc/dashboard.collection`, { headers: { cookie } }),
      "blob GET": () => fetch(`${base}/api/blobs/${storedDigest}`, { headers: bearer }),
      "blob PUT": () => put(fresh, freshDigest),
      "auth: session": () => fetch(`${base}/api/auth/get-session`, { headers: { cookie } }),
      "auth: sign-in": () =>
        fetch(`${base}/api/auth/sign-in/email`, {
          method: "POST",
          headers: { "content-type": "application/json", origin: base },
          body: JSON.stringify({ email: EMAIL, password }),
        }),
      "dashboard page": () => fetch(`${base}/pins`, { headers: { cookie }, redirect: "manual" }),
    };

    await cluster.stop();
    for (const [name, send] of Object.entries(calls)) {
      const response = await send();
      const body = await response.text();
      expect({ name, status: response.status, retryAfter: response.headers.get("retry-after") }).toEqual({
        name,
        status: 503,
        retryAfter: "3",
      });
      if (name === "dashboard page") expect(body).toContain("Catalog unavailable — retrying");
      else {
        expect(body, name).toContain('"code":"UNAVAILABLE"');
        expect(body, name).toContain('"retryable":true');
      }
      for (const internal of [String(cluster.port), "Invalid `", "prisma", "Prisma", "ECONNREFUSED"])
        expect(body, `${name} names "${internal}"`).not.toContain(internal);
    }
    // The signed-in browser: the page says the catalog is unavailable; it is not sent to sign in.
    const during = await page.goto(`${base}/pins`);
    expect(during?.status()).toBe(503);
    await expect(page.getByText("Catalog unavailable — retrying")).toBeVisible();

    await cluster.start();
    // The page retries by itself and renders for the same session.
    await expect(page.getByTestId("whoami")).toContainText(EMAIL, { timeout: 30_000 });
    expect(new URL(page.url()).pathname).toBe("/pins");
    const statuses: Record<string, number> = {};
    for (const [name, send] of Object.entries(calls)) statuses[name] = (await send()).status;
    expect(statuses).toEqual({
      "tRPC agent call": 200,
      "tRPC agent batch": 200,
      "tRPC dashboard call": 200,
      "blob GET": 200,
      "blob PUT": 201,
      "auth: session": 200,
      "auth: sign-in": 200,
      "dashboard page": 200,
    });
  });

  test("an enqueue whose answer was lost while the jobs table was locked, retried with its key, creates one job", async () => {
    const host = `faults-lost-${randomUUID().slice(0, 8)}`;
    const key = randomUUID();
    const body = JSON.stringify({ json: { host, dir: "/home/dev/checkout", key: lineageKey("lost") } });
    const enqueue = (signal?: AbortSignal) =>
      fetch(`${base}/api/trpc/job.enqueueCapture`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": key },
        body,
        signal,
      });

    const locker = new pg.Client({ connectionString: cluster.url });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE");
      // The client gives up; the server's transaction still waits on the lock.
      const lost = await enqueue(AbortSignal.timeout(2_000)).then(
        (r) => `answered ${r.status}`,
        (e: unknown) => (e as Error).name,
      );
      expect(lost).toBe("TimeoutError");
      await locker.query("COMMIT");
    } finally {
      await locker.end();
    }

    // The retry, with the same key, answers with the one job there is.
    const retried = await enqueue();
    expect(retried.status).toBe(200);
    const job = ((await retried.json()) as { result: { data: { json: JobView } } }).result.data.json;
    const jobs = await sql.query<{ id: string }>("SELECT id FROM jobs WHERE host = $1", [host]);
    expect(jobs.rows.map((r) => r.id)).toEqual([job.id]);
    // Once more, as a client that never learns whether its retry landed either: still one job.
    expect((await enqueue()).status).toBe(200);
    expect((await sql.query("SELECT id FROM jobs WHERE host = $1", [host])).rowCount).toBe(1);
  });

  test("a worker killed with SIGKILL and restarted on its host runs its job again at once", async () => {
    test.setTimeout(120_000);
    const host = `faults-kill-${randomUUID().slice(0, 8)}`;
    const repo = dirtyCheckout(path.join(agentFolder(), "kill-checkout"));
    const job = (await call(
      agent,
      "job.enqueueCapture",
      { host, dir: repo, key: lineageKey("kill") },
      "mutation",
    )) as JobView;
    // The worker claims the job and stops in the middle of it (alive, its claim held).
    const first = startWorker(cluster.url, host, dataDir, {
      STRATA_JOB_LEASE_SECONDS: LEASE_SECONDS,
      STRATA_TEST_PAUSE_AT: "capture:publish",
    });
    await expect.poll(() => first.stderr().includes("paused at capture:publish"), { timeout: 60_000 }).toBe(true);
    expect(await call(agent, "job.get", { jobId: job.id }, "query")).toMatchObject({ state: "active", attempts: 1 });

    await killHard(first);
    const restartedAt = Date.now();
    // At debug level its claims are logged too ("job claimed"): the start report below reads them.
    const restarted = startWorker(cluster.url, host, dataDir, {
      STRATA_JOB_LEASE_SECONDS: LEASE_SECONDS,
      STRATA_LOG_LEVEL: "debug",
    });
    // Its second attempt begins as soon as the new worker is up (measured and printed, not asserted).
    await expect
      .poll(async () => ((await call(agent, "job.get", { jobId: job.id }, "query")) as JobView).attempts, {
        timeout: 60_000,
        intervals: [50],
      })
      .toBe(2);
    const seconds = (Date.now() - restartedAt) / 1000;
    const done = await finished(agent, job.id);
    await stopGently(restarted);
    const figure = `the killed worker's job began again ${seconds.toFixed(1)} s after the worker was restarted (lease ${LEASE_SECONDS} s)`;
    test.info().annotations.push({ type: "figure", description: figure });
    process.stdout.write(`faults: ${figure}\n`);
    // Start time, printed (not asserted): the restarted worker's spawn → it handed back its dead
    // predecessor's job → it claimed the job, by the times of its own log lines.
    const handedBack = secondsToLogLine(restarted.stderr(), restartedAt, "job of a dead worker handed back", job.id);
    const claimed = secondsToLogLine(restarted.stderr(), restartedAt, "job claimed", job.id);
    const start = `start time: worker spawn → dead worker's job handed back ${handedBack?.toFixed(2) ?? "?"} s, → job claimed ${claimed?.toFixed(2) ?? "?"} s`;
    test.info().annotations.push({ type: "figure", description: start });
    process.stdout.write(`faults: ${start}\n`);
    // Attempt 2 ran: the lease could not have handed the job out again in this test's time.
    expect(done).toMatchObject({ state: "completed", attempts: 2, result: { outcome: "appended" } });
    expect(restarted.stderr()).toContain("job of a dead worker handed back");
  });

  test("a restore job that fails for good leaves no pending restore and no active pin", async () => {
    test.setTimeout(120_000);
    const host = `faults-restore-${randomUUID().slice(0, 8)}`;
    const key = lineageKey("restore");
    const repo = dirtyCheckout(path.join(agentFolder(), "restore-checkout"));
    const worker = startWorker(cluster.url, host, dataDir);
    const captured = await finished(
      agent,
      ((await call(agent, "job.enqueueCapture", { host, dir: repo, key }, "mutation")) as JobView).id,
    );
    expect(captured).toMatchObject({ state: "completed", result: { outcome: "appended" } });
    const snapshotId = captured.result!.snapshotId as string;

    // Someone else's files are already where the restore was asked to go: it must not write there.
    const into = path.join(dataDir, "restored", "occupied");
    mkdirSync(into, { recursive: true });
    writeFileSync(path.join(into, "theirs.txt"), "not ours\n");
    const { plan, job } = (await call(
      agent,
      "job.enqueueRestore",
      { ...key, canonicalRef: "refs/heads/main", workspace: into, host },
      "mutation",
    )) as { plan: { restoreId: string; snapshot: { id: string } | null }; job: { id: string } };
    expect(plan.snapshot?.id).toBe(snapshotId);
    const failed = await finished(agent, job.id);
    await stopGently(worker);
    expect(failed).toMatchObject({ state: "failed", attempts: 1, error: { code: "UNSAFE_TARGET" } });

    const restore = await sql.query<{ outcome: string; error_code: string; reported: boolean; pin_id: string }>(
      "SELECT outcome, error_code, reported_at IS NOT NULL AS reported, pin_id FROM restores WHERE id = $1",
      [plan.restoreId],
    );
    expect(restore.rows).toEqual([
      { outcome: "failed", error_code: "UNSAFE_TARGET", reported: true, pin_id: expect.any(String) },
    ]);
    const pending = await sql.query(
      "SELECT id FROM restores WHERE work_context_id = (SELECT work_context_id FROM restores WHERE id = $1) AND outcome = 'pending'",
      [plan.restoreId],
    );
    expect(pending.rowCount).toBe(0);
    const activePins = await sql.query(
      "SELECT pin_id FROM pins WHERE snapshot_id = $1 AND NOT released AND (expires_at IS NULL OR expires_at > now())",
      [snapshotId],
    );
    expect(activePins.rowCount).toBe(0);
  });

  test("an app instance killed and started again answers again; its start time is printed", async () => {
    test.setTimeout(120_000);
    if (app && app.exitCode === null) {
      const exited = new Promise((resolve) => app!.once("exit", resolve));
      app.kill("SIGKILL");
      await exited;
    }
    const spawnedAt = Date.now();
    const restarted = spawn(process.execPath, [STRATA, "serve", "--no-worker"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    app = restarted;
    const keep = (chunk: Buffer) => (appOutput += chunk.toString());
    restarted.stdout.on("data", keep);
    restarted.stderr.on("data", keep);
    // Spawn → the first 200 of the health call (the API), then of a page (Next.js): printed, not asserted.
    let answeredAt: number | undefined;
    let pageAt: number | undefined;
    await expect
      .poll(
        async () => {
          if (restarted.exitCode !== null)
            throw new Error(`strata serve exited (${restarted.exitCode}):\n${appOutput}`);
          if (answeredAt === undefined) {
            if ((await statusOf(`${base}/api/trpc/health`)) === 200) answeredAt = Date.now();
          } else if ((await statusOf(`${base}/signin`)) === 200) pageAt = Date.now();
          return pageAt !== undefined;
        },
        { timeout: 90_000, intervals: [20] },
      )
      .toBe(true);
    const start = `start time: app spawn → first answer (health 200) ${((answeredAt! - spawnedAt) / 1000).toFixed(2)} s, → first page 200 ${((pageAt! - spawnedAt) / 1000).toFixed(2)} s`;
    test.info().annotations.push({ type: "figure", description: start });
    process.stdout.write(`faults: ${start}\n`);
    // It serves agents as before.
    expect(await call(agent, "lineage.list", {}, "query")).toBeDefined();
  });
});
