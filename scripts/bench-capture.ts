// npm run bench:capture — what a capture costs.
//
// Whole processes, as an agent pays at every turn (cli/strata.mjs, the compiled CLI):
//   strata capture of a small unchanged checkout     (goal ≤ 300 ms wall, median)
//   strata --version, strata --help
// Each runs BENCH_PROCESS_RUNS times (default 15): median and p95 wall time, and the largest
// maximum RSS of the strata process. The catalog is a new SQLite file (DATABASE_URL, when set,
// names another one); the agent acts with its token, as agents do.
//
// In one process, against plain git on a generated 20k-file repository:
//   unchanged capture              vs  git status                                   (goal ≤ 1.2x)
//   capture with 200 files changed vs  git add -A && git write-tree, private index  (goal ≤ 1.3x)
// Both sides of a ratio run in the same process, taking turns at going first, over the same
// changes. Wall-clock figures are medians; the CPU figures (git processes plus this process,
// summed over all rounds, Linux only) are what to read on a busy machine, where wall-clock
// time mostly measures the neighbours. The repositories are temporary directories, removed after.
//
// A modified 30 MB binary file (BENCH_BINARY_MB), in one process: the capture, which stores the
// file whole, against the `git diff-index --binary` delta its patch used to carry (3.2 s).
//
// BENCH_SECTIONS=process,binary,repo (default: all) runs only some of them; BENCH_STRATA=<cli/strata.mjs
// of another checkout> measures that one's processes instead (before and after a change).
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { captureCheckout, type CaptureResult } from "../server/capture/engine/capture.ts";
import { startProcess } from "../server/git/process.ts";
import { createGitRunner } from "../server/git/runner.ts";
import type { CaptureManifest } from "../server/domain/capture-manifest.ts";
import { PER_DIR, filePath, git, loadAverage } from "./bench-repo.ts";
import { median, percentile } from "./stats.ts";

const FILES = Number(process.env.BENCH_FILES ?? 20_000);
const CHANGED = Number(process.env.BENCH_CHANGED ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const PROCESS_RUNS = Math.max(10, Number(process.env.BENCH_PROCESS_RUNS ?? 15));
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? "process,binary,repo").split(",").map((s) => s.trim()));
const BINARY_MB = Number(process.env.BENCH_BINARY_MB ?? 30);
const BINARY_ROUNDS = Math.max(1, Number(process.env.BENCH_BINARY_ROUNDS ?? 5));
/** The strata to measure: this checkout's, or BENCH_STRATA (another checkout's cli/strata.mjs, to compare). */
const STRATA = process.env.BENCH_STRATA ?? fileURLToPath(new URL("../cli/strata.mjs", import.meta.url));
const PROCESS_GOAL_MS = 300;

function originalContent(path: string): string {
  const i = Number(/file(\d+)\.txt$/.exec(path)?.[1]);
  return `file ${i}\n${"lorem ipsum dolor sit amet ".repeat(1 + (i % 20))}\n`;
}

function generate(root: string): void {
  for (let i = 0; i < FILES; i++) {
    const path = filePath(i);
    if (i % PER_DIR === 0) mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), originalContent(path));
  }
  writeFileSync(join(root, ".gitignore"), "node_modules/\n*.log\n");
  writeFileSync(join(root, "package-lock.json"), '{"lockfileVersion":3}\n');
  git(root, ["init", "--quiet", "--initial-branch=main"]);
  git(root, ["add", "-A"]);
  git(root, ["commit", "--quiet", "-m", "generated"]);
  // The commit counts as pushed, so the bundle of unpushed commits stays empty.
  git(root, ["update-ref", "refs/remotes/origin/main", "HEAD"]);
}

/** Waits out git's racy-timestamp window, then lets status settle the user's index once. */
async function settle(root: string): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1100));
  git(root, ["status", "--porcelain"]);
}

/** CPU milliseconds of this process and of its reaped children (git), or null off Linux. */
function cpuNow(): { own: number; children: number } | null {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]?.split(" ") ?? [];
    // cutime and cstime, in clock ticks (100 per second on Linux).
    const children = (Number(fields[13]) + Number(fields[14])) * 10;
    const own = process.cpuUsage();
    return { own: (own.user + own.system) / 1000, children };
  } catch {
    return null;
  }
}

interface Sample {
  wall: number[];
  cpu: number;
  /** The part of `cpu` spent in this process (starting git, reading its output, Strata's own work). */
  own: number;
}

function sample(): Sample {
  return { wall: [], cpu: 0, own: 0 };
}

async function timed<T>(into: Sample, fn: () => Promise<T>): Promise<T> {
  const cpu = cpuNow();
  const start = performance.now();
  const value = await fn();
  into.wall.push(performance.now() - start);
  const after = cpuNow();
  if (cpu !== null && after !== null) {
    into.cpu += after.own + after.children - cpu.own - cpu.children;
    into.own += after.own - cpu.own;
  }
  return value;
}

