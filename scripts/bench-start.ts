// npm run bench:start — how soon a worker and an app instance are of use after they start, as an
// operator starts them, each a whole process (`node cli/strata.mjs …`) on a catalog already
// migrated, N times in a row on each database:
//   worker        `strata worker --host H`: spawn → the claim of a sweep job addressed to H,
//                 enqueued before the spawn (its "job claimed" line, at debug level). Goal: ≤ 2 s
//                 at the median.
//   serve         `strata serve --no-worker`: spawn → the first 200 from /api/trpc/health, and
//                 → the first 200 of a dashboard page (/signin, rendered by Next). Goal: the
//                 first answer ≤ 5 s at the median.
//   serve+worker  `strata serve` with its worker: spawn → health 200, and → the claim.
//   together      two `serve --no-worker` and three `worker` started at once on one catalog (the
//                 deployment of issue 44): each one's figures as above, in one list.
// One run of each is broken down by phase: the ms since the process began at which it reached
// each mark of server/log/start-phases.ts (the lines "worker start phases" and "serving the
// dashboard and API" carry them); `node` is where Node's own start ended.
//
// The CLI is built first when its sources changed (so no run pays for the build). The serve
// cases need the dashboard built (`npx next build`): without a build they are skipped, and a
// build older than its sources (which serve would rebuild) stops the bench.
// Options: --runs N (default 5), --db sqlite|postgres|both (default both),
// --only worker|serve|serve+worker|together. Run it on a quiet machine: the load average is printed.
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { DatabaseKind } from "../server/db/client.ts";
import { JobQueue } from "../server/jobs/queue.ts";
import { createTestCatalog, type TestCatalog } from "../server/testing/catalog.ts";
import { freePort } from "../server/testing/ports.ts";
import { loadAverage } from "./bench-repo.ts";
import { median, percentile } from "./stats.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const STRATA = join(ROOT, "cli", "strata.mjs");
const WORKER_GOAL_S = 2;
const SERVE_GOAL_S = 5;
/** A run that has not got there by then is a failure of the run, not a figure. */
const RUN_TIMEOUT_MS = 90_000;

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "5" },
    db: { type: "string", default: "both" },
    only: { type: "string" },
  },
});
const RUNS = Math.max(1, Number(values.runs));
const KINDS: DatabaseKind[] = values.db === "both" ? ["sqlite", "postgres"] : [values.db as DatabaseKind];
const CASES = ["worker", "serve", "serve+worker", "together"] as const;
type Case = (typeof CASES)[number];

/** What one start gave: ms from spawn to each event, and the phases the process logged. */
interface StartRun {
  claimMs?: number;
  healthMs?: number;
  pageMs?: number;
  /** ms since the process began at each start phase it logged. */
  phases?: Record<string, number>;
}

interface LogLine {
  msg?: string;
  jobId?: string;
  startMs?: Record<string, number>;
}

