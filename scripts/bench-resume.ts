// npm run bench:resume — what resuming costs on this host, on a generated 20k-file repository
// with a 200-file delta (uncommitted edits on a pushed commit), in one process, alternating:
//
//   resume in place (resumeCheckouts: the snapshot's manifest read, the checkout compared with
//   the recorded HEAD and tree, nothing written)            vs  git status           (goal ≤ 1.2x)
//   once after a commit of the recorded edits (the checkout's index holds the recorded tree), once
//   with the edits still uncommitted (the index holds HEAD's tree: 200 entries differ),
//   resume by reusing an idle worktree (the reuse check, the reset of the files that differ, its
//   verification, the pool's record)                       vs  a fresh restore of
//   the same snapshot (restoreWorktree with the source as the borrowed object store, every file
//   written and re-read)                                                             (goal ≤ 0.25x)
//
// For reference it also times a fresh resume into a new pooled worktree as resume does it today
// (HEAD fetched from the remote, no shared object store yet). The catalog is in memory (the
// snapshot records and their blobs), so the figures are the host's side of a resume. Medians;
// everything lives in a temporary directory, removed after. BENCH_FILES, BENCH_CHANGED and
// BENCH_ROUNDS change the sizes; BENCH_SECTIONS=in-place,reuse (default: both) runs only the
// resume in place rows, or only the reuse rows (with the fresh restores).
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalManifestBytes, type CaptureManifest } from "../server/domain/capture-manifest.ts";
import type { ResumePlan } from "../server/domain/resume-plan.ts";
import type { SnapshotRef } from "../server/domain/views.ts";
import { captureCheckout } from "../server/capture/engine/capture.ts";
import { memoryBlobSource } from "../server/restore/engine/restore-blobs.ts";
import { restoreWorktree } from "../server/restore/engine/restore.ts";
import type { RestorePort } from "../server/restore/restore-snapshot.ts";
import { openWorktreePool, type WorktreePool } from "../server/worktrees/pool.ts";
import { resumeCheckouts, type ResumeResult } from "../server/worktrees/resume-checkouts.ts";
import { releaseWorktree } from "../server/worktrees/take-worktree.ts";
import { filePath, git, loadAverage, timed, writeGeneratedFiles } from "./bench-repo.ts";
import { median } from "./stats.ts";

const FILES = Number(process.env.BENCH_FILES ?? 20_000);
const CHANGED = Number(process.env.BENCH_CHANGED ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const HOST = "bench-host";
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? "in-place,reuse").split(",").map((s) => s.trim()));

/** The generated repository, committed and pushed to a bare `origin` (so restores can fetch it). */
function generate(root: string, remote: string): void {
  writeGeneratedFiles(root, FILES);
  writeFileSync(join(root, ".gitignore"), "node_modules/\n");
  git(root, ["init", "--quiet", "--initial-branch=main"]);
  // No background gc: it would pack the loose objects while the setup clones them (flaky).
  git(root, ["config", "gc.auto", "0"]);
  git(root, ["add", "-A"]);
  git(root, ["commit", "--quiet", "-m", "generated"]);
  git(root, ["clone", "--quiet", "--bare", "--", root, remote]);
  git(root, ["remote", "add", "origin", `file://${remote}`]);
  git(root, ["fetch", "--quiet", "origin"]);
}

/** A snapshot record as the catalog would hold it, with its manifest among the blobs. */
function snapshotOf(id: string, manifest: CaptureManifest, blobs: Map<string, Uint8Array>): SnapshotRef {
  const bytes = canonicalManifestBytes(manifest);
  const digest = createHash("sha256").update(bytes).digest("hex");
  blobs.set(digest, bytes);
  const now = new Date();
  return {
    id,
    class: "checkpoint",
    state: "ready",
    repositoryId: "bench",
    backendKind: "local",
    baseImage: "none",
    canonicalRef: null,
    canonicalCommit: null,
    workContextId: "bench",
    lineageId: null,
    sequence: 1,
    predecessorId: null,
    manifestDigest: digest,
    artifact: { kind: "git", ref: digest },
    manifest: { treeId: manifest.tree, head: manifest.head, branch: manifest.branch, blobDigests: [], sizeBytes: 0n },
    createdAt: now,
    readyAt: now,
  };
}

