// capture(dir): records the exact state of the git checkout that contains `dir` without
// changing it. The tree is built in a private index; the user's index, HEAD, branches and files
// are only read. The one write into the repository is the snapshot ref (see snapshot-ref.ts).
//
// One `git status` pass over the private index tells what changed since the last capture;
// only those paths are read again. When HEAD, the tree and the set of left-out files are all as
// the previous capture recorded them, the result is a reference to that capture.
import { createHash } from "node:crypto";
import { lstatSync, statSync } from "node:fs";
import { lstat } from "node:fs/promises";
import { join } from "node:path";
import {
  captureManifestSchema,
  omittedFilesDigest,
  sortOmitted,
  verbatimFilesDigest,
  type CaptureManifest,
  type OmittedEntry,
} from "../../domain/capture-manifest.ts";
import { StrataError, isStrataError } from "../../domain/errors.ts";
import { bundleUnpushed, findUnpushed, type UnpushedHistory } from "./bundle.ts";
import { keptLfsObjects } from "./capture-lfs.ts";
import { configKey, unpushedKey } from "./capture-memo.ts";
import {
  attributeFilesIn,
  configMatching,
  emptyTree,
  repositoryLayout,
  setIndexEntries,
  treeEntries,
  treeOf,
  updateIndexFromWorktree,
  writeTree,
  type IndexEntry,
  type RepositoryLayout,
} from "../../git/commands.ts";
import { discoverRepository, resolveCheckoutDirectory } from "../../git/discover.ts";
import { environmentDigest } from "./env-hash.ts";
import { FILTER_CONFIG_PATTERN, readAttributeFiles, recordedFilters } from "./filters.ts";
import { OMISSION_DEFAULTS, pathsToMeasure, planIndexChanges } from "./omitted.ts";
import { completeChain, makePatch, type PendingPatch } from "./patch-chain.ts";
import { openPrivateIndex, type PrivateIndex } from "./private-index.ts";
import { recordedRemotes } from "../../git/remotes.ts";
import { createGitRunner, unreadablePath, type GitRunner } from "../../git/runner.ts";
import { snapshotIgnoredPaths } from "./snapshot-ignore.ts";
import {
  defaultCheckoutName,
  snapshotRefName,
  snapshotRefPointsAt,
  snapshotWriter,
  type SnapshotWriter,
} from "./snapshot-ref.ts";
import { statusCommand, type StatusEntry, type StatusReport } from "../../git/status.ts";
import {
  attributesKey,
  findVerbatimFiles,
  hostAttributeTexts,
  readVerbatimBytes,
  type VerbatimCandidate,
} from "./verbatim-files.ts";
import { SUBMODULE_CHECK_MS, submoduleOmissions } from "./submodules.ts";

export interface CaptureOptions {
  /** The last capture of this checkout that was published; the base of "unchanged" and of patches. */
  previous?: CaptureManifest | null;
  includeUntracked?: boolean;
  maxFileBytes?: number;
  maxSnapshotBytes?: number;
  /** Links in a patch chain before it restarts from HEAD. */
  fullEvery?: number;
  /** Where private indexes live; `<git-dir>/strata` by default. */
  cacheDir?: string;
  /** Keep each capture as a commit under refs/strata/snapshots/<work-context>/<checkout>. */
  snapshotRef?: { workContext: string; checkout?: string } | null;
  /** The snapshot this checkout was restored from only partly, if so. */
  degradedFrom?: string | null;
  gitPath?: string;
  baseEnv?: Readonly<Record<string, string | undefined>>;
  timeoutMs?: number;
  signal?: AbortSignal;
  submoduleCheckMs?: number;
  now?: () => Date;
}

const CAPTURE_DEFAULTS = { ...OMISSION_DEFAULTS, fullEvery: 20 } as const;

