// restoreWorktree(record, into): rebuilds a captured checkout in a new directory, verified to
// the recorded git tree, or, when that cannot be done, the best state this host can reach.
//
//   check the record (INVALID_SNAPSHOT) and the target (UNSAFE_TARGET)  — nothing runs or is written before
//   fetch        HEAD's commit: the host's object store, the snapshot's bundle, or the remotes
//   reconstruct  the patch chain applied to HEAD in the index, each link checked against its tree
//   materialize  the files written from the index, then the files recorded verbatim, then the
//                Git LFS files' content (the snapshot's objects, then the recorded remotes)
//   verify       every file re-read and compared with its recorded blob (verbatim ones: their bytes)
//   publish      the staging directory renamed into place
//
// When the exact restore fails with a content cause (a missing or damaged blob, commits that
// cannot be had, a change set that does not apply, a tree that differs), the degraded ladder
// decides what the worktree holds instead: (a) the recorded HEAD with the change sets that
// apply, up to the first that does not; else (b) the closest commit that can be had: the
// pushed base of the unpushed commits, then the caller's candidates (earlier snapshots of the
// same checkout, nearest first), then the tip of the recorded branch; else (c) nothing.
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { CaptureManifest, PatchLink } from "../../domain/capture-manifest.ts";
import { BUNDLE_OMISSIONS } from "../../domain/capture-manifest.ts";
import { isStrataError, StrataError } from "../../domain/errors.ts";
import { checkRestoreRecord, EMPTY_TREE, type RestoreRecord } from "../../domain/restore-record.ts";
import {
  isDegradableCause,
  nextStepFor,
  type DegradableCause,
  type MissingChangeSet,
  type RestoreBasis,
  type RestorePhase,
  type RestoreResult,
  type RestoreStage,
  type RestoreTimings,
  type RestoreWarning,
} from "../../domain/restore-result.ts";
import { existingObjects, isObjectId, writeTree } from "../../git/commands.ts";
import {
  hostObjectStorePath,
  openHostObjectStore,
  packRefs,
  PUSHED_REF_PREFIX,
  pushedCommitsInStore,
  pushedTipRef,
  recordPushedInStore,
  adoptShallowCut,
  setRefs,
  shallowCommitsInStore,
  type HostObjectStore,
} from "./host-object-store.ts";
import { copyBlobToFile, type BlobSource } from "./restore-blobs.ts";
import {
  checkoutIndex,
  commitTree,
  filesDifferingFromIndex,
  headToBranch,
  initRestoreRepository,
  packObjects,
  prunePacked,
  readTreeToIndex,
  setConfig,
  setRef,
} from "../../git/restore-commands.ts";
import { fetchableRemotes, RestoreHistory, type CommitSource } from "./restore-history.ts";
import { warnOfHostLineEndings } from "./restore-eol.ts";
import { restoreLfsFiles } from "./restore-lfs.ts";
import { applyChain, pathsInPatch } from "./restore-patches.ts";
import { checkTarget, createStaging, removeStaleRestores } from "./restore-staging.ts";
import { writeVerbatimFiles, type VerbatimOutcome } from "./restore-verbatim.ts";
import { createGitRunner, type GitRunner } from "../../git/runner.ts";
import { filesNotReadBack } from "../../capture/engine/verbatim-files.ts";

export type { RestoreRecord } from "../../domain/restore-record.ts";

export interface RestoreProgress {
  phase: RestorePhase | "ladder";
  message: string;
}

export interface RestoreOptions {
  /** Where the snapshot's blobs (patches, bundle) are read from; each is verified by sha256. */
  blobs: BlobSource;
  /** This host's restore state (crash records of interrupted restores live under it). */
  stateDir: string;
  /**
   * A repository (or git directory) on this host whose objects the restore may use. It is
   * borrowed through alternates, so it must outlive the restored worktree.
   */
  objectStore?: string | null;
  /**
   * This host's shared object stores, one per repository (`<dataDir>/objects`): the restore
   * borrows the store of the snapshot's repository (created on first use), fetches missing
   * commits into it and records there the commits known pushed. Unused when the snapshot
   * records no remote.
   */
  objectStores?: string | null;
  /** Commits of earlier snapshots of the same checkout, nearest first (ladder rung b). */
  candidates?: readonly string[];
  /** Throw the first content failure instead of walking the degraded ladder. */
  exactOnly?: boolean;
  gitPath?: string;
  baseEnv?: Readonly<Record<string, string | undefined>>;
  /** Per git call (fetches have their own). */
  timeoutMs?: number;
  fetchTimeoutMs?: number;
  signal?: AbortSignal;
  onProgress?: (event: RestoreProgress) => void;
}

