// npm run soak — Strata run the way a team that outgrew one machine runs it, with its faults.
//
// A private PostgreSQL cluster (initdb/pg_ctl, never the shared server), two `strata serve
// --no-worker` instances, three worker hosts with two `strata worker` processes each. Agents'
// calls go over HTTP to either instance (failing over to the other, retrying what is marked
// retryable with the same idempotency key): captures of each host's checkouts and restores
// into new workspaces on the hosts, while the script injects the four faults:
//   1. a worker killed with SIGKILL and started again at once,
//   2. an app instance killed with SIGKILL (its calls fail over) and started again,
//   3. PostgreSQL stopped for --outage-seconds (default 30) and started again,
//   4. a worker paused (SIGSTOP) for --pause-seconds (default 120) and resumed.
// Then it checks the invariants itself and prints them with the jobs' latency (enqueue to
// finish): jobs lost 0, duplicated 0, ready-head violations 0, restores verified all, pending
// restores 0, active pins of finished restores 0. Exit status 1 when one does not hold. It also
// prints how many lines at warn or above each worker wrote on stderr during the outage, per
// minute of it (a worker logs the outage's start, one line a minute, not every failed try).
//
// Options: --captures N (default 130), --restores N (default 80), --pause-seconds N (120),
// --outage-seconds N (30), --lease-seconds N (20: the claim lease of the jobs), --keep (leave
// the work directory). A short run: --captures 30 --restores 20 --pause-seconds 20.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";
import { freePort } from "../server/testing/ports.ts";
import { git } from "../server/testing/repos.ts";
import { startPrivatePostgres, type PrivatePostgres } from "../server/testing/private-postgres.ts";
import { percentile } from "./stats.ts";

const { values } = parseArgs({
  options: {
    captures: { type: "string", default: "130" },
    restores: { type: "string", default: "80" },
    "pause-seconds": { type: "string", default: "120" },
    "outage-seconds": { type: "string", default: "30" },
    "lease-seconds": { type: "string", default: "20" },
    keep: { type: "boolean", default: false },
  },
});
const CAPTURES = Number(values.captures);
const RESTORES = Number(values.restores);
const PAUSE_SECONDS = Number(values["pause-seconds"]);
const OUTAGE_SECONDS = Number(values["outage-seconds"]);
const LEASE_SECONDS = Number(values["lease-seconds"]);
const STRATA = fileURLToPath(new URL("../cli/strata.mjs", import.meta.url));
const HOSTS = ["alpha", "beta", "gamma"] as const;
const WORKERS_PER_HOST = 2;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (line: string) => process.stdout.write(`${line}\n`);
const started = Date.now();
const stamp = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s`;

// --- processes ------------------------------------------------------------------------------------

interface Proc {
  name: string;
  child: ChildProcess;
  log: string[];
  /** Its stderr lines at warn or above (or that are not a JSON log line): when (ms), and their msg. */
  loud: { at: number; msg: string }[];
  exited: Promise<number | null>;
}

const LOUD_LEVELS = new Set(["warn", "error", "fatal", 40, 50, 60]);

/**
 * The message of a stderr line at warn or above (its times and counts as #), else null; a line
 * that is not JSON counts too (a worker writes only JSON).
 */
function loudMessage(line: string): string | null {
  if (line.trim() === "") return null;
  let parsed: { level?: string | number; msg?: string };
  try {
    parsed = JSON.parse(line) as typeof parsed;
  } catch {
    return "(not JSON)";
  }
  if (!LOUD_LEVELS.has(parsed.level ?? "")) return null;
  return (parsed.msg ?? "").replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "#").replace(/\d+/g, "#");
}

const processes = new Set<Proc>();

function startProcess(name: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [STRATA, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  const log: string[] = [];
  const keep = (chunk: Buffer) => {
    log.push(chunk.toString());
    if (log.length > 400) log.splice(0, log.length - 400);
  };
  const loud: Proc["loud"] = [];
  let partial = "";
  child.stdout!.on("data", keep);
  child.stderr!.on("data", (chunk: Buffer) => {
    keep(chunk);
    const lines = (partial + chunk.toString()).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const msg = loudMessage(line);
      if (msg !== null) loud.push({ at: Date.now(), msg });
    }
  });
  const proc: Proc = {
    name,
    child,
    log,
    loud,
    exited: new Promise((resolve) => child.on("exit", (code) => resolve(code))),
  };
  processes.add(proc);
  void proc.exited.then(() => processes.delete(proc));
  return proc;
}

async function stopProcess(proc: Proc, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill(signal);
  const timeout = sleep(20_000).then(() => "timeout" as const);
  if ((await Promise.race([proc.exited, timeout])) === "timeout") {
    proc.child.kill("SIGKILL");
    await proc.exited;
  }
}

function runStrata(args: string[], env: Record<string, string>): string {
  return execFileSync(process.execPath, [STRATA, ...args], { env: { ...process.env, ...env }, encoding: "utf8" });
}

// --- the agents' HTTP client: failover, retries with the same idempotency key ----------------------

interface CallError {
  code: string;
  message: string;
  retryable: boolean;
}

class Api {
  calls = 0;
  retries = 0;
  failovers = 0;
  private next = 0;
  constructor(
    readonly bases: string[],
    readonly token: string,
  ) {}

  /** One logical operation: the same key on every try, until it succeeds or fails for good. */
  async mutate<T>(procedure: string, input: unknown, deadlineMs = 180_000): Promise<T> {
    const key = randomUUID();
    const deadline = Date.now() + deadlineMs;
    let last: CallError | null = null;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const base = this.bases[this.next++ % this.bases.length]!;
      if (attempt > 0) {
        this.retries++;
        await sleep(Math.min(250 * 2 ** Math.min(attempt, 4), 3_000));
      }
      this.calls++;
      let response: Response;
      try {
        response = await fetch(`${base}/api/trpc/${procedure}`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${this.token}`,
            "content-type": "application/json",
            "idempotency-key": key,
          },
          body: JSON.stringify({ json: input }),
          signal: AbortSignal.timeout(15_000),
        });
      } catch (error) {
        // Refused, reset or timed out: the other instance, with the same key.
        this.failovers++;
        last = { code: "NETWORK", message: (error as Error).message, retryable: true };
        continue;
      }
      const body = (await response.json().catch(() => null)) as {
        result?: { data?: { json?: T } };
        error?: { json?: { message?: string; data?: { strata?: CallError | null } } };
      } | null;
      if (response.ok && body?.result?.data) return body.result.data.json as T;
      const strata = body?.error?.json?.data?.strata;
      last = strata ?? {
        code: `HTTP ${response.status}`,
        message: body?.error?.json?.message ?? "",
        retryable: response.status >= 500,
      };
      if (!last.retryable) break;
    }
    throw new Error(`${procedure} failed: ${last?.code} ${last?.message}`);
  }
}

