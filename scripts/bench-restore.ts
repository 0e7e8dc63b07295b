// npm run bench:restore — restore cost against plain git on a generated 20k-file repository:
//   restoreWorktree (object store borrowed, patch chain applied, every file re-read and
//   verified against the recorded tree, moved into place)
//   vs  git clone --local + git apply of the same delta                        (goal ≤ 1.3x)
// and, for reference, those git commands with parallel checkout (checkout.workers=0), which the
// restore uses to write files.
// Both sides run in the same process, alternating, from the same repository and the same
// patch; the figures are medians. Everything lives in a temporary directory, removed after.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RestorePhase } from "../server/domain/restore-result.ts";
import { captureCheckout } from "../server/git/capture.ts";
import { memoryBlobSource } from "../server/git/restore-blobs.ts";
import { restoreWorktree } from "../server/git/restore.ts";
import { filePath, git, median, timed, writeGeneratedFiles } from "./bench-repo.ts";

const FILES = Number(process.env.BENCH_FILES ?? 20_000);
const CHANGED = Number(process.env.BENCH_CHANGED ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SNAPSHOT_ID = "6f1d2c3b-4a59-4e7d-8c1b-2a3f4e5d6c7b";

function generate(root: string): void {
  writeGeneratedFiles(root, FILES);
  git(root, ["init", "--quiet", "--initial-branch=main"]);
  git(root, ["add", "-A"]);
  git(root, ["commit", "--quiet", "-m", "generated"]);
  // The commit counts as pushed: no bundle, the object store has HEAD.
  git(root, ["update-ref", "refs/remotes/origin/main", "HEAD"]);
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "strata-bench-restore-"));
  try {
    const source = join(work, "source");
    mkdirSync(source);
    process.stdout.write(`generating ${FILES} files …\n`);
    generate(source);

    // The delta: CHANGED files edited, a few added and removed, captured once.
    for (let i = 0; i < CHANGED; i++) {
      const n = Math.floor((i * FILES) / CHANGED);
      writeFileSync(join(source, filePath(n)), `changed ${i}\n`);
    }
    writeFileSync(join(source, "added.txt"), "a new file\n");
    rmSync(join(source, filePath(1)));
    const captured = await captureCheckout(source);
    if (captured.outcome !== "captured") throw new Error(`capture: ${captured.outcome}`);
    const { manifest, artifacts } = captured;
    const patch = artifacts.get(manifest.patches[0]?.digest ?? "");
    if (!patch) throw new Error("no patch was captured");
    const patchFile = join(work, "delta.patch");
    writeFileSync(patchFile, patch);
    process.stdout.write(`delta: ${CHANGED} files changed, 1 added, 1 removed; patch ${patch.length} bytes\n`);

    const blobs = memoryBlobSource(artifacts);
    const restoreTimes: number[] = [];
    const gitTimes: number[] = [];
    const phases: Record<RestorePhase, number[]> = {
      fetch: [],
      reconstruct: [],
      materialize: [],
      verify: [],
      publish: [],
    };
    const parallelGitTimes: number[] = [];
    const cloneAndApply = async (clone: string, config: string[]): Promise<number> =>
      (
        await timed(() => {
          git(work, [...config, "clone", "--local", "--quiet", "--", source, clone]);
          git(clone, ["apply", "--binary", "--whitespace=nowarn", patchFile]);
        })
      )[0];
    for (let round = 0; round < ROUNDS + 1; round++) {
      const into = join(work, `restored-${round}`);
      const clone = join(work, `cloned-${round}`);
      const parallelClone = join(work, `cloned-parallel-${round}`);
      const warm = round === 0;
      const sides = [
        async () => {
          const [ms, report] = await timed(() =>
            restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, into, {
              blobs,
              stateDir: join(work, "state"),
              objectStore: source,
            }),
          );
          if (report.result.status !== "restored") throw new Error(`restore: ${report.result.status}`);
          if (warm) return;
          restoreTimes.push(ms);
          for (const phase of Object.keys(phases) as RestorePhase[]) {
            phases[phase].push(report.result.timings?.[phase] ?? 0);
          }
        },
        async () => {
          const ms = await cloneAndApply(clone, []);
          if (!warm) gitTimes.push(ms);
        },
        async () => {
          const ms = await cloneAndApply(parallelClone, ["-c", "checkout.workers=0"]);
          if (!warm) parallelGitTimes.push(ms);
        },
      ];
      // Rotate which side goes first, so none always finds a warmer cache.
      for (let i = 0; i < sides.length; i++) await sides[(round + i) % sides.length]!();
      for (const dir of [into, clone, parallelClone]) rmSync(dir, { recursive: true, force: true });
    }

    // The same tree on both sides.
    const into = join(work, "check-restore");
    const clone = join(work, "check-clone");
    await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, into, {
      blobs,
      stateDir: join(work, "state"),
      objectStore: source,
    });
    git(work, ["clone", "--local", "--quiet", "--", source, clone]);
    git(clone, ["apply", "--binary", "--index", "--whitespace=nowarn", patchFile]);
    const same =
      git(clone, ["write-tree"]).trim() === manifest.tree && git(into, ["write-tree"]).trim() === manifest.tree;

    const restore = median(restoreTimes);
    const plain = median(gitTimes);
    const parallel = median(parallelGitTimes);
    const phaseText = (Object.keys(phases) as RestorePhase[])
      .map((p) => `${p} ${median(phases[p]).toFixed(0)} ms`)
      .join(", ");
    process.stdout.write(
      `\n${FILES} files, ${ROUNDS} rounds (medians)\n` +
        `  restore with verification            ${restore.toFixed(0)} ms  (${phaseText})\n` +
        `  git clone --local + git apply        ${plain.toFixed(0)} ms\n` +
        `  ratio                                ${(restore / plain).toFixed(2)}x  (goal ≤ 1.3x)\n` +
        `  (reference) with checkout.workers=0  ${parallel.toFixed(0)} ms, ratio ${(restore / parallel).toFixed(2)}x\n` +
        `  same tree on both sides              ${same ? "yes" : "NO"}\n`,
    );
    if (!same) process.exitCode = 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