export interface RestoreReport {
  /** The restored worktree, or null when nothing was written (`status: "unrestored"`). */
  path: string | null;
  result: RestoreResult;
}

/** Whether a failure is one the degraded ladder answers (about the snapshot's content). */
function isDegradableFailure(error: unknown): error is StrataError & { code: DegradableCause } {
  return isStrataError(error) && isDegradableCause(error.code);
}

const DEFAULT_FETCH_TIMEOUT_MS = 10 * 60_000;
/** Per git call: writing a very large worktree takes a while. Also a reset's (reset-worktree.ts). */
export const DEFAULT_TIMEOUT_MS = 30 * 60_000;

/** The commit history a restore (or a reset for reuse) reads HEAD and the bundle from. */
export function restoreHistory(
  git: GitRunner,
  manifest: CaptureManifest,
  opts: Pick<RestoreOptions, "blobs" | "fetchTimeoutMs" | "baseEnv" | "signal">,
  scratch: string,
  store?: HostObjectStore | null,
): RestoreHistory {
  return new RestoreHistory(git, manifest, {
    blobs: opts.blobs,
    scratch,
    fetchTimeoutMs: opts.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS,
    baseEnv: opts.baseEnv ?? process.env,
    signal: opts.signal,
    ...(store ? { store } : {}),
  });
}

interface Held {
  stage: RestoreStage;
  head: string | null;
  tree: string;
  basis: RestoreBasis;
  applied: PatchLink[];
  missingChangeSets: MissingChangeSet[];
  paths: string[];
  pathsComplete: boolean;
  cause: StrataError | null;
}

/** Milliseconds spent in each restore phase, summed over the calls it timed. */
export function phaseClock() {
  const ms: Record<RestorePhase, number> = { fetch: 0, reconstruct: 0, materialize: 0, verify: 0, publish: 0 };
  return {
    ms,
    async time<T>(phase: RestorePhase, fn: () => Promise<T>): Promise<T> {
      const start = performance.now();
      try {
        return await fn();
      } finally {
        ms[phase] += performance.now() - start;
      }
    },
  };
}
type PhaseClock = ReturnType<typeof phaseClock>;

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/**
 * Restores a snapshot record into `into` (new or empty). Resolves with what the worktree holds;
 * rejects only with INVALID_SNAPSHOT, UNSAFE_TARGET, a failure that is not about the snapshot's
 * content (git missing, a timeout, an abort…), or, with `exactOnly`, the first content failure.
 * Nothing is left behind on failure; nothing is created but `into` (with its parent) and the
 * host's state directory.
 */
