// npm run bench:capture — capture cost against plain git on a generated 20k-file repository.
//   unchanged capture              vs  git status                                   (goal ≤ 1.2x)
//   capture with 200 files changed vs  git add -A && git write-tree, private index  (goal ≤ 1.3x)
// Both sides of a ratio run in the same process, taking turns at going first, over the same
// changes. Wall-clock figures are medians; the CPU figures (git processes plus this process,
// summed over all rounds, Linux only) are what to read on a busy machine, where wall-clock
// time mostly measures the neighbours. The repository is a temporary directory, removed after.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureCheckout, type CaptureResult } from "../server/git/capture.ts";
import { createGitRunner } from "../server/git/runner.ts";
import type { CaptureManifest } from "../server/domain/capture-manifest.ts";
import { PER_DIR, filePath, git, median } from "./bench-repo.ts";

const FILES = Number(process.env.BENCH_FILES ?? 20_000);
const CHANGED = Number(process.env.BENCH_CHANGED ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

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

function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

async function main(): Promise<void> {
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

await main();
