// npm run bench:restore — restore cost against plain git, in two sections:
//
// generated: one commit of 20k files and a one-link 200-file delta.
//   restoreWorktree (object store borrowed, patch chain applied, every file re-read and
//   verified against the recorded tree, moved into place)
//   vs  git clone --local + git apply of the same delta                        (goal ≤ 1.3x)
// real-shape: a repository shaped like babel/babel (bench-real-repo.ts: ~28k files four folders
//   deep, ~18k commits), 20 unpushed commits and ~1.4k dirty paths captured as a 7-link chain.
//   restoreWorktree as `strata restore` runs it (the host's shared object store, already holding
//   the pushed history; the bundle and the chain from the snapshot)
//   vs  the floor: git clone --local --no-checkout, the bundle unbundled, checkout, git apply of
//   one diff from HEAD to the recorded tree                                    (goal ≤ 1.3x)
// Each also times the git commands with parallel checkout (checkout.workers=0), which the
// restore uses to write files, for reference.
// Both sides run in the same process, alternating, from the same repository and the same
// changes; the figures are medians. Everything lives in a temporary directory, removed after.
// BENCH_SECTIONS=generated,real (default both) picks sections; BENCH_FILES, BENCH_CHANGED,
// BENCH_REAL_FILES, BENCH_REAL_COMMITS, BENCH_REAL_DIRTY and BENCH_ROUNDS change the sizes.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { CaptureManifest } from "../server/domain/capture-manifest.ts";
import type { RestorePhase } from "../server/domain/restore-result.ts";
import { captureCheckout } from "../server/capture/engine/capture.ts";
import { objectStoresDirectory } from "../server/restore/engine/host-object-store.ts";
import { memoryBlobSource } from "../server/restore/engine/restore-blobs.ts";
import { restoreWorktree, type RestoreOptions, type RestoreReport } from "../server/restore/engine/restore.ts";
import { realContent, realPath, writeRealHistory } from "./bench-real-repo.ts";
import { filePath, git, loadAverage, timed, writeGeneratedFiles } from "./bench-repo.ts";
import { median } from "./stats.ts";

const FILES = Number(process.env.BENCH_FILES ?? 20_000);
const CHANGED = Number(process.env.BENCH_CHANGED ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const REAL_FILES = Number(process.env.BENCH_REAL_FILES ?? 28_000);
const REAL_COMMITS = Number(process.env.BENCH_REAL_COMMITS ?? 18_000);
const REAL_DIRTY = Number(process.env.BENCH_REAL_DIRTY ?? 1_400);
const REAL_LINKS = 7;
const REAL_UNPUSHED = 20;
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? "generated,real").split(",").map((s) => s.trim()));
const SNAPSHOT_ID = "6f1d2c3b-4a59-4e7d-8c1b-2a3f4e5d6c7b";
const PHASES: RestorePhase[] = ["fetch", "reconstruct", "materialize", "verify", "publish"];

/** What a section measured: the restore, its phases, and the git floor with and without parallel checkout. */
interface Timings {
  restore: number[];
  phases: Record<RestorePhase, number[]>;
  plain: number[];
  parallel: number[];
}

/**
 * Runs a warm-up round and then ROUNDS timed rounds of the restore and the two floors, rotating
 * which goes first so none always finds a warmer cache. Each side gets the round's directory.
 */
async function alternate(
  work: string,
  restore: (into: string) => Promise<RestoreReport>,
  floor: (clone: string, config: string[]) => void,
): Promise<Timings> {
  const t: Timings = {
    restore: [],
    phases: { fetch: [], reconstruct: [], materialize: [], verify: [], publish: [] },
    plain: [],
    parallel: [],
  };
  // Removing tens of thousands of files keeps the disk busy for a while after (this machine's
  // file system discards freed blocks): the rounds' directories are removed after the last round,
  // and every side starts after a sync, with the writes of the side before it on disk.
  const done = join(work, "done");
  mkdirSync(done, { recursive: true });
  for (let round = 0; round < ROUNDS + 1; round++) {
    const warm = round === 0;
    const dirs = [`restored-${round}`, `cloned-${round}`, `cloned-parallel-${round}`].map((d) => join(work, d));
    const sides = [
      async () => {
        const [ms, report] = await timed(() => restore(dirs[0]!));
        if (report.result.status !== "restored") throw new Error(`restore: ${report.result.status}`);
        if (warm) return;
        t.restore.push(ms);
        for (const phase of PHASES) t.phases[phase].push(report.result.timings?.[phase] ?? 0);
      },
      async () => {
        const [ms] = await timed(() => floor(dirs[1]!, []));
        if (!warm) t.plain.push(ms);
      },
      async () => {
        const [ms] = await timed(() => floor(dirs[2]!, ["-c", "checkout.workers=0"]));
        if (!warm) t.parallel.push(ms);
      },
    ];
    for (let i = 0; i < sides.length; i++) {
      execFileSync("sync");
      await sides[(round + i) % sides.length]!();
    }
    for (const dir of dirs) if (existsSync(dir)) renameSync(dir, join(done, `${round}-${basename(dir)}`));
  }
  rmSync(done, { recursive: true, force: true });
  return t;
}