export async function restoreWorktree(
  record: RestoreRecord,
  into: string,
  opts: RestoreOptions,
): Promise<RestoreReport> {
  const manifest = checkRestoreRecord(record);
  const target = await checkTarget(into);
  if (opts.signal?.aborted) throw new StrataError("ABORTED", "The restore was aborted before it started.");
  const clock = phaseClock();
  const warnings = [...(await removeStaleRestores(opts.stateDir)), ...captureWarnings(manifest)];
  const staging = await createStaging(target, opts.stateDir);
  // Packing the repository's own loose objects, started once the files are written, beside
  // their verification (only beside a shared store: see below).
  const packing: Packing = { done: null };
  try {
    const git = createGitRunner({
      cwd: staging.dir,
      gitPath: opts.gitPath,
      baseEnv: opts.baseEnv,
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      signal: opts.signal,
    });
    const gitDir = join(staging.dir, ".git");
    const scratch = join(gitDir, "strata-restore");
    await git.run(initRestoreRepository(staging.dir, manifest.objectFormat));
    await mkdir(scratch);
    const store = await sharedStoreOf(manifest, opts);
    const borrowed = [opts.objectStore, store?.dir].filter((s): s is string => Boolean(s));
    if (borrowed.length > 0) {
      await borrowObjects(gitDir, borrowed);
      warnings.push({
        kind: "shared-object-store",
        message: `The restored repository borrows objects from ${borrowed.join(" and ")}; keep that store while the worktree is used.`,
      });
    }
    const history = restoreHistory(git, manifest, opts, scratch, store);
    const context: BuildContext = {
      git,
      manifest,
      opts,
      clock,
      history,
      indexFile: join(gitDir, "index"),
      scratch,
      warnings,
      packing: store ? packing : null,
    };
    const { held, commitsFrom, headFailure } = await build(context);
    // When HEAD could not be had only because the bundle's pushed base could not be fetched,
    // that base is what is missing, not the commits the bundle holds.
    const missingBase = headFailure ? history.missingBase : [];
    const timings = (source: CommitSource | "none"): RestoreTimings => ({
      fetch: round(clock.ms.fetch),
      reconstruct: round(clock.ms.reconstruct),
      materialize: round(clock.ms.materialize),
      verify: round(clock.ms.verify),
      publish: round(clock.ms.publish),
      commitsFrom: source,
    });

    const objectStore = store?.dir ?? null;
    if (!held) {
      const result = nothingRestored(record.snapshotId, manifest, headFailure, missingBase, warnings);
      await packing.done?.catch(() => undefined);
      await staging.discard();
      return { path: null, result: { ...result, objectStore, timings: timings(commitsFrom) } };
    }
    await clock.time("verify", () => warnOfHostLineEndings(git, join(gitDir, "index"), warnings));
    await finalizeRepository(git, record.snapshotId, manifest, held, history, store);
    // Beside a shared store, the repository's own objects are the only git data each restore
    // adds: kept as one pack, not a loose file (and a block) per object.
    await clock.time("publish", async () => packing.done);
    const missingCommits = missingBase.length > 0 ? missingBase : await commitsNotHeld(git, manifest);
    if (history.shallow || (store && (await shallowCommitsInStore(store)).length > 0)) {
      warnings.push({
        kind: "shallow-history",
        message:
          "History was fetched shallow: git log stops at the restored commit (git fetch --unshallow for the rest).",
      });
    }
    await rm(scratch, { recursive: true, force: true });
    opts.onProgress?.({ phase: "publish", message: `moving the worktree into ${target}` });
    await clock.time("publish", () => staging.publish());
    const result = resultOf(record.snapshotId, manifest, held, missingCommits, missingBase, warnings);
    return { path: target, result: { ...result, objectStore, timings: timings(commitsFrom) } };
  } catch (error) {
    await packing.done?.catch(() => undefined);
    await staging.discard();
    throw error;
  }
}

interface Packing {
  done: Promise<void> | null;
}

/** Packs a repository's own loose objects into one pack; borrowed objects stay where they are. */
async function packLooseObjects(git: GitRunner, gitDir: string): Promise<void> {
  const objects = join(gitDir, "objects");
  const fanout = (await readdir(objects)).filter((name) => /^[0-9a-f]{2}$/.test(name));
  const loose = await Promise.all(
    fanout.map(async (dir) =>
      (await readdir(join(objects, dir)))
        .filter((name) => /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/.test(name))
        .map((name) => dir + name),
    ),
  );
  const oids = loose.flat();
  if (oids.length === 0) return;
  await git.run(packObjects(join(objects, "pack", "pack"), oids));
  await git.run(prunePacked());
}

interface BuildContext {
  git: GitRunner;
  manifest: CaptureManifest;
  opts: RestoreOptions;
  clock: PhaseClock;
  history: RestoreHistory;
  indexFile: string;
  scratch: string;
  /** The result's warnings, which writing the files may add to. */
  warnings: RestoreWarning[];
  /** Where materialize starts packing the loose objects, once nothing more reads them (null: not packed). */
  packing: Packing | null;
}

interface Built {
  held: Held | null;
  commitsFrom: CommitSource | "none";
  /** Why the recorded HEAD could not be had, when it could not. */
  headFailure: StrataError | null;
}