export type CaptureResult =
  | {
      outcome: "captured";
      manifest: CaptureManifest;
      /**
       * New content by sha256: the new patch, the files it carries whole, and the bundle when it
       * changed. Not stored here.
       */
      artifacts: Map<string, Buffer>;
    }
  | { outcome: "unchanged"; manifest: CaptureManifest }
  | { outcome: "unavailable"; error: StrataError };

/** Captures the checkout containing `dir`. Never throws: failures resolve as `unavailable`. */
export async function captureCheckout(dir: string, options: CaptureOptions = {}): Promise<CaptureResult> {
  try {
    return await captureOrThrow(dir, options);
  } catch (error) {
    const typed = isStrataError(error)
      ? error
      : new StrataError("GIT_FAILED", `Capture failed: ${(error as Error).message}`, { cause: error });
    return { outcome: "unavailable", error: typed };
  }
}

async function captureOrThrow(dir: string, options: CaptureOptions): Promise<CaptureResult> {
  const s = { ...CAPTURE_DEFAULTS, ...definedOnly(options) };
  const previous = options.previous ?? null;
  const now = options.now ?? (() => new Date());
  const start = await resolveCheckoutDirectory(dir);
  const runner = createGitRunner({
    cwd: start,
    gitPath: options.gitPath,
    baseEnv: options.baseEnv,
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  });
  const layout = (await discoverRepository(start)) ?? (await runner.run(repositoryLayout()));
  const git = runner.at(layout.root);
  const refName = options.snapshotRef
    ? snapshotRefName(options.snapshotRef.workContext, options.snapshotRef.checkout ?? defaultCheckoutName(layout.root))
    : null;

  const privateIndex = await openPrivateIndex(git, layout, {
    cacheDir: options.cacheDir,
    includeUntracked: s.includeUntracked,
  });
  const snapshot = refName ? snapshotWriter(git, refName) : null;
  try {
    const submodules = submoduleOmissions(git, layout.root, options.submoduleCheckMs ?? SUBMODULE_CHECK_MS);
    // Settle the submodule check even if building the tree fails first.
    submodules.catch(() => undefined);
    const maxBytes = s.maxSnapshotBytes;
    // A patch may be larger than the files it carries (binary deltas, context lines).
    const patchTo = async (head: string | null, to: { tree: string } | { indexFile: string }) =>
      makePatch(git, {
        previous,
        head,
        headBase: head ?? (await git.run(emptyTree())),
        fullEvery: s.fullEvery,
        maxBytes: maxBytes * 4,
        to,
      });
    // Once the index changes a new snapshot commit is likely: its git processes start meanwhile.
    const built = await buildTree(git, layout, privateIndex, s, patchTo, () => snapshot?.prepare());
    const omitted = sortOmitted([...built.omitted, ...(await submodules)]);
    const { head, branch, tree } = built;

    const configuration = configPairs(git, layout, privateIndex);
    let attributeTexts: Promise<string[]> | null = null;
    const treeAttributeTexts = () =>
      (attributeTexts ??= attributeFiles(git, privateIndex, built.attributesChanged).then((paths) =>
        readAttributeFiles(layout.root, layout.commonDir, paths),
      ));
    const verbatim = verbatimCandidates(
      git,
      layout,
      privateIndex,
      tree,
      configuration,
      treeAttributeTexts,
      maxBytes * 4,
    );
    verbatim.catch(() => undefined);

    if (
      previous &&
      previous.head === head &&
      previous.tree === tree &&
      omittedFilesDigest(previous.omitted) === omittedFilesDigest(omitted) &&
      verbatimFilesDigest(previous.verbatim) === verbatimFilesDigest(await verbatim)
    ) {
      await built.patch?.catch(() => undefined);
      if (snapshot && refName) await keepSnapshotRef(git, layout, snapshot, refName, previous, tree, head, now());
      await privateIndex.save(tree);
      return { outcome: "unchanged", manifest: previous };
    }

    const verbatimFiles = verbatim.then((files) => verbatimBytes(git, layout, privateIndex, files, omitted, s));
    const unpushed = unpushedHistory(git, layout, privateIndex, head).then((history) =>
      bundleUnpushed(git, { unpushed: history, previous, maxBytes }),
    );
    // The state for the next capture is complete once these three have remembered their
    // answers: it is saved while the patch and the snapshot commit finish.
    const saved = Promise.all([configuration, treeAttributeTexts(), unpushed, verbatim]).then(() =>
      privateIndex.save(tree),
    );
    const lfsObjects = treeAttributeTexts().then((texts) =>
      keptLfsObjects(git, {
        root: layout.root,
        commonDir: layout.commonDir,
        head,
        tree,
        attributeTexts: texts,
        previous,
      }),
    );
    const [snapshotCommit, config, attributes, environment, bundle, pending, written, lfs] = await Promise.all([
      snapshot ? snapshot.write({ tree, head, now: now() }) : Promise.resolve(null),
      configuration,
      treeAttributeTexts(),
      environmentDigest(layout.root),
      unpushed,
      built.patch ?? patchTo(head, { tree }),
      verbatimFiles,
      lfsObjects,
      saved,
    ]);
    const chain = completeChain(pending, tree);

    const artifacts = new Map<string, Buffer>();
    for (const artifact of chain.artifacts) artifacts.set(artifact.digest, artifact.bytes);
    if (bundle.bundle && bundle.bytes) artifacts.set(bundle.bundle.digest, bundle.bytes);
    for (const [digest, bytes] of written.artifacts) artifacts.set(digest, bytes);
    for (const [digest, bytes] of lfs.artifacts) artifacts.set(digest, bytes);

    const manifest = captureManifestSchema.parse({
      version: 1,
      root: layout.root,
      objectFormat: layout.objectFormat,
      remotes: recordedRemotes(config),
      branch,
      head,
      tree,
      patches: chain.patches,
      bundle: bundle.bundle,
      omitted: sortOmitted([...omitted, ...bundle.omitted]),
      ...(written.entries.length > 0 ? { verbatim: written.entries } : {}),
      ...(lfs.entries.length > 0 ? { lfsObjects: lfs.entries } : {}),
      filters: recordedFilters(config, attributes),
      envHash: environment.envHash,
      envFiles: environment.envFiles,
      snapshotRef: snapshotCommit,
      degradedFrom: options.degradedFrom ?? null,
      capturedAt: now().toISOString(),
    } satisfies CaptureManifest);
    return { outcome: "captured", manifest, artifacts };
  } finally {
    snapshot?.cancel();
    await privateIndex.release();
  }
}