function parseLine(line: string): LogLine | null {
  if (!line.startsWith("{")) return null;
  try {
    return JSON.parse(line) as LogLine;
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The status of GET url, 0 when nothing answers. */
async function status(url: string): Promise<number> {
  try {
    const response = await fetch(url, { redirect: "manual", signal: AbortSignal.timeout(10_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/**
 * Starts `strata <args>` and waits for what the case waits for: the claim of `jobId`, the first
 * 200 of health and of a page at `base`. Stops the process (SIGTERM) before it returns.
 */
async function startOnce(
  args: string[],
  env: Record<string, string>,
  want: { jobId?: string; base?: string },
): Promise<StartRun> {
  const t0 = performance.now();
  const since = () => performance.now() - t0;
  const child = spawn(process.execPath, [STRATA, ...args], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...env, STRATA_LOG_LEVEL: "debug", NEXT_TELEMETRY_DISABLED: "1" },
  });
  const run: StartRun = {};
  let output = "";
  let pending = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let exitCode: number | null | undefined;
  /** serve found the dashboard's build older than its sources: the run would time `next build`. */
  let rebuilding = false;
  void exited.then((code) => (exitCode = code));
  child.stderr!.on("data", (chunk: Buffer) => {
    const at = since();
    output += chunk.toString();
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      // Its log line ("building the dashboard …"), or on a terminal its progress line.
      if (/building the dashboard/i.test(line)) rebuilding = true;
      const fields = parseLine(line);
      if (!fields) continue;
      if (fields.msg === "job claimed" && fields.jobId === want.jobId) run.claimMs ??= at;
      if (fields.startMs && (fields.msg === "worker start phases" || fields.msg === "serving the dashboard and API")) {
        run.phases = { ...run.phases, ...fields.startMs };
      }
    }
  });
  const done = () =>
    (want.jobId === undefined || run.claimMs !== undefined) &&
    (want.base === undefined || (run.healthMs !== undefined && run.pageMs !== undefined));
  try {
    while (!done()) {
      if (exitCode !== undefined) throw new Error(`strata ${args[0]} exited (${exitCode}):\n${output}`);
      if (rebuilding) {
        throw new Error(
          "strata serve is building the dashboard (sources newer than .next/BUILD_ID): run `npx next build` first",
        );
      }
      if (since() > RUN_TIMEOUT_MS)
        throw new Error(`strata ${args[0]}: nothing after ${RUN_TIMEOUT_MS} ms:\n${output}`);
      if (want.base !== undefined && run.healthMs === undefined) {
        if ((await status(`${want.base}/api/trpc/health`)) === 200) run.healthMs = since();
      } else if (want.base !== undefined && run.pageMs === undefined) {
        if ((await status(`${want.base}/signin`)) === 200) run.pageMs = since();
      }
      await sleep(10);
    }
  } finally {
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(killer);
  }
  return run;
}

/** A sweep job addressed to `host` (only its worker claims it), enqueued now; its id. */
async function enqueueSweep(catalog: TestCatalog, host: string): Promise<string> {
  const job = await new JobQueue(catalog.db).enqueue(catalog.db, {
    kind: "sweep",
    host,
    agentId: null,
    data: { intervalSeconds: 3600 },
    dedupeKey: `bench-start-${randomUUID()}`,
  });
  if (!job) throw new Error("the sweep job was not enqueued");
  return job.id;
}

/** One start of `which` (two app instances and three workers at once for "together"). */
async function runCase(which: Case, catalog: TestCatalog, dataDir: string): Promise<StartRun[]> {
  const env = {
    DATABASE_URL: catalog.url,
    STRATA_DATA_DIR: dataDir,
    STRATA_BIND: "127.0.0.1",
    // No maintenance of its own: the only job there is to claim is the bench's.
    STRATA_SWEEP_INTERVAL_SECONDS: "0",
    STRATA_GC_INTERVAL_SECONDS: "0",
  };
  const newHost = () => `bench-start-${randomUUID().slice(0, 8)}`;
  const worker = async () => {
    const host = newHost();
    const jobId = await enqueueSweep(catalog, host);
    return () => startOnce(["worker", "--host", host], env, { jobId });
  };
  const app = async (withWorker: boolean) => {
    const host = newHost();
    const port = await freePort();
    const serveEnv = { ...env, PORT: String(port), STRATA_HOST: host };
    const base = `http://127.0.0.1:${port}`;
    if (!withWorker) return () => startOnce(["serve", "--no-worker"], serveEnv, { base });
    const jobId = await enqueueSweep(catalog, host);
    return () => startOnce(["serve"], serveEnv, { base, jobId });
  };
  const starts =
    which === "worker"
      ? [await worker()]
      : which === "serve"
        ? [await app(false)]
        : which === "serve+worker"
          ? [await app(true)]
          : [await app(false), await app(false), await worker(), await worker(), await worker()];
  return Promise.all(starts.map((start) => start()));
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function summary(label: string, values: number[]): string {
  return `${label.padEnd(34)} p50 ${seconds(median(values))}  p95 ${seconds(percentile(values, 95))}  (${values.map((v) => (v / 1000).toFixed(2)).join(" ")})`;
}

/** A run's phases as `phase +ms` steps, in the order reached. */
function breakdown(phases: Record<string, number>): string {
  let previous = 0;
  return Object.entries(phases)
    .sort((a, b) => a[1] - b[1])
    .map(([phase, at]) => {
      const step = `${phase} ${at} ms (+${at - previous})`;
      previous = at;
      return step;
    })
    .join(", ");
}

async function main(): Promise<void> {
  // Built now if stale, so that no start below pays for building the CLI.
  execFileSync(process.execPath, [join(ROOT, "scripts", "build-cli.mjs"), "--if-stale"], { stdio: "inherit" });
  const appBuilt = existsSync(join(ROOT, ".next", "BUILD_ID"));
  const cases = CASES.filter((c) => !values.only || c === values.only);
  console.log(`bench:start — ${RUNS} start(s) of each; load average ${loadAverage()}`);
  if (!appBuilt && cases.some((c) => c !== "worker")) {
    console.log("  serve cases skipped: the dashboard is not built (`npx next build`), and a start would build it");
  }
  const goals: string[] = [];
  for (const kind of KINDS) {
    const catalog = await createTestCatalog(kind);
    const dataDir = mkdtempSync(join(tmpdir(), "strata-bench-start-"));
    try {
      for (const which of cases) {
        if (which !== "worker" && !appBuilt) continue;
        const runs: StartRun[] = [];
        for (let i = 0; i < RUNS; i++) runs.push(...(await runCase(which, catalog, dataDir)));
        console.log(
          `\n${which === "together" ? "together (2 × serve --no-worker, 3 × worker, started at once)" : which} on ${kind}:`,
        );
        const claims = runs.flatMap((r) => (r.claimMs === undefined ? [] : [r.claimMs]));
        const health = runs.flatMap((r) => (r.healthMs === undefined ? [] : [r.healthMs]));
        const pages = runs.flatMap((r) => (r.pageMs === undefined ? [] : [r.pageMs]));
        if (claims.length > 0) console.log(`  ${summary("spawn → first claim", claims)}`);
        if (health.length > 0) console.log(`  ${summary("spawn → first health 200", health)}`);
        if (pages.length > 0) console.log(`  ${summary("spawn → first dashboard page 200", pages)}`);
        const phases = which === "together" ? undefined : runs.at(-1)?.phases;
        if (phases) console.log(`  phases of the last run (ms since the process began): ${breakdown(phases)}`);
        if (which !== "serve" && claims.length > 0) {
          const p50 = median(claims) / 1000;
          goals.push(
            `goal ${p50 <= WORKER_GOAL_S ? "met" : "MISSED"}: ${which} on ${kind}: first claim p50 ${p50.toFixed(2)} s ≤ ${WORKER_GOAL_S} s`,
          );
        }
        if (health.length > 0) {
          const p50 = median(health) / 1000;
          goals.push(
            `goal ${p50 <= SERVE_GOAL_S ? "met" : "MISSED"}: ${which} on ${kind}: first answer p50 ${p50.toFixed(2)} s ≤ ${SERVE_GOAL_S} s`,
          );
        }
      }
    } finally {
      await catalog.close();
      await catalog.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`\n${goals.join("\n")}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