async function build(c: BuildContext): Promise<Built> {
  const { manifest, opts, clock, history } = c;
  let commitsFrom: CommitSource | "none" = "none";
  let headFailure: StrataError | null = null;
  if (manifest.head) {
    const head = manifest.head;
    opts.onProgress?.({ phase: "fetch", message: `getting commit ${head.slice(0, 12)}` });
    try {
      commitsFrom = await clock.time("fetch", () => history.obtainHead(head));
    } catch (error) {
      if (!isDegradableFailure(error) || opts.exactOnly) throw error;
      headFailure = error;
    }
  }
  if (!headFailure) return { held: await atRecordedHead(c), commitsFrom, headFailure };

  // Rung (b): the closest commit this host can get.
  opts.onProgress?.({ phase: "ladder", message: `${headFailure.code}: looking for the closest commit` });
  const closest = await clock.time("fetch", () => closestCommit(history, manifest, opts.candidates ?? []));
  if (!closest) return { held: null, commitsFrom, headFailure };
  const tree = await c.git.run(commitTree(closest.oid));
  await clock.time("reconstruct", () => c.git.run(readTreeToIndex(c.indexFile, closest.oid)));
  const verbatim = await materialize(c, tree);
  const differing = await verifyFiles(c, tree, verbatim);
  const readable = await readablePatchPaths(c, manifest.patches);
  return {
    held: {
      stage: "closest-commit",
      head: closest.oid,
      tree,
      basis: closest.basis,
      applied: [],
      missingChangeSets: manifest.patches.map((l) => changeSetOf(l, "no-base")),
      paths: [...new Set([...readable.paths, ...differing])].sort(),
      // The files that differ between the closest commit and the recorded HEAD are unknown.
      pathsComplete: false,
      cause: headFailure,
    },
    commitsFrom: history.fetched.has(closest.oid) ? "remote" : "object-store",
    headFailure,
  };
}

/** Rung (a), and the exact restore it is when every change set applies. */
async function atRecordedHead(c: BuildContext): Promise<Held> {
  const { manifest, opts, clock } = c;
  const start = manifest.head ?? EMPTY_TREE[manifest.objectFormat];
  opts.onProgress?.({ phase: "reconstruct", message: `applying ${manifest.patches.length} change set(s)` });
  const chain = await clock.time("reconstruct", () =>
    applyChain(c.git, {
      indexFile: c.indexFile,
      start,
      links: manifest.patches,
      blobs: opts.blobs,
      scratch: c.scratch,
      signal: opts.signal,
    }),
  );
  let cause = chain.failure?.error ?? null;
  if (!cause && chain.tree !== manifest.tree) {
    // Only possible with no patches: HEAD's own tree must be the recorded one.
    cause = new StrataError("TREE_MISMATCH", `HEAD's tree ${chain.tree} is not the recorded tree ${manifest.tree}.`, {
      data: { expected: manifest.tree, actual: chain.tree },
    });
  }
  if (cause && opts.exactOnly) throw cause;
  const verbatim = await materialize(c, chain.tree);
  const differing = await verifyFiles(c, chain.tree, verbatim);
  if (verbatim.failure) {
    if (opts.exactOnly) throw verbatim.failure;
    cause ??= verbatim.failure;
  }
  if (differing.length > 0) {
    const mismatch = await filesMismatch(c, differing);
    if (opts.exactOnly) throw mismatch;
    cause ??= mismatch;
  }
  const stage: RestoreStage = chain.failure ? (chain.applied.length > 0 ? "changes" : "head") : "exact";
  return {
    stage,
    head: manifest.head,
    tree: chain.tree,
    basis: "recorded-head",
    applied: chain.applied,
    missingChangeSets: chain.failure?.missing ?? [],
    paths: [...new Set([...chain.paths, ...differing])].sort(),
    pathsComplete: chain.pathsComplete,
    cause,
  };
}