function memoryPort(snapshots: Map<string, SnapshotRef>, blobs: Map<string, Uint8Array>): RestorePort {
  const source = memoryBlobSource(blobs);
  return {
    open: source.open,
    getSnapshot: async (id) => {
      const found = snapshots.get(id);
      if (!found) throw new Error(`no snapshot ${id}`);
      return found;
    },
    acquire: () => Promise.reject(new Error("not used")),
    reportRestore: () => Promise.reject(new Error("not used")),
    pin: async () => undefined,
    release: async () => undefined,
  };
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "strata-bench-resume-"));
  try {
    const source = join(work, "source");
    mkdirSync(source);
    process.stdout.write(`generating ${FILES} files …\n`);
    generate(source, join(work, "remote.git"));

    const blobs = new Map<string, Uint8Array>();
    const snapshots = new Map<string, SnapshotRef>();
    const capture = async (id: string) => {
      const captured = await captureCheckout(source);
      if (captured.outcome !== "captured") throw new Error(`capture: ${captured.outcome}`);
      for (const [digest, bytes] of captured.artifacts) blobs.set(digest, bytes);
      snapshots.set(id, snapshotOf(id, captured.manifest, blobs));
      return captured.manifest;
    };
    const base = "0b4a7d3e-7f0e-4c51-9d1e-0c8a3b2f1e01";
    const delta = "0b4a7d3e-7f0e-4c51-9d1e-0c8a3b2f1e02";
    await capture(base);
    for (let i = 0; i < CHANGED; i++) {
      writeFileSync(join(source, filePath(Math.floor((i * FILES) / CHANGED))), `changed ${i}\n`);
    }
    const manifest = await capture(delta);
    // A second checkout of the same snapshot whose recorded edits were committed since.
    const committed = join(work, "committed");
    git(work, ["clone", "--quiet", "--local", "--", source, committed]);
    for (let i = 0; i < CHANGED; i++) {
      writeFileSync(join(committed, filePath(Math.floor((i * FILES) / CHANGED))), `changed ${i}\n`);
    }
    git(committed, ["commit", "--quiet", "-a", "-m", "the recorded edits"]);
    git(committed, ["status", "--porcelain"]);
    const port = memoryPort(snapshots, blobs);
    const checkout = (id: string, workspace: string | null): ResumePlan["checkouts"][number] => ({
      snapshot: snapshots.get(id)!,
      repository: { id: "bench", identity: "bench", name: "bench" },
      recorded: { workspace, host: workspace ? HOST : null },
    });
    const resume = async (pool: WorktreePool, plan: ResumePlan, owner: string): Promise<ResumeResult> => {
      const result = await resumeCheckouts({
        plan,
        port,
        pool,
        unpooledDir: join(work, "restored"),
        stateDir: join(work, "state"),
        hostNames: [HOST],
        owner,
      });
      for (const held of result.held) await releaseWorktree(held);
      return result;
    };

    // An idle worktree of the pool, restored from the base snapshot, with dependencies installed.
    const pool = await openWorktreePool({ dir: join(work, "worktrees"), host: HOST });
    const first = await resume(pool, { workContextId: null, checkouts: [checkout(base, null)] }, "setup");
    const idle = first.checkouts[0]?.path;
    if (!idle) throw new Error("no idle worktree");
    mkdirSync(join(idle, "node_modules", "dep"), { recursive: true });
    writeFileSync(join(idle, "node_modules", "dep", "index.js"), "module.exports = 1;\n");

    const inPlace: number[] = [];
    const status: number[] = [];
    const inPlaceCommitted: number[] = [];
    const statusCommitted: number[] = [];
    const reuse: number[] = [];
    const fresh: number[] = [];
    const freshResume: number[] = [];
    for (let round = 0; round <= ROUNDS; round++) {
      const warm = round === 0;
      const inPlaceSides = (
        [
          [source, inPlace, status],
          [committed, inPlaceCommitted, statusCommitted],
        ] as const
      ).flatMap(([dir, resumed, plain]) => [
        async () => {
          const [ms, result] = await timed(() =>
            resume(pool, { workContextId: null, checkouts: [checkout(delta, dir)] }, `in-place-${round}`),
          );
          if (result.checkouts[0]?.outcome !== "in-place") throw new Error("not in place");
          if (!warm) resumed.push(ms);
        },
        async () => {
          const [ms] = await timed(() => git(dir, ["status"]));
          if (!warm) plain.push(ms);
        },
      ]);
      const reuseSides = [
        async () => {
          const [ms, result] = await timed(() =>
            resume(pool, { workContextId: null, checkouts: [checkout(delta, null)] }, `reuse-${round}`),
          );
          if (result.checkouts[0]?.worktree?.origin !== "reused") throw new Error("not reused");
          if (!warm) reuse.push(ms);
          // Back to the base snapshot for the next round (the same reuse, not timed).
          await resume(pool, { workContextId: null, checkouts: [checkout(base, null)] }, `back-${round}`);
        },
        async () => {
          const into = join(work, `fresh-${round}`);
          const [ms, report] = await timed(() =>
            restoreWorktree({ snapshotId: delta, manifest }, into, {
              blobs: memoryBlobSource(blobs),
              stateDir: join(work, "state"),
              objectStore: source,
            }),
          );
          if (report.result.status !== "restored") throw new Error(`restore: ${report.result.status}`);
          if (!warm) fresh.push(ms);
          rmSync(into, { recursive: true, force: true });
        },
        async () => {
          const other = await openWorktreePool({ dir: join(work, `pool-${round}`), host: HOST });
          const [ms, result] = await timed(() =>
            resume(other, { workContextId: null, checkouts: [checkout(delta, null)] }, `fresh-${round}`),
          );
          if (result.checkouts[0]?.worktree?.origin !== "new") throw new Error("not new");
          if (!warm) freshResume.push(ms);
          rmSync(other.dir, { recursive: true, force: true });
        },
      ];
      const sides = [...(SECTIONS.has("in-place") ? inPlaceSides : []), ...(SECTIONS.has("reuse") ? reuseSides : [])];
      // Rotate which side goes first, so none always finds a warmer cache.
      for (let i = 0; i < sides.length; i++) await sides[(round + i) % sides.length]!();
    }
    const kept = readFileSync(join(idle, "node_modules", "dep", "index.js"), "utf8") === "module.exports = 1;\n";

    const ms = (v: number) => `${v.toFixed(0)} ms`.padStart(8);
    const [a, b, c, d, e, f, g] = [inPlace, status, reuse, fresh, freshResume, inPlaceCommitted, statusCommitted].map(
      median,
    ) as [number, number, number, number, number, number, number];
    const inPlaceRows =
      `  resume in place, recorded edits committed  ${ms(f)}\n` +
      `  git status there                           ${ms(g)}\n` +
      `  ratio                                      ${(f / g).toFixed(2)}x  (goal ≤ 1.2x)\n` +
      `  resume in place, edits uncommitted         ${ms(a)}\n` +
      `  git status there                           ${ms(b)}\n` +
      `  ratio                                      ${(a / b).toFixed(2)}x  (goal ≤ 1.2x)\n`;
    const reuseRows =
      `  resume reusing an idle worktree            ${ms(c)}\n` +
      `  fresh restore (object store borrowed)      ${ms(d)}\n` +
      `  ratio                                      ${(c / d).toFixed(2)}x  (goal ≤ 0.25x)\n` +
      `  (reference) fresh resume, new worktree     ${ms(e)}  (HEAD fetched from the remote)\n` +
      `  node_modules kept by every reuse           ${kept ? "yes" : "NO"}\n`;
    process.stdout.write(
      `\n${FILES} files, ${CHANGED} changed, ${ROUNDS} rounds (medians), load ${loadAverage()}\n` +
        (SECTIONS.has("in-place") ? inPlaceRows : "") +
        (SECTIONS.has("reuse") ? reuseRows : ""),
    );
    if (SECTIONS.has("reuse") && !kept) process.exitCode = 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
