// How a checkout differs from a recorded tree and HEAD, without writing anything into it. The
// recorded tree is read into a private index outside the repository, and one `git status`
// against that index tells which recorded files no longer have their recorded content and which
// files the tree never had. Every recorded file is compared, whatever this host's excludes or
// size limits say; those rules only decide whether a file the tree never had counts as a change
// (a capture here would leave it out, so it does not).
//
// Independent work runs at once: whether the recorded objects are here (git) beside the copy of
// an index that holds the recorded tree (files), and, when HEAD (read from the files) is not the
// recorded commit, whether it descends from it beside the `git status`.
import { lstatSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OmittedEntry, VerbatimFile } from "../../domain/capture-manifest.ts";
import { isStrataError } from "../../domain/errors.ts";
import {
  configMatching,
  existingObjects,
  isObjectId,
  oidArg,
  repositoryLayout,
  type RepositoryLayout,
} from "../../git/commands.ts";
import { discoverRepository, resolveCheckoutDirectory } from "../../git/discover.ts";
import { OMISSION_DEFAULTS, planIndexChanges } from "../../capture/engine/omitted.ts";
import { createGitRunner, splitNul, unreadablePath, type GitCommand, type GitRunner } from "../../git/runner.ts";
import { captureIndexFiles, refreshingCaptureIndex } from "../../capture/engine/private-index.ts";
import { findIndexHoldingTree, seedIndexWithTree, unchangedSinceRead } from "../../capture/engine/seeded-index.ts";
import { snapshotIgnoredPaths } from "../../capture/engine/snapshot-ignore.ts";
import { parseUnreadableWarnings, statusCommand, type StatusEntry, type StatusReport } from "../../git/status.ts";
import { holdsVerbatimBytes } from "../../capture/engine/verbatim-files.ts";

/** The capture settings that decide whether a file the recorded tree lacks counts as drift. */
interface DriftRules {
  includeUntracked: boolean;
  maxFileBytes: number;
  /** Counted over the new files alone. */
  maxSnapshotBytes: number;
}

/** A capture's defaults. */
const DEFAULT_RULES: DriftRules = OMISSION_DEFAULTS;

type PathChange = "added" | "modified" | "deleted";

export interface DriftedPath {
  path: string;
  change: PathChange;
}

export interface RecordedState {
  /** Null: recorded on an unborn branch. */
  head: string | null;
  tree: string;
  /**
   * The files the snapshot recorded verbatim (the repository's line-ending attributes do not
   * read their blob back): compared by their recorded bytes, not by git's re-read.
   */
  verbatim?: readonly Pick<VerbatimFile, "path" | "oid" | "bytes">[];
}

export interface WorktreeComparison {
  /** The checkout's top directory. */
  root: string;
  head: { recorded: string | null; current: string | null };
  /** The checked-out branch now (null when HEAD is detached). */
  branch: string | null;
  headMoved: boolean;
  /** HEAD moved only forward (it descends from the recorded commit) and the files are the tree's. */
  headOnlyAdvanced: boolean;
  /** Whether this repository holds the recorded tree; when not, no file could be compared. */
  treeAvailable: boolean;
  /** Every path whose content is not the recorded tree's, sorted by path. */
  drifted: DriftedPath[];
  /** Files the tree lacks that this host's capture rules leave out: not drift. */
  leftOut: OmittedEntry[];
}