/** Writes every file of the index, then the files the capture recorded verbatim, then LFS content. */
async function materialize(c: BuildContext, tree: string): Promise<VerbatimOutcome> {
  c.opts.onProgress?.({ phase: "materialize", message: "writing files" });
  return c.clock.time("materialize", async () => {
    await c.git.run(checkoutIndex(c.indexFile));
    const verbatim = await writeVerbatimFiles(c.git, {
      dir: c.git.cwd,
      indexFile: c.indexFile,
      tree,
      files: c.manifest.verbatim ?? [],
      blobs: c.opts.blobs,
      scratch: c.scratch,
      objectFormat: c.manifest.objectFormat,
      signal: c.opts.signal,
    });
    // Only a repository whose attributes name the LFS filter can hold LFS files.
    if (c.manifest.filters.drivers.some((d) => d.name === "lfs")) {
      c.opts.onProgress?.({ phase: "materialize", message: "getting Git LFS objects" });
      const warning = await restoreLfsFiles(c.git, {
        gitDir: join(c.git.cwd, ".git"),
        indexFile: c.indexFile,
        tree,
        stored: c.manifest.lfsObjects ?? [],
        blobs: c.opts.blobs,
        scratch: c.scratch,
        remotes: fetchableRemotes(c.manifest),
        fetchTimeoutMs: c.opts.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS,
        sshCommand: () => c.history.ssh(),
        signal: c.opts.signal,
      });
      if (warning) c.warnings.push(warning);
    }
    if (c.packing) {
      c.packing.done = packLooseObjects(c.git, join(c.git.cwd, ".git"));
      c.packing.done.catch(() => undefined);
    }
    return verbatim;
  });
}

/**
 * TREE_MISMATCH for files that do not re-read as their blobs, telling the repository's own
 * attributes (a blob they do not read back, in a snapshot that did not record its bytes) from
 * this host's settings.
 */
async function filesMismatch(c: BuildContext, differing: readonly string[]): Promise<StrataError> {
  const recorded = new Set((c.manifest.verbatim ?? []).map((f) => f.path));
  const converted = await filesNotReadBack(
    c.git,
    c.indexFile,
    differing.filter((p) => !recorded.has(p)),
  );
  const paths = differing.slice(0, 100);
  if (converted.length === 0) {
    return new StrataError(
      "TREE_MISMATCH",
      `${differing.length} file(s) written on this host differ from their recorded content.`,
      {
        hint: "This host's checkout filters (core.autocrlf, core.eol, filter drivers) change what is written.",
        data: { paths },
      },
    );
  }
  const attributes = [...new Set(converted.map((f) => f.attributes))].join(", ");
  const named = converted.slice(0, 5).map((f) => f.path);
  return new StrataError(
    "TREE_MISMATCH",
    `${differing.length} file(s) written on this host differ from their recorded content; ${converted.length} of them ` +
      `(${named.join(", ")}) because the repository's own attributes (${attributes}) change their recorded content ` +
      `whenever git reads it back, on every host.`,
    {
      hint: "The snapshot did not record those files' bytes: capture the checkout again, then restore the new snapshot.",
      data: { paths, convertedByRepository: converted.slice(0, 100).map((f) => f.path) },
    },
  );
}

/**
 * Re-reads every file of the index's worktree, through this host's filters, and returns the
 * paths whose content differs from their blobs. A refresh alone trusts an entry whose stat data
 * matches, and checkout recorded the stat data of each file it wrote, also where this host's
 * filters changed the bytes on the way out: git re-reads only entries no older than the index
 * file ("racily clean"). Dating the index at the first second of 1970 makes every entry so.
 */
export async function filesDifferingFromBlobs(git: GitRunner, indexFile: string): Promise<string[]> {
  await utimes(indexFile, 1, 1);
  return git.run(filesDifferingFromIndex(indexFile));
}

/**
 * Re-reads every file written and returns the paths whose content differs from the index. A
 * file written verbatim counts by its bytes (checked as it was written): the repository's
 * attributes may not read it back as its blob, as they did not on the capturing machine.
 */