function definedOnly(options: CaptureOptions) {
  const out: Partial<Record<keyof typeof CAPTURE_DEFAULTS, number | boolean>> = {};
  for (const key of Object.keys(CAPTURE_DEFAULTS) as Array<keyof typeof CAPTURE_DEFAULTS>) {
    if (options[key] !== undefined) out[key] = options[key];
  }
  return out as Partial<typeof CAPTURE_DEFAULTS>;
}

async function keepSnapshotRef(
  git: GitRunner,
  layout: RepositoryLayout,
  snapshot: SnapshotWriter,
  ref: string,
  previous: CaptureManifest,
  tree: string,
  head: string | null,
  now: Date,
): Promise<void> {
  const recorded = previous.snapshotRef;
  if (recorded?.name === ref && (await snapshotRefPointsAt(git, layout.commonDir, ref, recorded.commit))) return;
  await snapshot.write({ tree, head, now });
}

// --- what earlier captures already know ------------------------------------------------------------

const CONFIG_PATTERN = `^(remote\\..+\\.url|core\\.attributesfile|${FILTER_CONFIG_PATTERN.slice(2, -2)})$`;

async function configPairs(git: GitRunner, layout: RepositoryLayout, privateIndex: PrivateIndex) {
  const files = await configKey(layout);
  // The pattern is part of the key: pairs read for another pattern are not reused.
  const key = files === null ? null : `${CONFIG_PATTERN}\n${files}`;
  const known = privateIndex.state.memo.config;
  if (key !== null && known?.key === key) return known.pairs;
  const pairs = await git.run(configMatching(CONFIG_PATTERN));
  if (key !== null) privateIndex.remember({ config: { key, pairs } });
  return pairs;
}