function report(title: string, floorName: string, t: Timings, same: boolean): string {
  const restore = median(t.restore);
  const plain = median(t.plain);
  const parallel = median(t.parallel);
  const phaseText = PHASES.map((p) => `${p} ${median(t.phases[p]).toFixed(0)} ms`).join(", ");
  return (
    `\n${title}, ${ROUNDS} rounds (medians), load ${loadAverage()}\n` +
    `  restore with verification            ${restore.toFixed(0)} ms  (${phaseText})\n` +
    `  ${floorName.padEnd(36)} ${plain.toFixed(0)} ms\n` +
    `  ratio                                ${(restore / plain).toFixed(2)}x  (goal ≤ 1.3x)\n` +
    `  (reference) with checkout.workers=0  ${parallel.toFixed(0)} ms, ratio ${(restore / parallel).toFixed(2)}x\n` +
    `  same tree on both sides              ${same ? "yes" : "NO"}\n`
  );
}

/** One commit of FILES generated files (counted as pushed) and a one-link delta. */
async function generatedSection(work: string): Promise<{ text: string; same: boolean }> {
  const source = join(work, "source");
  mkdirSync(source);
  process.stdout.write(`generating ${FILES} files …\n`);
  writeGeneratedFiles(source, FILES);
  git(source, ["init", "--quiet", "--initial-branch=main"]);
  // No background gc: it would pack the loose objects while the floor clones them.
  git(source, ["config", "gc.auto", "0"]);
  git(source, ["add", "-A"]);
  git(source, ["commit", "--quiet", "-m", "generated"]);
  // The commit counts as pushed: no bundle, the object store has HEAD.
  git(source, ["update-ref", "refs/remotes/origin/main", "HEAD"]);

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

  const options: RestoreOptions = {
    blobs: memoryBlobSource(artifacts),
    stateDir: join(work, "state"),
    objectStore: source,
  };
  const restore = (into: string) => restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, into, options);
  const floor = (clone: string, config: string[]) => {
    git(work, [...config, "clone", "--local", "--quiet", "--", source, clone]);
    git(clone, ["apply", "--binary", "--whitespace=nowarn", patchFile]);
  };
  const t = await alternate(work, restore, floor);

  // The same tree on both sides.
  const into = join(work, "check-restore");
  const clone = join(work, "check-clone");
  await restore(into);
  git(work, ["clone", "--local", "--quiet", "--", source, clone]);
  git(clone, ["apply", "--binary", "--index", "--whitespace=nowarn", patchFile]);
  const same =
    git(clone, ["write-tree"]).trim() === manifest.tree && git(into, ["write-tree"]).trim() === manifest.tree;
  for (const dir of [into, clone, source]) rmSync(dir, { recursive: true, force: true });
  return {
    text: report(`generated: ${FILES} files, one commit, one link`, "git clone --local + git apply", t, same),
    same,
  };
}

/**
 * The babel-shaped repository: its history pushed to a bare origin, a clone with REAL_UNPUSHED
 * unpushed commits, and REAL_DIRTY dirty paths captured over REAL_LINKS captures (one chain).
 */