async function verifyFiles(c: BuildContext, tree: string, verbatim: VerbatimOutcome): Promise<string[]> {
  c.opts.onProgress?.({ phase: "verify", message: "checking every file against its recorded blob" });
  return c.clock.time("verify", async () => {
    const reread = await filesDifferingFromBlobs(c.git, c.indexFile);
    const differing = [...new Set([...reread.filter((p) => !verbatim.verified.has(p)), ...verbatim.failed])].sort();
    // The index the files were checked against must still be the tree they were written from.
    const indexTree = await c.git.run(writeTree(c.indexFile));
    if (indexTree !== tree) {
      throw new StrataError("TREE_MISMATCH", `The restored index holds tree ${indexTree}, not ${tree}.`, {
        data: { expected: tree, actual: indexTree },
      });
    }
    return differing;
  });
}

async function closestCommit(
  history: RestoreHistory,
  manifest: CaptureManifest,
  candidates: readonly string[],
): Promise<{ oid: string; basis: RestoreBasis } | null> {
  for (const base of await history.pushedBase()) {
    if (await history.fetchCommit(base)) return { oid: base, basis: "pushed-base" };
  }
  const length = manifest.objectFormat === "sha1" ? 40 : 64;
  for (const candidate of candidates) {
    if (!isObjectId(candidate) || candidate.length !== length || candidate === manifest.head) continue;
    if (await history.fetchCommit(candidate)) return { oid: candidate, basis: "earlier-snapshot" };
  }
  const tip = await history.fetchBranchTip(manifest.branch);
  return tip ? { oid: tip, basis: "branch-tip" } : null;
}

async function readablePatchPaths(c: BuildContext, links: readonly PatchLink[]): Promise<{ paths: string[] }> {
  const paths = new Set<string>();
  for (const link of links) {
    const file = join(c.scratch, `${link.uuid}.paths.patch`);
    try {
      await copyBlobToFile(c.opts.blobs, link.digest, file, { size: link.size, signal: c.opts.signal });
      for (const p of pathsInPatch(await readFile(file))) paths.add(p);
    } catch (error) {
      if (!isStrataError(error)) throw error;
    } finally {
      await rm(file, { force: true });
    }
  }
  return { paths: [...paths] };
}

function changeSetOf(link: PatchLink, reason: MissingChangeSet["reason"]): MissingChangeSet {
  return { uuid: link.uuid, kind: link.kind, digest: link.digest, size: link.size, reason };
}

/** This host's shared store of the snapshot's repository, opened (created on first use), or null. */
async function sharedStoreOf(manifest: CaptureManifest, opts: RestoreOptions): Promise<HostObjectStore | null> {
  if (!opts.objectStores) return null;
  const remotes = fetchableRemotes(manifest).map((r) => ({ name: r.name, url: r.fetchUrl }));
  const dir = hostObjectStorePath(resolve(opts.objectStores), remotes, manifest.objectFormat);
  if (!dir) return null;
  return openHostObjectStore(dir, manifest.objectFormat, {
    gitPath: opts.gitPath,
    baseEnv: opts.baseEnv,
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    signal: opts.signal,
  });
}

/** Borrows host object stores through alternates (objects are read there, never copied). */
async function borrowObjects(gitDir: string, stores: readonly string[]): Promise<void> {
  const lines: string[] = [];
  for (const store of stores) {
    const root = resolve(store);
    const candidates = [join(root, "objects"), join(root, ".git", "objects")];
    const objects = candidates.find((dir) => existsSync(join(dir, "info")) || existsSync(join(dir, "pack")));
    if (!objects || !(await stat(objects)).isDirectory()) {
      throw new StrataError("INVALID_INPUT", `${JSON.stringify(store)} is not a git repository's object store.`, {
        hint: "Pass a repository (or a git directory) on this host, or no object store at all.",
      });
    }
    lines.push(`${objects}\n`);
  }
  await writeFile(join(gitDir, "objects", "info", "alternates"), lines.join(""));
}