async function attributeFiles(git: GitRunner, privateIndex: PrivateIndex, changed: boolean) {
  const known = privateIndex.state.memo.attributeFiles;
  if (known && !changed) return known;
  const paths = await git.run(attributeFilesIn(privateIndex.indexFile));
  privateIndex.remember({ attributeFiles: paths });
  return paths;
}

/** Files of the tree whose blob a checkout does not read back (verbatim-files.ts). */
async function verbatimCandidates(
  git: GitRunner,
  layout: RepositoryLayout,
  privateIndex: PrivateIndex,
  tree: string,
  configuration: Promise<Array<[string, string]>>,
  treeAttributeTexts: () => Promise<string[]>,
  maxBytes: number,
): Promise<VerbatimCandidate[]> {
  const host = await hostAttributeTexts(layout, await configuration);
  const found = await findVerbatimFiles(git, {
    indexFile: privateIndex.indexFile,
    tree,
    key: attributesKey(host),
    known: privateIndex.state.memo.verbatim,
    attributeTexts: async () => [...(await treeAttributeTexts()), ...host],
    maxBytes,
  });
  privateIndex.remember({ verbatim: found });
  return found.files;
}

/** Their manifest entries and stored bytes; never the bytes of a file the capture left out. */
async function verbatimBytes(
  git: GitRunner,
  layout: RepositoryLayout,
  privateIndex: PrivateIndex,
  files: VerbatimCandidate[],
  omitted: readonly OmittedEntry[],
  s: Settings,
) {
  if (files.length === 0) return { entries: [], artifacts: new Map<string, Buffer>() };
  const paths = files.map((f) => f.path);
  const ignored = await snapshotIgnoredPaths(git, layout.root, privateIndex.dir, privateIndex.state.ignoreCase, paths);
  const leftOut = new Set([...omitted.map((o) => o.path), ...ignored]);
  return readVerbatimBytes(layout.root, files, {
    leftOut,
    maxFileBytes: s.maxFileBytes,
    objectFormat: layout.objectFormat,
  });
}

async function unpushedHistory(
  git: GitRunner,
  layout: RepositoryLayout,
  privateIndex: PrivateIndex,
  head: string | null,
): Promise<UnpushedHistory> {
  if (!head) return findUnpushed(git, head);
  const key = await unpushedKey(layout, head);
  const known = privateIndex.state.memo.unpushed;
  if (known?.key === key) return { commits: known.commits, denied: new Map(known.denied) };
  const found = await findUnpushed(git, head);
  privateIndex.remember({ unpushed: { key, commits: found.commits, denied: [...found.denied] } });
  return found;
}

// --- the tree ------------------------------------------------------------------------------------

interface BuiltTree {
  head: string | null;
  branch: string | null;
  tree: string;
  omitted: OmittedEntry[];
  /** Whether a .gitattributes file changed (so the list of them must be read again). */
  attributesChanged: boolean;
  /** The patch to the new tree, started once the tree was written (when the index changed). */
  patch: Promise<PendingPatch> | null;
}

type PatchTo = (head: string | null, to: { indexFile: string }) => Promise<PendingPatch>;

/** Called once, as the private index starts to change. */
type OnIndexChange = () => void;

type Settings = typeof CAPTURE_DEFAULTS & Partial<typeof CAPTURE_DEFAULTS>;

/** Failures that a fresh private index may cure (a damaged file, objects pruned under it). */
function mayBeDamage(error: unknown): boolean {
  return isStrataError(error, "GIT_FAILED");
}

