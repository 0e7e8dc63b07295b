// What the git benchmarks share: a git runner for setting up, the generated repository's file
// names and contents, timing and the machine's load.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const PER_DIR = 100;

/** Runs git for setting up a benchmark (never what is measured against Strata). */
export function git(cwd: string, args: string[], env: Record<string, string> = {}): string {
  return execFileSync("git", args, {
    cwd,
    env: {
      ...process.env,
      ...env,
      GIT_AUTHOR_NAME: "bench",
      GIT_AUTHOR_EMAIL: "bench@example.invalid",
      GIT_COMMITTER_NAME: "bench",
      GIT_COMMITTER_EMAIL: "bench@example.invalid",
    },
    maxBuffer: 1 << 30,
  }).toString();
}

/** The path of generated file i: 100 files a directory. */
export function filePath(i: number): string {
  return join(`dir${String(Math.floor(i / PER_DIR)).padStart(3, "0")}`, `file${i}.txt`);
}

/** Writes the generated repository's `count` files under `root` (not committed). */
export function writeGeneratedFiles(root: string, count: number): void {
  for (let i = 0; i < count; i++) {
    const path = join(root, filePath(i));
    if (i % PER_DIR === 0) mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, `file ${i}\n${"lorem ipsum dolor sit amet ".repeat(1 + (i % 20))}\n`);
  }
}

/** How long `fn` took (ms), and what it gave. */
export async function timed<T>(fn: () => Promise<T> | T): Promise<[number, T]> {
  const start = performance.now();
  const value = await fn();
  return [performance.now() - start, value];
}

/** The 1, 5 and 15 minute load averages (Linux), to read the figures against. */
export function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}