/** HEAD and the branch as recorded, the recorded remotes, and refs for commits known pushed. */
export async function finalizeRepository(
  git: GitRunner,
  snapshotId: string,
  manifest: CaptureManifest,
  held: Pick<Held, "stage" | "head">,
  history: RestoreHistory,
  store: HostObjectStore | null = null,
): Promise<void> {
  // Which snapshot this worktree was restored from, and how far: a later capture here can name
  // the original in degradedFrom when the restore was partial.
  await git.run(setConfig("strata.restoredFrom", snapshotId));
  await git.run(setConfig("strata.restoreStage", held.stage));
  if (held.head) {
    if (manifest.branch) {
      await git.run(setRef(`refs/heads/${manifest.branch}`, held.head));
      await git.run(headToBranch(manifest.branch));
    } else {
      await git.run(setRef("HEAD", held.head));
    }
  } else if (manifest.branch) {
    await git.run(headToBranch(manifest.branch));
  }
  for (const remote of manifest.remotes) {
    await git.run(setConfig(`remote.${remote.name}.url`, remote.url));
    await git.run(setConfig(`remote.${remote.name}.fetch`, `+refs/heads/*:refs/remotes/${remote.name}/*`));
  }
  // A capture in the restored worktree bundles only what is really unpushed.
  const pushed = new Set<string>(await history.pushedBase());
  const everythingPushed =
    manifest.bundle === null &&
    !manifest.omitted.some((o) => BUNDLE_OMISSIONS.has(o.reason)) &&
    manifest.remotes.length > 0;
  if (everythingPushed && held.head === manifest.head && held.head) pushed.add(held.head);
  if (store) {
    await shareWithStore(git, store, manifest, pushed, history);
    return;
  }
  if (pushed.size === 0) return;
  const present = await git.run(existingObjects([...pushed]));
  for (const oid of pushed) {
    if (present.has(oid) && !history.fetched.has(oid)) await git.run(setRef(`${PUSHED_REF_PREFIX}${oid}`, oid));
  }
}

/**
 * Records in the shared store what this restore learnt was pushed (the pushed base, fetched
 * commits and branch tips; the base under `<remote>/<branch>` too, so the degraded ladder finds
 * it when the remote is gone), then gives the restored repository its own copy of every commit
 * the store knows pushed (refs are not borrowed through alternates) and the store's shallow cut.
 */
async function shareWithStore(
  git: GitRunner,
  store: HostObjectStore,
  manifest: CaptureManifest,
  pushed: ReadonlySet<string>,
  history: RestoreHistory,
): Promise<void> {
  const tips = new Map(history.fetchedTips);
  const base = [...pushed];
  const from = base.length === 1 && base[0] ? history.fetchedFrom.get(base[0]) : undefined;
  if (from && base[0]) tips.set(pushedTipRef(from, manifest.branch), base[0]);
  await recordPushedInStore(store, [...new Set([...pushed, ...history.fetched])], tips);
  const known = await pushedCommitsInStore(store);
  const present = await git.run(existingObjects([...new Set([...known, ...pushed])]));
  const refs = new Map([...present].map((oid) => [`${PUSHED_REF_PREFIX}${oid}`, oid]));
  if (refs.size > 0) {
    await git.run(setRefs(refs));
    await git.run(packRefs());
  }
  await adoptShallowCut(join(git.cwd, ".git"), store);
}

/** Recorded commits (HEAD, unpushed and left-out ones) the restored repository does not hold. */
async function commitsNotHeld(git: GitRunner, manifest: CaptureManifest): Promise<string[]> {
  const recorded = recordedCommits(manifest);
  if (recorded.length === 0) return [];
  const present = await git.run(existingObjects(recorded));
  return recorded.filter((c) => !present.has(c));
}

function recordedCommits(manifest: CaptureManifest): string[] {
  const commits = new Set<string>();
  if (manifest.head) commits.add(manifest.head);
  for (const c of manifest.bundle?.commits ?? []) commits.add(c);
  for (const o of manifest.omitted) if (BUNDLE_OMISSIONS.has(o.reason)) for (const c of o.commits ?? []) commits.add(c);
  return [...commits];
}

const INFORMATIONAL_OMISSIONS = new Set(["ignored"]);