async function buildTree(
  git: GitRunner,
  layout: RepositoryLayout,
  privateIndex: PrivateIndex,
  s: Settings,
  patchTo: PatchTo,
  onIndexChange: OnIndexChange,
): Promise<BuiltTree> {
  try {
    return await buildTreeOnce(git, layout, privateIndex, s, patchTo, onIndexChange);
  } catch (error) {
    if (privateIndex.seeded || !mayBeDamage(error)) throw error;
    await privateIndex.reseed();
    return buildTreeOnce(git, layout, privateIndex, s, patchTo, onIndexChange);
  }
}

function privateStatus(privateIndex: PrivateIndex) {
  return statusCommand({
    untracked: "all",
    ignored: true,
    ignoreSubmodules: "dirty",
    indexFile: privateIndex.indexFile,
    // See PrivateIndexState.racyEntries: otherwise status may write refreshed stat data back.
    writeRefreshedIndex: !privateIndex.state.racyEntries,
  });
}

function isIgnoreFile(entry: StatusEntry): boolean {
  if (entry.kind === "ignored") return false;
  return entry.path === ".gitignore" || entry.path.endsWith("/.gitignore");
}

async function statSignature(path: string): Promise<string> {
  return lstat(path, { bigint: true }).then(
    (st) => `${st.ino}:${st.size}:${st.mtimeNs}`,
    () => "missing",
  );
}

/** A digest of the .gitignore files that differ from HEAD or from the private index. */
async function ignoreFilesSignature(root: string, status: StatusReport): Promise<string> {
  const files = status.entries.filter(isIgnoreFile).map((e) => e.path);
  const signatures = await Promise.all(files.map((f) => statSignature(join(root, f))));
  return createHash("sha256")
    .update(JSON.stringify([files, signatures]))
    .digest("hex");
}

/** Paths lstat-ed between turns of the event loop: synchronous calls cost far less per path. */
const MEASURE_BATCH = 256;

interface Measured {
  /** Size of each path (lstat; a symlink counts its target text); null when missing. */
  sizes: Map<string, number | null>;
  /** Modification time of each present path, in milliseconds. */
  mtimes: Map<string, number>;
}

async function measure(root: string, paths: readonly string[]): Promise<Measured> {
  const sizes = new Map<string, number | null>();
  const mtimes = new Map<string, number>();
  for (let i = 0; i < paths.length; i += MEASURE_BATCH) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const path of paths.slice(i, i + MEASURE_BATCH)) {
      try {
        const st = lstatSync(join(root, path), { throwIfNoEntry: false });
        sizes.set(path, st ? st.size : null);
        if (st) mtimes.set(path, st.mtimeMs);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOTDIR") sizes.set(path, null);
        else throw unreadablePath(path, (error as Error).message);
      }
    }
  }
  return { sizes, mtimes };
}

/**
 * Whether the index, as just written, holds entries of these files that are racily clean:
 * modified in the same second as the index file (git compares whole seconds). A file modified
 * again after it was measured only makes this false where git finds it racy, never the reverse.
 */
function leftRacyEntries(indexFile: string, paths: readonly string[], mtimes: ReadonlyMap<string, number>): boolean {
  const written = statSync(indexFile, { throwIfNoEntry: false });
  if (!written) return false;
  const second = Math.floor(written.mtimeMs / 1000);
  return paths.some((path) => Math.floor((mtimes.get(path) ?? 0) / 1000) >= second);
}

async function nestedRepositories(root: string, entries: readonly StatusEntry[]): Promise<Set<string>> {
  const dirs = entries.filter((e) => e.kind === "untracked" && e.path.endsWith("/")).map((e) => e.path);
  const found = await Promise.all(
    dirs.map((d) =>
      lstat(join(root, d, ".git")).then(
        () => d,
        () => null,
      ),
    ),
  );
  return new Set(found.filter((d): d is string => d !== null));
}

