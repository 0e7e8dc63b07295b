// npm run bench:store — what the host's shared object store saves: ten fresh restores of one
// repository (a generated repository with some history, pushed to a local bare origin, plus a
// captured delta), each into a new directory, all borrowing the store under one data directory.
// Prints the first and the 10th restore's time and disk (goal: the 10th uses ≤ 0.2x the first's
// disk). Disk is what a restore adds to the host's git data: its repository's .git (the index
// included, printed apart) plus what the store grew by; the worktree's files, the same for every
// restore, are printed apart too. The files hold random text, so the history does not compress
// away as the other benchmarks' repeated text does (it compresses about as source code does not:
// not at all; with BENCH_TEXT=repeated the base is tiny and the index dominates). Everything lives
// in a temporary directory, removed after. BENCH_FILES, BENCH_CHANGED, BENCH_HISTORY and
// BENCH_RESTORES change the sizes.
import { randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureCheckout } from "../server/capture/engine/capture.ts";
import { objectStoresDirectory } from "../server/restore/engine/host-object-store.ts";
import { memoryBlobSource } from "../server/restore/engine/restore-blobs.ts";
import { restoreWorktree } from "../server/restore/engine/restore.ts";
import { filePath, git, loadAverage, timed, writeGeneratedFiles } from "./bench-repo.ts";

const FILES = Number(process.env.BENCH_FILES ?? 20_000);
const CHANGED = Number(process.env.BENCH_CHANGED ?? 200);
const RESTORES = Math.max(2, Number(process.env.BENCH_RESTORES ?? 10));
const HISTORY = Number(process.env.BENCH_HISTORY ?? 5);
const RANDOM_TEXT = process.env.BENCH_TEXT !== "repeated";

/** Random text for file i (about 600 bytes): content that does not compress away. */
function randomText(i: number): string {
  return `file ${i}\n${randomBytes(300).toString("hex")}\n`;
}
const SNAPSHOT_ID = "2d9c8b7a-6e5f-4d3c-9b2a-1f0e9d8c7b6a";

/** Bytes allocated on disk under a path (as du counts them). */
function diskBytes(path: string): number {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.blocks * 512;
  let total = stat.blocks * 512;
  for (const name of readdirSync(path)) total += diskBytes(join(path, name));
  return total;
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(2)} MiB`;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "strata-bench-store-"));
  try {
    const source = join(work, "source");
    const origin = join(work, "origin.git");
    mkdirSync(source);
    process.stdout.write(`generating ${FILES} files, pushed to a local bare origin …\n`);
    writeGeneratedFiles(source, FILES);
    if (RANDOM_TEXT) for (let i = 0; i < FILES; i++) writeFileSync(join(source, filePath(i)), randomText(i));
    git(source, ["init", "--quiet", "--initial-branch=main"]);
    git(source, ["add", "-A"]);
    git(source, ["commit", "--quiet", "-m", "generated"]);
    // Some history: each commit rewrites a tenth of the files.
    for (let c = 1; c <= HISTORY; c++) {
      for (let i = c % 10; i < FILES; i += 10) writeFileSync(join(source, filePath(i)), randomText(i));
      git(source, ["commit", "--quiet", "-am", `history ${c}`]);
    }
    git(work, ["init", "--quiet", "--bare", "--initial-branch=main", origin]);
    git(source, ["remote", "add", "origin", `file://${origin}`]);
    git(source, ["push", "--quiet", "-u", "origin", "main"]);
    for (let i = 0; i < CHANGED; i++) {
      writeFileSync(join(source, filePath(Math.floor((i * FILES) / CHANGED))), `changed ${i}\n`);
    }
    const captured = await captureCheckout(source);
    if (captured.outcome !== "captured") throw new Error(`capture: ${captured.outcome}`);
    const { manifest, artifacts } = captured;

    const host = join(work, "host");
    const stores = objectStoresDirectory(host);
    const rows: Array<{ ms: number; git: number; index: number; files: number; from: string }> = [];
    for (let n = 1; n <= RESTORES; n++) {
      const into = join(host, "worktrees", `restore-${n}`);
      const before = diskBytes(stores);
      const [ms, report] = await timed(() =>
        restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, into, {
          blobs: memoryBlobSource(artifacts),
          stateDir: join(host, "state"),
          objectStores: stores,
        }),
      );
      if (report.result.status !== "restored") throw new Error(`restore ${n}: ${report.result.status}`);
      const gitBytes = diskBytes(join(into, ".git")) + diskBytes(stores) - before;
      rows.push({
        ms,
        git: gitBytes,
        index: diskBytes(join(into, ".git", "index")),
        files: diskBytes(into) - diskBytes(join(into, ".git")),
        from: report.result.timings?.commitsFrom ?? "none",
      });
    }
    // For reference: the same restore without the store (what every restore costs without it).
    const alone = join(host, "worktrees", "no-store");
    const [aloneMs] = await timed(() =>
      restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, alone, {
        blobs: memoryBlobSource(artifacts),
        stateDir: join(host, "state"),
      }),
    );
    const aloneGit = diskBytes(join(alone, ".git"));
    const first = rows[0]!;
    const last = rows[rows.length - 1]!;
    const line = (label: string, r: (typeof rows)[number]) =>
      `${label.padEnd(16)} ${(r.ms / 1000).toFixed(2)} s   git data ${mib(r.git).padStart(11)} (index ${mib(r.index)})   files ${mib(r.files)}   (HEAD from ${r.from})\n`;
    process.stdout.write(
      `\n${FILES} files (${RANDOM_TEXT ? "random" : "repeated"} text), ${HISTORY + 1} commits, ${CHANGED} changed; ` +
        `${RESTORES} fresh restores sharing one store\n`,
    );
    process.stdout.write(line("first restore", first));
    process.stdout.write(line(`restore ${RESTORES}`, last));
    process.stdout.write(
      `ratio ${RESTORES}th / first: disk ${(last.git / first.git).toFixed(3)}x (goal ≤ 0.2x), time ${(last.ms / first.ms).toFixed(2)}x\n`,
    );
    process.stdout.write(
      `without a store (reference): ${(aloneMs / 1000).toFixed(2)} s, git data ${mib(aloneGit)} every restore\n`,
    );
    process.stdout.write(`store: ${mib(diskBytes(stores))} for ${RESTORES} restores; load average ${loadAverage()}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