export function captureWarnings(manifest: CaptureManifest): RestoreWarning[] {
  const warnings: RestoreWarning[] = [];
  const left = manifest.omitted.filter(
    (o) => !INFORMATIONAL_OMISSIONS.has(o.reason) && !BUNDLE_OMISSIONS.has(o.reason),
  );
  if (left.length > 0) {
    warnings.push({
      kind: "omitted-content",
      message: `The capture left ${left.length} path(s) out (secrets, snapshot-ignore, size limits, nested repositories…); they are not in the worktree.`,
      paths: left.slice(0, 1000).map((o) => `${o.path} (${o.reason})`),
    });
  }
  const f = manifest.filters;
  // Git LFS is not this host's conversion: the restore fetches the objects itself and names the
  // files it could not (`lfs-objects-unavailable`).
  const drivers = f.drivers.filter((d) => d.name !== "lfs");
  if (f.autocrlf || f.eol || drivers.length > 0) {
    const settings = [
      f.autocrlf ? `core.autocrlf=${f.autocrlf}` : null,
      f.eol ? `core.eol=${f.eol}` : null,
      ...drivers.map((d) => `filter driver ${d.name}`),
    ].filter(Boolean);
    warnings.push({
      kind: "filters",
      message: `The capturing checkout used ${settings.join(", ")}; files are restored as git stores them, converted by this host's own settings.`,
    });
  }
  return warnings;
}

function stringsIn(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function digestsOf(error: StrataError | null): string[] {
  const digest = error?.data?.digest;
  return typeof digest === "string" ? [digest] : [];
}

function resultOf(
  snapshotId: string,
  manifest: CaptureManifest,
  held: Held,
  missingCommits: string[],
  missingBase: readonly string[],
  warnings: RestoreWarning[],
): RestoreResult {
  const exact = held.stage === "exact" && held.cause === null;
  const cause = held.cause && isDegradableCause(held.cause.code) ? held.cause.code : null;
  return {
    version: 1,
    status: exact ? "restored" : "degraded",
    snapshotId,
    recorded: { head: manifest.head, tree: manifest.tree, branch: manifest.branch },
    holds: {
      stage: held.stage,
      head: held.head,
      tree: held.tree,
      branch: manifest.branch,
      basis: held.basis,
      appliedChangeSets: held.applied.map((l) => l.uuid),
    },
    missing: {
      commits: exact ? [] : missingCommits,
      changeSets: held.missingChangeSets,
      paths: held.paths,
      pathsComplete: held.pathsComplete,
      cause,
      causeMessage: held.cause?.message.slice(0, 2000) ?? null,
      nextStep: cause
        ? nextStepFor(cause, {
            head: manifest.head,
            commits: missingCommits,
            digests: digestsOf(held.cause),
            paths: held.paths,
            bundleLost: isBundleFailure(manifest, held.cause),
            missingBase,
            convertedByRepository: stringsIn(held.cause?.data?.convertedByRepository),
          })
        : null,
    },
    warnings,
  };
}

function isBundleFailure(manifest: CaptureManifest, error: StrataError | null): boolean {
  return Boolean(manifest.bundle && error?.data?.digest === manifest.bundle.digest);
}

function nothingRestored(
  snapshotId: string,
  manifest: CaptureManifest,
  headFailure: StrataError | null,
  missingBase: readonly string[],
  warnings: RestoreWarning[],
): RestoreResult {
  const failure =
    headFailure ??
    new StrataError("COMMITS_UNAVAILABLE", "No commit of this checkout can be had on this host.", {
      data: { reason: "not-fetched" },
    });
  const cause = isDegradableCause(failure.code) ? failure.code : "COMMITS_UNAVAILABLE";
  const commits = missingBase.length > 0 ? [...missingBase] : recordedCommits(manifest);
  return {
    version: 1,
    status: "unrestored",
    snapshotId,
    recorded: { head: manifest.head, tree: manifest.tree, branch: manifest.branch },
    holds: { stage: "nothing", head: null, tree: null, branch: null, basis: null, appliedChangeSets: [] },
    missing: {
      commits,
      changeSets: manifest.patches.map((l) => changeSetOf(l, "no-base")),
      paths: [],
      pathsComplete: false,
      cause,
      causeMessage: failure.message.slice(0, 2000),
      nextStep: nextStepFor(cause, {
        head: manifest.head,
        commits,
        digests: digestsOf(failure),
        paths: [],
        bundleLost: isBundleFailure(manifest, failure),
        missingBase,
      }),
    },
    warnings,
  };
}