// --- the run ------------------------------------------------------------------------------------------

interface CaptureOp {
  host: string;
  workContextId: string;
  jobId: string | null;
}
interface RestoreOp {
  host: string;
  into: string;
  tree: string;
  jobId: string | null;
  restoreId: string | null;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "strata-soak-"));
  let cluster: PrivatePostgres | null = null;
  let sql: pg.Pool | null = null;
  const failures: string[] = [];
  try {
    say(`${stamp()}  starting a private PostgreSQL cluster …`);
    cluster = await startPrivatePostgres();
    const env: Record<string, string> = {
      DATABASE_URL: cluster.url,
      STRATA_JOB_LEASE_SECONDS: String(LEASE_SECONDS),
      STRATA_SWEEP_INTERVAL_SECONDS: "0",
      STRATA_GC_INTERVAL_SECONDS: "0",
      STRATA_AUTH_SECRET: randomBytes(32).toString("hex"),
      STRATA_LOG_LEVEL: "warn",
    };
    runStrata(["migrate"], env);
    const agent = JSON.parse(runStrata(["agent", "create", "soak", "--json"], env)) as { token: string };
    sql = new pg.Pool({ connectionString: cluster.url, max: 2 });
    sql.on("error", () => undefined);

    // The hosts: a small repository each (pushed to a local origin), the checkout the captures
    // read and the directory the restores write into.
    const hosts = HOSTS.map((name) => {
      const dir = join(work, name);
      // The agent's own folder of the host's agent root: a worker captures only what the job's agent owns.
      const repo = join(dir, "agents", "soak", "repo");
      const origin = join(dir, "origin.git");
      mkdirSync(join(dir, "workspaces"), { recursive: true });
      mkdirSync(repo, { recursive: true });
      git(dir, ["init", "--quiet", "--bare", "--initial-branch=main", origin]);
      git(repo, ["init", "--quiet", "--initial-branch=main"]);
      for (let i = 0; i < 20; i++) writeFileSync(join(repo, `file-${i}.txt`), `${name} ${i}\n`.repeat(50));
      git(repo, ["add", "-A"]);
      git(repo, ["commit", "--quiet", "-m", "soak fixture"]);
      git(repo, ["remote", "add", "origin", `file://${origin}`]);
      git(repo, ["push", "--quiet", "-u", "origin", "main"]);
      // A change that is not committed: the restores must bring it back too.
      writeFileSync(join(repo, "file-0.txt"), `${name} edited\n`);
      writeFileSync(join(repo, "untracked.txt"), `${name} untracked\n`);
      return { name, dir, repo, data: join(dir, "data") };
    });
    const keyOf = (host: string, workContextId: string) => ({
      repository: { identity: `example.test/soak/${host}` },
      backendKind: "local",
      baseImage: "soak",
      workContextId,
    });

    say(`${stamp()}  starting 2 app instances and ${HOSTS.length * WORKERS_PER_HOST} workers …`);
    const ports = [await freePort(), await freePort()];
    const startApp = (n: number) =>
      startProcess(`app-${n}`, ["serve", "--no-worker"], {
        ...env,
        PORT: String(ports[n]),
        STRATA_DATA_DIR: join(work, `app-${n}`),
      });
    const apps = [startApp(0)];
    // The first instance builds the dashboard when it must; the second starts once it is up.
    const bases = ports.map((p) => `http://127.0.0.1:${p}`);
    const up = async (base: string) => {
      for (let i = 0; i < 600; i++) {
        const ok = await fetch(`${base}/api/trpc/health`, { signal: AbortSignal.timeout(2_000) })
          .then((r) => r.status < 500)
          .catch(() => false);
        if (ok) return;
        await sleep(500);
      }
      throw new Error(`${base} did not come up`);
    };
    await up(bases[0]!);
    apps.push(startApp(1));
    await up(bases[1]!);
    const startWorker = (host: (typeof hosts)[number], n: number) =>
      startProcess(`worker-${host.name}-${n}`, ["worker", "--host", host.name, "--poll-ms", "200"], {
        ...env,
        STRATA_DATA_DIR: host.data,
        STRATA_WORKER_ROOTS: join(host.dir, "workspaces"),
        STRATA_WORKER_AGENT_ROOTS: join(host.dir, "agents"),
      });
    const workers = new Map<string, Proc>();
    for (const host of hosts)
      for (let n = 0; n < WORKERS_PER_HOST; n++) workers.set(`${host.name}-${n}`, startWorker(host, n));

    const api = new Api(bases, agent.token);

    // One checkpoint per host to restore from.
    const sources = await Promise.all(
      hosts.map(async (host) => {
        const workContextId = `source-${host.name}`;
        const job = await api.mutate<{ id: string }>("job.enqueueCapture", {
          host: host.name,
          dir: host.repo,
          key: keyOf(host.name, workContextId),
        });
        for (;;) {
          const { rows } = await sql!.query<{ state: string }>("SELECT state FROM jobs WHERE id = $1", [job.id]);
          if (rows[0]?.state === "completed") break;
          if (rows[0]?.state === "failed") throw new Error(`the source capture on ${host.name} failed`);
          await sleep(200);
        }
        return { host: host.name, workContextId, tree: treeOf(host.repo) };
      }),
    );
    // What each source checkpoint recorded: the tree of its worktree, edits and untracked files included.
    const captured = new Map<string, string>();
    for (const s of sources) {
      const { rows } = await sql.query<{ tree: string }>(
        "SELECT s.metadata->'manifest'->>'tree' AS tree FROM snapshots s WHERE s.work_context_id = $1 AND s.state = 'ready'",
        [s.workContextId],
      );
      captured.set(s.host, rows[0]?.tree ?? s.tree);
    }

    say(`${stamp()}  enqueuing ${CAPTURES} captures and ${RESTORES} restores over HTTP, with the faults …`);
    const captures: CaptureOp[] = [];
    const restores: RestoreOp[] = [];
    const total = CAPTURES + RESTORES;
    const kinds = Array.from({ length: total }, (_, i) => ((i * RESTORES) % total < RESTORES ? "restore" : "capture"));
    const loadStarted = Date.now();
    // Set by the faults: how soon the SIGKILLed worker's job left its claim.
    const reclaim: { job: string; seconds: number }[] = [];
    // Set by fault 3: when PostgreSQL was down, and the workers that ran meanwhile.
    const outage = { from: 0, to: 0, workers: [] as Proc[] };
    const faults = (async () => {
      const at = (seconds: number) => sleep(Math.max(0, loadStarted + seconds * 1000 - Date.now()));
      await at(8);
      const killed = workers.get("alpha-0")!;
      // Killed while it holds a job (when it gets one within 15 s), to see how soon the job runs again.
      const holding = async () =>
        (
          await sql!
            .query<{ id: string }>("SELECT id FROM jobs WHERE state = 'active' AND claimed_by LIKE $1 LIMIT 1", [
              `alpha|${killed.child.pid}|%`,
            ])
            .catch(() => ({ rows: [] as { id: string }[] }))
        ).rows[0]?.id ?? null;
      let held: string | null = null;
      for (let i = 0; i < 150 && !held; i++) held = (await holding()) ?? (await sleep(100), null);
      say(
        `${stamp()}  fault 1: SIGKILL ${killed.name} (pid ${killed.child.pid})${held ? ` holding job ${held}` : ""}, started again at once`,
      );
      killed.child.kill("SIGKILL");
      const killedAt = Date.now();
      await killed.exited;
      workers.set("alpha-0", startWorker(hosts[0]!, 0));
      if (held) {
        for (;;) {
          const { rows } = await sql!.query<{ claimed_by: string | null; state: string }>(
            "SELECT claimed_by, state FROM jobs WHERE id = $1",
            [held],
          );
          const row = rows[0];
          if (row && (row.state === "completed" || !row.claimed_by?.startsWith(`alpha|${killed.child.pid}|`))) break;
          await sleep(100);
        }
        reclaim.push({ job: held, seconds: (Date.now() - killedAt) / 1000 });
        say(`${stamp()}  the killed worker's job was running again ${reclaim[0]!.seconds.toFixed(1)} s after the kill`);
      }
      await at(20);
      say(`${stamp()}  fault 2: SIGKILL app-0, started again after 3 s`);
      apps[0]!.child.kill("SIGKILL");
      await apps[0]!.exited;
      await sleep(3_000);
      apps[0] = startApp(0);
      await at(35);
      say(`${stamp()}  fault 3: PostgreSQL stopped for ${OUTAGE_SECONDS} s`);
      outage.workers = [...workers.values()];
      outage.from = Date.now();
      await cluster!.stop();
      await sleep(OUTAGE_SECONDS * 1_000);
      await cluster!.start();
      outage.to = Date.now();
      say(`${stamp()}  PostgreSQL is back`);
      await at(50);
      const paused = workers.get("beta-0")!;
      say(`${stamp()}  fault 4: SIGSTOP ${paused.name} for ${PAUSE_SECONDS} s`);
      paused.child.kill("SIGSTOP");
      await sleep(PAUSE_SECONDS * 1000);
      paused.child.kill("SIGCONT");
      say(`${stamp()}  ${paused.name} resumed`);
    })();

    // About four logical operations a second, several in flight.
    const ops = kinds.map(async (kind, i) => {
      await sleep(i * 250);
      const host = hosts[i % hosts.length]!;
      if (kind === "capture") {
        const op: CaptureOp = { host: host.name, workContextId: `cap-${i}-${randomUUID().slice(0, 8)}`, jobId: null };
        captures.push(op);
        const job = await api.mutate<{ id: string }>("job.enqueueCapture", {
          host: host.name,
          dir: host.repo,
          key: keyOf(host.name, op.workContextId),
        });
        op.jobId = job.id;
      } else {
        const source = sources.find((s) => s.host === host.name)!;
        const op: RestoreOp = {
          host: host.name,
          into: join(host.dir, "workspaces", `w-${i}`),
          tree: captured.get(host.name)!,
          jobId: null,
          restoreId: null,
        };
        restores.push(op);
        const { plan, job } = await api.mutate<{ plan: { restoreId: string }; job: { id: string } | null }>(
          "job.enqueueRestore",
          {
            ...keyOf(host.name, source.workContextId),
            canonicalRef: "refs/heads/main",
            workspace: op.into,
            host: host.name,
          },
        );
        op.restoreId = plan.restoreId;
        op.jobId = job?.id ?? null;
      }
    });
    const settled = await Promise.allSettled(ops);
    for (const s of settled) if (s.status === "rejected") failures.push(String(s.reason));
    say(
      `${stamp()}  every operation was answered (${api.calls} calls, ${api.retries} retries, ${api.failovers} failovers)`,
    );

    // Every job finishes: none is left queued, retrying or running.
    const deadline = Date.now() + (PAUSE_SECONDS + 10 * LEASE_SECONDS + 300) * 1000;
    for (;;) {
      const { rows } = await sql
        .query<{ open: string }>(
          "SELECT count(*) AS open FROM jobs WHERE state NOT IN ('completed','failed','cancelled')",
        )
        .catch(() => ({ rows: [{ open: "-1" }] }));
      if (rows[0]?.open === "0") break;
      if (Date.now() > deadline) {
        failures.push(`jobs still open at the deadline: ${rows[0]?.open}`);
        break;
      }
      await sleep(1_000);
    }
    await faults;
    say(`${stamp()}  every job finished; checking …`);

    // --- the invariants ---
    const jobRows = (
      await sql.query<{
        id: string;
        kind: string;
        state: string;
        attempts: number;
        attempt_errors: { code?: string }[] | null;
        created_at: Date;
        started_at: Date | null;
        finished_at: Date | null;
      }>("SELECT id, kind, state, attempts, attempt_errors, created_at, started_at, finished_at FROM jobs")
    ).rows;
    const byId = new Map(jobRows.map((j) => [j.id, j]));
    const expectedJobs = [
      ...captures.map((c) => c.jobId),
      ...restores.map((r) => r.jobId),
      ...sources.map(() => "source"),
    ];
    const opJobIds = [...captures.map((c) => c.jobId), ...restores.map((r) => r.jobId)];
    const lost = opJobIds.filter((id) => id === null || byId.get(id)?.state !== "completed").length;
    const duplicated = jobRows.length - expectedJobs.length;
    const checkpointsPerCapture = (
      await sql.query<{ work_context_id: string; n: string }>(
        "SELECT work_context_id, count(*) AS n FROM snapshots WHERE class = 'checkpoint' GROUP BY work_context_id",
      )
    ).rows;
    const doubleCaptures = checkpointsPerCapture.filter((r) => Number(r.n) > 1).length;
    const readyHeads = (
      await sql.query<{ n: string }>(
        "SELECT count(*) AS n FROM (SELECT lineage_id FROM snapshots WHERE state = 'ready' AND lineage_id IS NOT NULL " +
          "GROUP BY lineage_id HAVING count(*) > 1) AS x",
      )
    ).rows[0]!.n;
    let verified = 0;
    for (const r of restores) {
      const job = r.jobId ? byId.get(r.jobId) : null;
      if (job?.state !== "completed") continue;
      try {
        if (treeOf(r.into) === r.tree) verified++;
      } catch {
        // Not a checkout: not verified.
      }
    }
    const pending = (await sql.query<{ n: string }>("SELECT count(*) AS n FROM restores WHERE outcome = 'pending'"))
      .rows[0]!.n;
    const pinsOfFinished = (
      await sql.query<{ n: string }>(
        "SELECT count(*) AS n FROM pins p JOIN restores r ON r.pin_id = p.pin_id AND r.agent_id = p.agent_id " +
          "WHERE r.outcome <> 'pending' AND NOT p.released AND (p.expires_at IS NULL OR p.expires_at > now())",
      )
    ).rows[0]!.n;
    const latencies = jobRows
      .filter((j) => j.finished_at)
      .map((j) => j.finished_at!.getTime() - j.created_at.getTime())
      .sort((a, b) => a - b);
    const waits = jobRows
      .filter((j) => j.started_at)
      .map((j) => j.started_at!.getTime() - j.created_at.getTime())
      .sort((a, b) => a - b);
    const retried = jobRows.filter((j) => j.attempts > 1);
    const causes = new Map<string, number>();
    // Each earlier attempt's cause (a completed job keeps them in attempt_errors, not in error).
    for (const j of retried) {
      for (const cause of j.attempt_errors ?? [{ code: "none" }]) {
        const code = cause.code ?? "none";
        causes.set(code, (causes.get(code) ?? 0) + 1);
      }
    }
    const leftovers = readdirSync(work).filter((n) => n.startsWith(".strata-restore"));

    const lines: [string, string, boolean][] = [
      ["jobs lost", String(lost), lost === 0],
      ["jobs duplicated", String(duplicated + doubleCaptures), duplicated === 0 && doubleCaptures === 0],
      ["ready-head violations", readyHeads, readyHeads === "0"],
      [`restores verified`, `${verified} of ${restores.length}`, verified === restores.length],
      ["pending restores", pending, pending === "0"],
      ["active pins of finished restores", pinsOfFinished, pinsOfFinished === "0"],
      ["operations that failed for good", String(failures.length), failures.length === 0],
      ...(reclaim[0]
        ? [
            [
              "SIGKILLed worker's job running again",
              `${reclaim[0].seconds.toFixed(1)} s after the kill (goal < 5 s; lease ${LEASE_SECONDS} s)`,
              reclaim[0].seconds < 5,
            ] as [string, string, boolean],
          ]
        : []),
    ];
    say(
      `\nsoak: ${jobRows.length} jobs (${CAPTURES} captures, ${RESTORES} restores, ${sources.length} sources), 2 app instances, ${HOSTS.length} hosts x ${WORKERS_PER_HOST} workers, 4 faults`,
    );
    for (const [name, value, ok] of lines) say(`  ${ok ? "ok  " : "FAIL"}  ${name.padEnd(36)} ${value}`);
    say(
      `  job latency (enqueue to finish): p50 ${(percentile(latencies, 50) / 1000).toFixed(1)} s, ` +
        `p95 ${(percentile(latencies, 95) / 1000).toFixed(1)} s, max ${(latencies.at(-1)! / 1000).toFixed(1)} s`,
    );
    say(
      `  last attempt's wait for a worker: p50 ${(percentile(waits, 50) / 1000).toFixed(1)} s, p95 ${(percentile(waits, 95) / 1000).toFixed(1)} s; ` +
        `${retried.length} job(s) took more than one attempt` +
        (retried.length > 0 ? ` (${[...causes].map(([c, n]) => `${c} ${n}`).join(", ")})` : ""),
    );
    if (!reclaim[0]) say("  the SIGKILLed worker held no job when it was killed");
    if (outage.to > 0) {
      // From the stop until 10 s after the start: the lines the outage itself caused.
      const minutes = (outage.to - outage.from) / 60_000;
      const during = (w: Proc) => w.loud.filter(({ at }) => at >= outage.from && at <= outage.to + 10_000);
      const counts = outage.workers.map((w) => ({ name: w.name.replace(/^worker-/, ""), lines: during(w).length }));
      const messages = new Map<string, number>();
      for (const w of outage.workers) for (const { msg } of during(w)) messages.set(msg, (messages.get(msg) ?? 0) + 1);
      const worst = Math.max(...counts.map((c) => c.lines)) / minutes;
      say(
        `  worker lines at warn or above during the ${((outage.to - outage.from) / 1000).toFixed(0)} s outage (and 10 s after): ` +
          `${counts.map((c) => `${c.name} ${c.lines}`).join(", ")}; at most ${worst.toFixed(1)} per worker per minute of outage`,
      );
      say(`    those lines: ${[...messages].map(([msg, n]) => `${n} x "${msg}"`).join(", ") || "none"}`);
    }
    say(`  client: ${api.calls} calls, ${api.retries} retries, ${api.failovers} failovers`);
    if (leftovers.length > 0) say(`  leftovers: ${leftovers.join(", ")}`);
    for (const f of failures.slice(0, 10)) say(`  failure: ${f}`);
    const ok = lines.every(([, , good]) => good);
    say(ok ? "\nsoak: every invariant held" : "\nsoak: INVARIANT VIOLATED");
    if (!ok) {
      for (const proc of processes)
        say(`\n--- ${proc.name} (last lines) ---\n${proc.log.join("").split("\n").slice(-15).join("\n")}`);
      process.exitCode = 1;
    }
  } finally {
    await Promise.all([...processes].map((p) => stopProcess(p)));
    await sql?.end().catch(() => undefined);
    await cluster?.destroy().catch(() => undefined);
    if (values.keep) say(`work directory kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

/** The tree id of a checkout's working files as they are (tracked and untracked, ignored excluded). */
function treeOf(dir: string): string {
  const index = join(dir, ".git", "soak-index");
  const env = { ...process.env, GIT_INDEX_FILE: index };
  execFileSync("git", ["read-tree", "HEAD"], { cwd: dir, env });
  execFileSync("git", ["add", "-A"], { cwd: dir, env });
  const tree = execFileSync("git", ["write-tree"], { cwd: dir, env, encoding: "utf8" }).trim();
  rmSync(index, { force: true });
  return tree;
}

await main();