export interface WorktreeDriftOptions {
  rules?: Partial<DriftRules>;
  gitPath?: string;
  baseEnv?: Readonly<Record<string, string | undefined>>;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Whether `ancestor` is `descendant` or one of its ancestors. */
function isAncestor(ancestor: string, descendant: string): GitCommand<boolean> {
  return {
    args: ["merge-base", "--is-ancestor", oidArg(ancestor), oidArg(descendant)],
    okExitCodes: [0, 1],
    parse: (out) => out.exitCode === 0,
  };
}

/**
 * HEAD's commit as the files say (a detached HEAD, or a branch's loose or packed ref), or
 * undefined when they do not say it plainly (unborn, another ref storage…). Only a guess to start
 * work early: `git status` tells HEAD.
 */
function headFromFiles(layout: RepositoryLayout): string | undefined {
  const read = (path: string) => {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  };
  const head = read(join(layout.gitDir, "HEAD"))?.trim();
  if (head === undefined || isObjectId(head)) return head;
  const ref = /^ref: (refs\/heads\/[^\s]+)$/.exec(head)?.[1];
  if (!ref) return undefined;
  const loose = read(join(layout.commonDir, ref))?.trim();
  if (loose !== undefined) return isObjectId(loose) ? loose : undefined;
  const packed = read(join(layout.commonDir, "packed-refs"))
    ?.split("\n")
    .find((line) => line.endsWith(` ${ref}`))
    ?.split(" ")[0];
  return packed !== undefined && isObjectId(packed) ? packed : undefined;
}

/** `update-index --refresh`'s verdicts: files that differ from the index, entries left unmerged. */
function refreshIndex(indexFile: string): GitCommand<{ changed: string[]; unmerged: string[] } | null> {
  return {
    args: ["-c", "core.splitIndex=false", "update-index", "--refresh"],
    env: { GIT_INDEX_FILE: indexFile, GIT_OPTIONAL_LOCKS: "1" },
    okExitCodes: [0, 1],
    parse: (out) => {
      const changed: string[] = [];
      const unmerged: string[] = [];
      for (const line of out.stdout.toString("utf8").split("\n")) {
        if (line === "") continue;
        if (line.endsWith(": needs update")) changed.push(line.slice(0, -": needs update".length));
        else if (line.endsWith(": needs merge")) unmerged.push(line.slice(0, -": needs merge".length));
        // A path git printed across lines (it holds a newline): only status can say it.
        else return null;
      }
      return { changed, unmerged };
    },
  };
}

/** Files the index does not have and the ignore rules do not exclude (a nested repository ends with "/"). */
function untrackedFiles(indexFile: string): GitCommand<{ paths: string[]; unreadable: string[] }> {
  return {
    args: ["ls-files", "-z", "--others", "--exclude-standard"],
    env: { GIT_INDEX_FILE: indexFile },
    parse: (out) => ({ paths: splitNul(out.stdout), unreadable: parseUnreadableWarnings(out.stderr) }),
  };
}

function headCommit(): GitCommand<string | null> {
  return {
    args: ["rev-parse", "-q", "--verify", "HEAD^{commit}"],
    okExitCodes: [0, 1, 128],
    parse: (out) => (out.exitCode === 0 ? out.stdout.toString("utf8").trim() : null),
  };
}

function currentBranch(): GitCommand<string | null> {
  return {
    args: ["symbolic-ref", "-q", "--short", "HEAD"],
    okExitCodes: [0, 1],
    parse: (out) => (out.exitCode === 0 ? out.stdout.toString("utf8").trim() : null),
  };
}

/**
 * What the comparison needs of `git status` against an index Strata may write (a capture's,
 * under its lock), without status's other half: HEAD against the index, a walk of every entry
 * when the recorded edits are spread over the tree. `update-index --refresh` re-reads the files
 * whose stat data changed, writes refreshed stat data back and names the files that differ,
 * beside `ls-files --others` for new files and HEAD and the branch, all at once. Null where only
 * status can tell (a path with a newline, a verbatim file that differs: its modes are needed).
 */
async function refreshAndCompare(
  git: GitRunner,
  root: string,
  indexFile: string,
  untracked: boolean,
  verbatim: ReadonlySet<string>,
): Promise<StatusReport | null> {
  const [refreshed, others, head, branch] = await Promise.all([
    git.run(withoutFsmonitor(refreshIndex(indexFile))),
    untracked ? git.run(untrackedFiles(indexFile)) : Promise.resolve({ paths: [], unreadable: [] }),
    git.run(headCommit()),
    git.run(currentBranch()),
  ]);
  if (!refreshed || refreshed.changed.some((path) => verbatim.has(path))) return null;
  const entries: StatusEntry[] = [
    ...refreshed.changed.map((path): StatusEntry => {
      const gone = lstatSync(join(root, path), { throwIfNoEntry: false }) === undefined;
      return { ...UNKNOWN_MODES, kind: "changed", x: ".", y: gone ? "D" : "M", submodule: "N...", path };
    }),
    ...refreshed.unmerged.map((path): StatusEntry => ({ kind: "unmerged", x: "U", y: "U", submodule: "N...", path })),
    ...others.paths.map((path): StatusEntry => ({ kind: "untracked", path })),
  ];
  return { head, branch, entries, unreadable: others.unreadable };
}

const UNKNOWN_MODES = { modeHead: "", modeIndex: "", modeWorktree: "", oidHead: "", oidIndex: "" };

/** The same call without a file-system monitor: a verify starts no daemon in the repository. */
function withoutFsmonitor<T>(command: GitCommand<T>): GitCommand<T> {
  return { ...command, args: ["-c", "core.fsmonitor=false", ...command.args] };
}

function byPath(a: { path: string }, b: { path: string }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** Compares the checkout containing `dir` with a recorded HEAD and tree. Writes nothing there. */
export async function compareWorktree(
  dir: string,
  recorded: RecordedState,
  opts: WorktreeDriftOptions = {},
): Promise<WorktreeComparison> {
  const { rules: overrides, ...runnerOptions } = opts;
  const rules = { ...DEFAULT_RULES, ...overrides };
  const start = await resolveCheckoutDirectory(dir);
  const runner = createGitRunner({ cwd: start, ...runnerOptions });
  const layout = (await discoverRepository(start)) ?? (await runner.run(repositoryLayout()));
  const git = runner.at(layout.root);

  let scratch: string | null = null;
  const scratchDir = async () => (scratch ??= await mkdtemp(join(tmpdir(), "strata-verify-")));
  try {
    const seed = { gitDir: layout.gitDir, tree: recorded.tree, objectFormat: layout.objectFormat };
    const found = await findIndexHoldingTree({ ...seed, alsoFrom: captureIndexFiles(layout) });
    // An index whose cache of trees holds the recorded tree says the repository has it (git
    // wrote or read that tree); otherwise git is asked.
    const present =
      "holding" in found
        ? null
        : await git.run(existingObjects([recorded.tree, ...(recorded.head ? [recorded.head] : [])]));
    const treeAvailable = present === null || present.has(recorded.tree);
    // A recorded commit this repository does not have cannot be shown to be an ancestor.
    const ancestor = (head: string, of: string) =>
      present !== null && !present.has(head)
        ? Promise.resolve(false)
        : git.run(isAncestor(head, of)).catch((error: unknown) => {
            if (isStrataError(error, "GIT_FAILED")) return false;
            throw error;
          });
    // Whether HEAD descends from the recorded commit, asked beside the status when HEAD moved
    // (an answer for another commit than the status's HEAD is not used).
    const guessedHead = headFromFiles(layout);
    const early =
      recorded.head !== null && guessedHead !== undefined && guessedHead !== recorded.head
        ? { head: guessedHead, answer: ancestor(recorded.head, guessedHead) }
        : null;
    early?.answer.catch(() => undefined);
    // Without the tree nothing can be compared: HEAD and the branch are still told. The index
    // holds the recorded tree and the checkout's stat data, so only files whose stat data
    // changed are read: an index of the checkout that holds the tree is used as it is (git only
    // reads it), and when that file was replaced meanwhile the status is asked again on a copy.
    const statusAgainst = (indexFile: string | undefined, writeRefreshedIndex = false) =>
      git.run(
        withoutFsmonitor(
          statusCommand({
            untracked: treeAvailable && rules.includeUntracked ? "all" : "no",
            ignored: false,
            ignoreSubmodules: "dirty",
            indexFile,
            writeRefreshedIndex,
          }),
        ),
      );
    const seeded = async () => {
      const indexFile = join(await scratchDir(), "index");
      await seedIndexWithTree(git, { ...seed, indexFile });
      return statusAgainst(indexFile);
    };
    let status;
    if (!treeAvailable) status = await statusAgainst(undefined);
    else if ("holding" in found) {
      const { holding } = found;
      // A capture's own index (not the checkout's) is refreshed as git status refreshes its
      // index: files the capture saw change in the second it wrote the index are re-read once,
      // not by every later verify. Under the capture's lock, and only while it is the file read.
      const verbatim = new Set((recorded.verbatim ?? []).map((f) => f.path));
      const untracked = rules.includeUntracked;
      const refreshed =
        holding.path === join(layout.gitDir, "index")
          ? null
          : await refreshingCaptureIndex(holding.path, async () => {
              if (!(await unchangedSinceRead(holding))) return null;
              const compared = await refreshAndCompare(git, layout.root, holding.path, untracked, verbatim);
              return compared ?? statusAgainst(holding.path, true);
            });
      status = refreshed ?? (await statusAgainst(holding.path));
      if (!refreshed && !(await unchangedSinceRead(holding))) status = await seeded();
    } else status = await seeded();
    const [unreadable] = status.unreadable;
    if (unreadable !== undefined) throw unreadablePath(unreadable, "the directory cannot be opened");

    const drifted: DriftedPath[] = [];
    const leftOut: OmittedEntry[] = [];
    if (treeAvailable) {
      const untracked: StatusEntry[] = [];
      const verbatim = new Map(
        (recorded.verbatim ?? []).map((file) => [file.path, { file, seen: null as Changed | null }]),
      );
      for (const entry of status.entries) {
        const verbatimFile = verbatim.get(entry.path);
        if (entry.kind === "untracked") untracked.push(entry);
        else if (verbatimFile && entry.kind === "changed") verbatimFile.seen = entry;
        else if (entry.kind === "unmerged" || (entry.kind === "changed" && entry.y !== ".")) {
          drifted.push({
            path: entry.path,
            change: entry.kind === "changed" && entry.y === "D" ? "deleted" : "modified",
          });
        }
      }
      drifted.push(...(await verbatimDrift(layout.root, [...verbatim.values()], layout.objectFormat)));
      const plan = await planNewFiles(git, layout.root, scratchDir, untracked, rules);
      drifted.push(...plan.update.map((path) => ({ path, change: "added" as const })));
      leftOut.push(...plan.omitted.sort(byPath));
    }
    drifted.sort(byPath);

    const current = status.head;
    const headMoved = current !== recorded.head;
    const sameFiles = treeAvailable && drifted.length === 0;
    let headOnlyAdvanced = false;
    if (headMoved && sameFiles && current !== null) {
      // An unborn recorded branch is an ancestor of every commit.
      headOnlyAdvanced =
        recorded.head === null || (await (early?.head === current ? early.answer : ancestor(recorded.head, current)));
    }
    return {
      root: layout.root,
      head: { recorded: recorded.head, current },
      branch: status.branch,
      headMoved,
      headOnlyAdvanced,
      treeAvailable,
      drifted,
      leftOut,
    };
  } finally {
    if (scratch !== null) await rm(scratch, { recursive: true, force: true });
  }
}

type Changed = Extract<StatusEntry, { kind: "changed" }>;

/**
 * The files recorded verbatim that no longer hold their recorded bytes. git's re-read cannot
 * judge them: the repository's attributes read their bytes back as another blob, and read other
 * bytes back as the recorded one (`ab\r\r\n` and `ab\r\n` alike). Each is read and compared with
 * what the snapshot recorded; a deletion or a change of mode or type git saw counts as it is.
 */
async function verbatimDrift(
  root: string,
  files: ReadonlyArray<{ file: NonNullable<RecordedState["verbatim"]>[number]; seen: Changed | null }>,
  objectFormat: "sha1" | "sha256",
): Promise<DriftedPath[]> {
  const judged = await Promise.all(
    files.map(async ({ file, seen }): Promise<DriftedPath | null> => {
      if (seen?.y === "D") return { path: file.path, change: "deleted" };
      if (seen && seen.modeWorktree !== seen.modeIndex) return { path: file.path, change: "modified" };
      // git lists a path it reaches only through a symbolic link as deleted: this one is a file.
      const bytes = await readFile(join(root, file.path)).catch(() => null);
      return bytes && holdsVerbatimBytes(bytes, file, objectFormat) ? null : { path: file.path, change: "modified" };
    }),
  );
  return judged.filter((d): d is DriftedPath => d !== null);
}

/** Of the files the recorded tree lacks: those a capture on this host would add, and those it leaves out. */
async function planNewFiles(
  git: GitRunner,
  root: string,
  scratch: () => Promise<string>,
  untracked: readonly StatusEntry[],
  rules: DriftRules,
) {
  const files = untracked.map((e) => e.path).filter((p) => !p.endsWith("/"));
  const sizes = new Map<string, number | null>();
  for (const path of files) sizes.set(path, lstatSync(join(root, path), { throwIfNoEntry: false })?.size ?? null);
  let snapshotIgnored = new Set<string>();
  if (files.length > 0) {
    const ignoreCase = (await git.run(configMatching("^core\\.ignorecase$"))).some(([, v]) =>
      /^(true|yes|on|1)$/i.test(v),
    );
    snapshotIgnored = await snapshotIgnoredPaths(git, root, await scratch(), ignoreCase, files);
  }
  // With every untracked file listed, a directory is listed only when it holds a repository.
  const nestedRepositories = new Set(untracked.map((e) => e.path).filter((p) => p.endsWith("/")));
  return planIndexChanges(untracked, { ...rules, snapshotIgnored, nestedRepositories, sizes });
}

/**
 * Whether the checkout's HEAD only moved forward from `recordedCommit` (it is a descendant, not
 * the commit itself) while its files are still exactly `recordedTree`: the case a resume
 * continues in place.
 */
export async function isHeadOnlyAdvance(
  dir: string,
  recordedCommit: string | null,
  recordedTree: string,
  opts: WorktreeDriftOptions = {},
): Promise<boolean> {
  const comparison = await compareWorktree(dir, { head: recordedCommit, tree: recordedTree }, opts);
  return comparison.headOnlyAdvanced;
}