async function buildTreeOnce(
  git: GitRunner,
  layout: RepositoryLayout,
  privateIndex: PrivateIndex,
  s: Settings,
  patchTo: PatchTo,
  onIndexChange: OnIndexChange,
): Promise<BuiltTree> {
  let status = await git.run(privateStatus(privateIndex));
  let ignoreSignature = await ignoreFilesSignature(layout.root, status);
  // A changed .gitignore may now ignore files an earlier capture added: start again from the
  // user's index, which knows which files are really tracked.
  if (!privateIndex.seeded && ignoreSignature !== privateIndex.state.ignoreFilesSignature) {
    await privateIndex.reseed();
    status = await git.run(privateStatus(privateIndex));
    ignoreSignature = await ignoreFilesSignature(layout.root, status);
  }
  const [unreadable] = status.unreadable;
  if (unreadable !== undefined) throw unreadablePath(unreadable, "the directory cannot be opened");

  const measured = pathsToMeasure(status.entries);
  const [{ sizes, mtimes }, snapshotIgnored, nested] = await Promise.all([
    measure(layout.root, measured),
    snapshotIgnoredPaths(git, layout.root, privateIndex.dir, privateIndex.state.ignoreCase, measured),
    nestedRepositories(layout.root, status.entries),
  ]);
  const plan = planIndexChanges(status.entries, {
    includeUntracked: s.includeUntracked,
    maxFileBytes: s.maxFileBytes,
    maxSnapshotBytes: s.maxSnapshotBytes,
    snapshotIgnored,
    nestedRepositories: nested,
    sizes,
  });

  const reset: IndexEntry[] = [...plan.reset];
  if (plan.resetToHeadLookup.length > 0) {
    // Unmerged paths: drop every stage, then put HEAD's entry back where HEAD has one.
    const zero = "0".repeat(layout.objectFormat === "sha256" ? 64 : 40);
    for (const path of plan.resetToHeadLookup) reset.push({ mode: "0", oid: zero, path });
    if (status.head) {
      const headTree = await git.run(treeOf(status.head));
      reset.push(...(await git.run(treeEntries(headTree, plan.resetToHeadLookup))));
    }
  }
  // Starting git blocks this process for a few milliseconds, so the index update starts first.
  let changing = false;
  const changingIndex = <T>(running: Promise<T>) => {
    if (!changing) onIndexChange();
    changing = true;
    return running;
  };
  if (reset.length > 0) await changingIndex(git.run(setIndexEntries(privateIndex.indexFile, reset)));
  if (plan.update.length > 0) {
    await changingIndex(git.run(updateIndexFromWorktree(privateIndex.indexFile, plan.update)));
  }

  const changed = reset.length > 0 || plan.update.length > 0;
  let tree: string;
  let patch: Promise<PendingPatch> | null = null;
  if (
    !changed &&
    privateIndex.state.tree !== null &&
    privateIndex.state.indexSignature === (await privateIndex.signature())
  ) {
    tree = privateIndex.state.tree;
  } else {
    tree = await git.run(writeTree(privateIndex.indexFile));
    // The patch reads the index too. Run beside write-tree it made the two cost about 15%
    // more CPU in all (bench:capture); it runs beside the snapshot commit instead.
    if (changed) {
      patch = patchTo(status.head, { indexFile: privateIndex.indexFile });
      patch.catch(() => undefined);
    }
  }
  privateIndex.noteIgnoreFiles(ignoreSignature);
  privateIndex.noteRacyEntries(plan.update.length > 0 && leftRacyEntries(privateIndex.indexFile, plan.update, mtimes));
  const attributesChanged = status.entries.some(
    (e) => e.kind !== "ignored" && (e.path === ".gitattributes" || e.path.endsWith("/.gitattributes")),
  );
  return { head: status.head, branch: status.branch, tree, omitted: plan.omitted, attributesChanged, patch };
}