function expectOutcome(result: CaptureResult, outcome: "captured" | "unchanged"): CaptureManifest {
  if (result.outcome === "unavailable") throw new Error(`capture failed: ${result.error.message}`);
  if (result.outcome !== outcome) throw new Error(`expected ${outcome}, got ${result.outcome}`);
  return result.manifest;
}

// --- whole processes ----------------------------------------------------------------------------

/**
 * Loaded into each measured strata process (node --import): writes the process's peak RSS
 * (KiB) to $BENCH_RSS_FILE as it exits. On Linux that is VmHWM: getrusage's maxRSS would count
 * this (large) process, whose memory the child has until its exec. It adds well under a millisecond.
 */
const RSS_PROBE = `data:text/javascript,${encodeURIComponent(
  'import{readFileSync,writeFileSync}from"node:fs";process.on("exit",()=>{let k=process.resourceUsage().maxRSS;' +
    'try{k=Number(/VmHWM:\\s*(\\d+)/.exec(readFileSync("/proc/self/status","utf8"))[1])}catch{}' +
    "writeFileSync(process.env.BENCH_RSS_FILE,String(k))})",
)}`;

interface ProcessRun {
  ms: number;
  rssKiB: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node cli/strata.mjs ARGS` (started with posix_spawn where built, as git is). */
function runStrata(args: string[], env: Record<string, string>, scratch: string): Promise<ProcessRun> {
  const rssFile = join(scratch, "rss");
  rmSync(rssFile, { force: true });
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = startProcess(process.execPath, ["--import", RSS_PROBE, STRATA, ...args], {
      cwd: scratch,
      env: { ...env, BENCH_RSS_FILE: rssFile },
    });
    child.stdin.end();
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = performance.now() - start;
      let rssKiB = NaN;
      try {
        rssKiB = Number(readFileSync(rssFile, "utf8"));
      } catch {
        // The process died before its exit handler ran.
      }
      resolve({ ms, rssKiB, code, stdout, stderr });
    });
  });
}

interface ProcessRow {
  name: string;
  runs: ProcessRun[];
}

function processLine(row: ProcessRow): string {
  const ms = row.runs.map((r) => r.ms);
  const rss = Math.max(...row.runs.map((r) => r.rssKiB)) / 1024;
  const codes = [...new Set(row.runs.map((r) => r.code))].filter((code) => code !== 0);
  return (
    `${row.name.padEnd(46)} ${median(ms).toFixed(0).padStart(7)} ms ${percentile(ms, 95).toFixed(0).padStart(7)} ms` +
    ` ${rss.toFixed(0).padStart(7)} MB${codes.length > 0 ? `   (exit ${codes.join(", ")})` : ""}\n`
  );
}

async function repeat(
  name: string,
  args: string[],
  env: Record<string, string>,
  scratch: string,
  check: (run: ProcessRun) => void,
): Promise<ProcessRow> {
  const runs: ProcessRun[] = [];
  check(await runStrata(args, env, scratch)); // warm the file cache; not counted
  for (let i = 0; i < PROCESS_RUNS; i++) {
    const run = await runStrata(args, env, scratch);
    check(run);
    runs.push(run);
  }
  return { name, runs };
}

function expectExit(run: ProcessRun, what: string): void {
  if (run.code !== 0) throw new Error(`${what} exited ${run.code}: ${run.stderr}`);
}

/** Whole strata processes: --version, --help, and capture of a small unchanged checkout. */
async function processRows(): Promise<ProcessRow[]> {
  const scratch = mkdtempSync(join(tmpdir(), "strata-bench-process-"));
  try {
    const root = join(scratch, "checkout");
    mkdirSync(root);
    writeFileSync(join(root, "README.md"), "# a small checkout\n");
    git(root, ["init", "--quiet", "--initial-branch=main"]);
    git(root, ["add", "-A"]);
    git(root, ["commit", "--quiet", "-m", "first"]);
    git(root, ["remote", "add", "origin", "https://example.invalid/bench/small.git"]);
    git(root, ["update-ref", "refs/remotes/origin/main", "HEAD"]);

    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      STRATA_DATA_DIR: join(scratch, "data"),
      ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
    };
    const agent = await runStrata(["agent", "create", `bench-${process.pid}-${Date.now()}`, "--json"], env, scratch);
    expectExit(agent, "strata agent create");
    env.STRATA_TOKEN = (JSON.parse(agent.stdout) as { token: string }).token;

    const capture = ["capture", root, "--context", `bench-${process.pid}`, "--json"];
    const first = await runStrata(capture, env, scratch);
    expectExit(first, "the first strata capture");
    const unchanged = (run: ProcessRun) => {
      expectExit(run, "strata capture");
      const outcome = (JSON.parse(run.stdout) as { outcome: string }).outcome;
      if (outcome !== "unchanged") throw new Error(`strata capture: expected unchanged, got ${outcome}`);
    };
    return [
      // Not checked: a strata before --version existed (BENCH_STRATA) exits 2; its row says so.
      await repeat("strata --version", ["--version"], env, scratch, () => undefined),
      await repeat("strata --help", ["--help"], env, scratch, () => undefined),
      await repeat("strata capture (small checkout, unchanged)", capture, env, scratch, unchanged),
    ];
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function printProcessRows(rows: ProcessRow[]): void {
  process.stdout.write(
    `${`whole process (${PROCESS_RUNS} runs each)`.padEnd(46)} ${"median".padStart(10)} ${"p95".padStart(10)} ${"max RSS".padStart(10)}\n`,
  );
  for (const row of rows) process.stdout.write(processLine(row));
  const capture = rows.at(-1);
  if (capture) {
    const ms = median(capture.runs.map((r) => r.ms));
    process.stdout.write(
      `${"strata capture, unchanged".padEnd(46)} median ${ms.toFixed(0)} ms ${ms <= PROCESS_GOAL_MS ? "met" : "MISSED"} (goal ≤ ${PROCESS_GOAL_MS} ms)\n`,
    );
  }
  process.stdout.write("\n");
}

// --- a large binary file --------------------------------------------------------------------------

/** Captures of a checkout whose 30 MB binary file changes a little between captures. */
async function binaryRows(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "strata-bench-binary-"));
  try {
    const size = BINARY_MB * 1024 * 1024;
    const content = randomBytes(size);
    writeFileSync(join(root, "model.bin"), content);
    writeFileSync(join(root, "README.md"), "a model\n");
    git(root, ["init", "--quiet", "--initial-branch=main"]);
    git(root, ["add", "-A"]);
    git(root, ["commit", "--quiet", "-m", "model"]);
    git(root, ["update-ref", "refs/remotes/origin/main", "HEAD"]);
    const runner = createGitRunner({ cwd: root });
    const head = git(root, ["rev-parse", "HEAD"]).trim();
    const deltaIndex = { GIT_INDEX_FILE: join(root, ".git", "bench-delta-index") };
    const ref = { workContext: "bench-binary" };
    let previous = expectOutcome(await captureCheckout(root, { snapshotRef: ref }), "captured");
    await settle(root);

    const capture = sample();
    const delta = sample();
    let wholeBytes = 0;
    let patchBytes = 0;
    let deltaBytes = 0;
    for (let round = 0; round < BINARY_ROUNDS; round++) {
      // 64 bytes rewritten somewhere in the file, as a tool updating a database or a model does.
      randomBytes(64).copy(content, (round * 7919 * 1024) % (size - 64));
      writeFileSync(join(root, "model.bin"), content);
      const manifest = expectOutcome(
        await timed(capture, () => captureCheckout(root, { previous, snapshotRef: ref })),
        "captured",
      );
      const link = manifest.patches.at(-1);
      patchBytes = link?.size ?? 0;
      wholeBytes = (link?.files ?? []).reduce((sum, f) => sum + f.size, 0);
      previous = manifest;
      // What the patch used to be: a binary delta from HEAD, made from an index holding the file.
      git(root, ["read-tree", head], deltaIndex);
      git(root, ["add", "model.bin"], deltaIndex);
      const patch = await timed(delta, () =>
        runner.run({
          args: ["diff-index", "--cached", "-p", "--binary", "--full-index", "--no-renames", head],
          env: deltaIndex,
          maxOutputBytes: 4 * size,
          parse: (out) => out.stdout,
        }),
      );
      deltaBytes = patch.length;
    }
    const line = (name: string, s: Sample, bytes: string) =>
      `${name.padEnd(46)} ${median(s.wall).toFixed(0).padStart(7)} ms   ${(s.cpu / BINARY_ROUNDS).toFixed(0).padStart(7)} ms   ${bytes}\n`;
    process.stdout.write(
      `${`${BINARY_MB} MB binary file modified (${BINARY_ROUNDS} rounds)`.padEnd(46)} ${"wall".padStart(10)}   ${"cpu".padStart(10)}   stored\n`,
    );
    process.stdout.write(
      line(
        "capture (the file stored whole)",
        capture,
        `patch ${patchBytes} B + file ${(wholeBytes / 2 ** 20).toFixed(1)} MiB`,
      ),
    );
    process.stdout.write(line("git diff-index --binary (the delta before)", delta, `patch ${deltaBytes} B`));
    process.stdout.write("\n");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

// --- in one process, against git ------------------------------------------------------------------

async function repositoryRows(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "strata-bench-"));
  try {
    process.stdout.write(`generating ${FILES} files in ${root} …\n`);
    generate(root);
    await settle(root);
    const runner = createGitRunner({ cwd: root });
    const baselineIndex = join(root, ".git", "bench-private-index");
    copyFileSync(join(root, ".git", "index"), baselineIndex);
    const onBaselineIndex = { GIT_INDEX_FILE: baselineIndex, GIT_OPTIONAL_LOCKS: "1" };
    const addAndWriteTree = async () => {
      await runner.run({ args: ["add", "-A"], env: onBaselineIndex, parse: () => undefined });
      await runner.run({ args: ["write-tree"], env: onBaselineIndex, parse: () => undefined });
    };
    const ref = { workContext: "bench" };

    // Warm both sides once (first capture seeds the private index).
    let previous = expectOutcome(await captureCheckout(root, { snapshotRef: ref }), "captured");
    await addAndWriteTree();

    const status = sample();
    const unchanged = sample();
    for (let round = 0; round < ROUNDS; round++) {
      const gitStatus = () => runner.run({ args: ["status"], parse: () => undefined });
      const capture = () => captureCheckout(root, { previous, snapshotRef: ref });
      if (round % 2 === 0) {
        await timed(status, gitStatus);
        expectOutcome(await timed(unchanged, capture), "unchanged");
      } else {
        expectOutcome(await timed(unchanged, capture), "unchanged");
        await timed(status, gitStatus);
      }
    }

    const addWrite = sample();
    const changed = sample();
    for (let round = 0; round < ROUNDS; round++) {
      const offset = (round * CHANGED * 7) % FILES;
      const picked = Array.from({ length: CHANGED }, (_, k) => filePath((offset + k * 97) % FILES));
      // Each side is measured right after its own write of the same files, from an index in
      // step with the files before the write.
      const sides = round % 2 === 0 ? (["git", "capture"] as const) : (["capture", "git"] as const);
      for (const side of sides) {
        for (const p of picked) writeFileSync(join(root, p), `changed in round ${round} for ${side}\n${p}\n`);
        if (process.env.BENCH_TRACE) process.env.STRATA_GIT_TRACE = "1";
        if (side === "git") await timed(addWrite, addAndWriteTree);
        else
          expectOutcome(await timed(changed, () => captureCheckout(root, { previous, snapshotRef: ref })), "captured");
        delete process.env.STRATA_GIT_TRACE;
        // Back to HEAD's content, and both indexes in step again (not measured). The files are
        // written back directly, so the user's index stays as it was, as during agent work.
        for (const p of picked) writeFileSync(join(root, p), originalContent(p));
        const resync = await captureCheckout(root, { previous, snapshotRef: ref });
        if (resync.outcome === "unavailable") throw resync.error;
        previous = resync.manifest;
        await addAndWriteTree();
      }
    }

    const line = (name: string, s: Sample) =>
      `${name.padEnd(46)} ${median(s.wall).toFixed(1).padStart(7)} ms   ${(s.cpu / ROUNDS).toFixed(1).padStart(7)} ms   ${(s.own / ROUNDS).toFixed(1).padStart(7)} ms\n`;
    process.stdout.write(
      `${"".padEnd(46)} ${"wall".padStart(10)}   ${"cpu".padStart(10)}   ${"of it, node".padStart(10)}\n`,
    );
    process.stdout.write(line("git status", status));
    process.stdout.write(line("unchanged capture", unchanged));
    process.stdout.write(line(`git add -A && git write-tree (${CHANGED} changed)`, addWrite));
    process.stdout.write(line(`capture (${CHANGED} changed)`, changed));
    const ratio = (a: Sample, b: Sample, goal: number, label: string) => {
      const wall = median(a.wall) / median(b.wall);
      const cpu = b.cpu > 0 ? a.cpu / b.cpu : NaN;
      const verdict = (r: number) => (Number.isNaN(r) ? "n/a" : `${r.toFixed(2)}x ${r <= goal ? "met" : "MISSED"}`);
      process.stdout.write(`${label.padEnd(46)} wall ${verdict(wall)}, cpu ${verdict(cpu)} (goal ≤ ${goal}x)\n`);
    };
    process.stdout.write("\n");
    ratio(unchanged, status, 1.2, "unchanged capture / git status");
    ratio(changed, addWrite, 1.3, "changed capture / add -A + write-tree");
    process.stdout.write(`(${FILES} files, ${CHANGED} changed, ${ROUNDS} rounds, load ${loadAverage()})\n`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  // The processes first: this process is small then, and the machine quiet.
  if (SECTIONS.has("process")) printProcessRows(await processRows());
  if (SECTIONS.has("binary")) await binaryRows();
  if (SECTIONS.has("repo")) await repositoryRows();
  else process.stdout.write(`(load ${loadAverage()})\n`);
}

await main();