async function realShapeSection(work: string): Promise<{ text: string; same: boolean }> {
  const origin = join(work, "real-origin.git");
  const source = join(work, "real-source");
  process.stdout.write(`generating a ${REAL_FILES}-file repository with ${REAL_COMMITS} commits …\n`);
  const [setupMs] = await timed(() => writeRealHistory(origin, { files: REAL_FILES, commits: REAL_COMMITS }));
  git(work, ["clone", "--quiet", "--", origin, source]);
  git(source, ["config", "gc.auto", "0"]);
  for (let c = 1; c <= REAL_UNPUSHED; c++) {
    for (const i of [c * 31, c * 977])
      writeFileSync(join(source, realPath(i % REAL_FILES)), realContent(i, 50_000 + c));
    git(source, ["commit", "--quiet", "-am", `unpushed ${c}`]);
  }
  // The chain: each capture follows more edits (and one added and one removed file).
  const artifacts = new Map<string, Uint8Array>();
  let manifest: CaptureManifest | null = null;
  const perLink = Math.ceil(REAL_DIRTY / REAL_LINKS);
  for (let link = 0; link < REAL_LINKS; link++) {
    for (let k = 0; k < perLink - 2; k++) {
      const i = Math.floor(((link * perLink + k) * REAL_FILES) / REAL_DIRTY) % REAL_FILES;
      writeFileSync(join(source, realPath(i)), realContent(i, 90_000 + link));
    }
    writeFileSync(join(source, realPath(link * 13 + 5).replace(/\.js$/, `.added${link}.js`)), `added ${link}\n`);
    rmSync(join(source, realPath(REAL_FILES - 1 - link * 17)), { force: true });
    const captured = await captureCheckout(source, { previous: manifest });
    if (captured.outcome !== "captured") throw new Error(`capture ${link}: ${captured.outcome}`);
    for (const [digest, bytes] of captured.artifacts) artifacts.set(digest, bytes);
    manifest = captured.manifest;
  }
  if (!manifest?.bundle || manifest.patches.length !== REAL_LINKS) throw new Error("not a bundle and a 7-link chain");
  const recorded = manifest;
  const dirty = git(source, ["status", "--porcelain"]).split("\n").filter(Boolean).length;
  const bundleFile = join(work, "unpushed.bundle");
  writeFileSync(bundleFile, artifacts.get(recorded.bundle!.digest)!);
  const diffFile = join(work, "combined.patch");
  writeFileSync(
    diffFile,
    execFileSync("git", ["diff", "--binary", recorded.head!, recorded.tree], { cwd: source, maxBuffer: 1 << 30 }),
  );
  const chainBytes = recorded.patches.reduce((sum, p) => sum + p.size, 0);
  process.stdout.write(
    `set up in ${(setupMs / 1000).toFixed(1)} s: ${REAL_UNPUSHED} unpushed commits (bundle ${recorded.bundle!.size} bytes), ` +
      `${dirty} dirty paths in ${recorded.patches.length} links (${chainBytes} bytes)\n`,
  );

  // The host's object store, as `strata restore` uses it; the warm-up round fills it.
  const options: RestoreOptions = {
    blobs: memoryBlobSource(artifacts),
    stateDir: join(work, "state"),
    objectStores: objectStoresDirectory(join(work, "host")),
  };
  const restore = (into: string) => restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest: recorded }, into, options);
  const floor = (clone: string, config: string[]) => {
    git(work, [...config, "clone", "--local", "--no-checkout", "--quiet", "--", origin, clone]);
    git(clone, ["bundle", "unbundle", bundleFile]);
    git(clone, [...config, "checkout", "--quiet", "--detach", recorded.head!]);
    git(clone, ["apply", "--binary", "--whitespace=nowarn", diffFile]);
  };
  const t = await alternate(work, restore, floor);

  const into = join(work, "check-restore");
  const clone = join(work, "check-clone");
  await restore(into);
  floor(clone, []);
  git(clone, ["add", "-A"]);
  const same =
    git(clone, ["write-tree"]).trim() === recorded.tree && git(into, ["write-tree"]).trim() === recorded.tree;
  const title = `real-shape: ${REAL_FILES} files, ${REAL_COMMITS + 1} pushed commits, ${REAL_UNPUSHED} unpushed, ${dirty} dirty paths in ${REAL_LINKS} links`;
  return { text: report(title, "clone, unbundle, checkout, apply", t, same), same };
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "strata-bench-restore-"));
  try {
    const results: { text: string; same: boolean }[] = [];
    if (SECTIONS.has("generated")) results.push(await generatedSection(work));
    if (SECTIONS.has("real")) results.push(await realShapeSection(work));
    for (const r of results) process.stdout.write(r.text);
    if (results.some((r) => !r.same)) process.exitCode = 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
