// resetWorktree(record, dir, from): brings a checkout that is exactly one snapshot (`from`: its
// HEAD and tree, verified by the caller) to another snapshot of the same repository, in place,
// with the restore engine's steps: HEAD's commit fetched into its repository (object store,
// bundle, remotes), the patch chain applied in a private index and checked against the recorded
// tree, then only the files that differ between the two trees written (a two-tree `read-tree -m
// -u`, which refuses to overwrite a file it does not know), and verified: those files re-read
// through this host's filters and compared with their blobs, the index holding the recorded tree,
// and the whole checkout compared with the snapshot as `verify` does. Files git ignores
// (node_modules, target, .venv) are never touched, so a pooled worktree keeps its dependencies.
//
// A reset that cannot be exact is declined (nothing of the degraded ladder here: a fresh restore
// does that). `touched` says whether files may have changed; the caller marks the worktree before
// a reset and removes the mark only after one that verified, or one declined before touching.
import { lstat, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { isStrataError, StrataError } from "../../domain/errors.ts";
import { checkRestoreRecord, EMPTY_TREE, type RestoreRecord } from "../../domain/restore-record.ts";
import type { RestoreResult, RestoreTimings } from "../../domain/restore-result.ts";
import { oidArg, setIndexEntries, writeTree, type IndexEntry } from "../../git/commands.ts";
import { discoverRepository } from "../../git/discover.ts";
import { filesDifferingFromIndex } from "../../git/restore-commands.ts";
import type { CommitSource } from "./restore-history.ts";
import { applyChain } from "./restore-patches.ts";
import {
  captureWarnings,
  DEFAULT_TIMEOUT_MS,
  finalizeRepository,
  phaseClock,
  restoreHistory,
  type RestoreOptions,
} from "./restore.ts";
import { createGitRunner, splitNul, type GitCommand, type GitRunner } from "../../git/runner.ts";
import { compareWorktree, type RecordedState } from "./worktree-drift.ts";

/** A restore's options that a reset takes too (no target, object store or ladder here). */
export type ResetOptions = Pick<
  RestoreOptions,
  "blobs" | "gitPath" | "baseEnv" | "timeoutMs" | "fetchTimeoutMs" | "signal" | "onProgress"
> & {
  /** Runs right before the first file is written and before the verification (tests interrupt a reset there). */
  beforeStep?: (step: "write" | "verify") => Promise<void>;
};

export type ResetReport =
  | { status: "reset"; result: RestoreResult; changedPaths: number }
  | { status: "declined"; cause: StrataError; touched: boolean };

/** Settings for every call: no hooks, no file-system monitor, no automatic maintenance. */
const RESET_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "gc.auto=0"];

/** The checkout's index becomes `tree`, keeping the stat data of entries that hold it already. */
function indexToTree(tree: string): GitCommand<void> {
  return { args: [...RESET_CONFIG, "read-tree", "--reset", oidArg(tree)], parse: () => undefined };
}

/**
 * A two-tree merge from `from` to `to` that writes the files that differ (`-u`). It refuses to
 * overwrite a file the index does not hold (untracked or ignored) and writes nothing then.
 */
function switchTree(from: string, to: string): GitCommand<void> {
  return { args: [...RESET_CONFIG, "read-tree", "-m", "-u", oidArg(from), oidArg(to)], parse: () => undefined };
}

/** The entries that differ between two trees: `deleted` ones, and the others with their new mode and blob. */
function treeChanges(from: string, to: string): GitCommand<{ written: IndexEntry[]; deleted: string[] }> {
  return {
    args: [...RESET_CONFIG, "diff-tree", "-r", "-z", "--no-renames", oidArg(from), oidArg(to)],
    parse: (out) => {
      const written: IndexEntry[] = [];
      const deleted: string[] = [];
      const records = splitNul(out.stdout);
      for (let i = 0; i + 1 < records.length; i += 2) {
        const [, mode = "", , oid = "", status = ""] = (records[i] ?? "").split(" ");
        const path = records[i + 1] ?? "";
        if (status === "D") deleted.push(path);
        else written.push({ mode, oid, path });
      }
      return { written, deleted };
    },
  };
}

function declined(cause: unknown, touched: boolean): ResetReport {
  if (!isStrataError(cause)) throw cause;
  return { status: "declined", cause, touched };
}

function verifyFailed(message: string, data: Record<string, unknown>): StrataError {
  return new StrataError("TREE_MISMATCH", `The reset worktree does not verify: ${message}.`, { data });
}

/**
 * Re-reads every file the reset wrote through this host's filters and compares it with its blob
 * (a private index of just those entries, refreshed from the files), and checks that every file
 * it deleted is gone: the paths that differ.
 */
async function writtenFilesDiffering(
  git: GitRunner,
  root: string,
  scratch: string,
  changes: { written: IndexEntry[]; deleted: string[] },
): Promise<string[]> {
  const differing: string[] = [];
  // Submodules are recorded by commit and never checked out.
  const files = changes.written.filter((e) => e.mode !== "160000");
  if (files.length > 0) {
    const indexFile = join(scratch, "written-index");
    await git.run(setIndexEntries(indexFile, files));
    differing.push(...(await git.run(filesDifferingFromIndex(indexFile))));
  }
  for (const path of changes.deleted) {
    const left = await lstat(join(root, path)).catch(() => null);
    // A deleted file's path may now be a directory of files the new tree added.
    if (left && !left.isDirectory()) differing.push(path);
  }
  return differing.sort();
}

/** Resets the checkout at `dir`, exactly `from` now, to the snapshot `record`. */
export async function resetWorktree(
  record: RestoreRecord,
  dir: string,
  from: RecordedState,
  opts: ResetOptions,
): Promise<ResetReport> {
  const manifest = checkRestoreRecord(record);
  // Files whose recorded bytes git would not write back need a fresh restore.
  if ((manifest.verbatim ?? []).length > 0) {
    return declined(new StrataError("TREE_MISMATCH", "The snapshot records files git would not write back."), false);
  }
  // Git LFS files come through the restore's own fetch (restore-lfs.ts), never this host's
  // smudge filter, which may ask a remote for credentials: such snapshots restore fresh.
  if (manifest.filters.drivers.some((d) => d.name === "lfs")) {
    return declined(new StrataError("TREE_MISMATCH", "The snapshot's repository stores files in Git LFS."), false);
  }
  const layout = await discoverRepository(dir);
  if (!layout || layout.root !== dir) {
    return declined(new StrataError("NOT_A_REPOSITORY", `${dir} is not a checkout of its own.`), false);
  }
  const git = createGitRunner({
    cwd: dir,
    gitPath: opts.gitPath,
    baseEnv: opts.baseEnv,
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    signal: opts.signal,
  });
  const timer = phaseClock();
  const scratch = await mkdtemp(join(layout.gitDir, "strata-reset-"));
  const history = restoreHistory(git, manifest, opts, scratch);
  let touched = false;
  try {
    let commitsFrom: CommitSource | "none" = "none";
    const head = manifest.head;
    if (head) {
      opts.onProgress?.({ phase: "fetch", message: `getting commit ${head.slice(0, 12)}` });
      commitsFrom = await timer.time("fetch", () => history.obtainHead(head));
    }
    opts.onProgress?.({ phase: "reconstruct", message: `applying ${manifest.patches.length} change set(s)` });
    const chain = await timer.time("reconstruct", () =>
      applyChain(git, {
        indexFile: join(scratch, "index"),
        start: head ?? EMPTY_TREE[manifest.objectFormat],
        links: manifest.patches,
        blobs: opts.blobs,
        scratch,
        signal: opts.signal,
      }),
    );
    if (chain.failure) return declined(chain.failure.error, false);
    if (chain.tree !== manifest.tree) {
      return declined(verifyFailed(`HEAD's tree ${chain.tree} is not ${manifest.tree}`, {}), false);
    }

    await opts.beforeStep?.("write");
    touched = true;
    opts.onProgress?.({ phase: "materialize", message: "writing the files that differ" });
    const changes = await timer.time("materialize", async () => {
      await git.run(indexToTree(from.tree));
      await git.run(switchTree(from.tree, manifest.tree));
      return git.run(treeChanges(from.tree, manifest.tree));
    });
    await finalizeRepository(git, record.snapshotId, manifest, { stage: "exact", head }, history);
    await opts.beforeStep?.("verify");

    opts.onProgress?.({ phase: "verify", message: "checking the files written, the index and the checkout" });
    await timer.time("verify", async () => {
      const differing = await writtenFilesDiffering(git, dir, scratch, changes);
      if (differing.length > 0)
        throw verifyFailed(`${differing.length} file(s) differ`, { paths: differing.slice(0, 100) });
      const indexTree = await git.run(writeTree(join(layout.gitDir, "index")));
      if (indexTree !== manifest.tree) throw verifyFailed(`the index holds ${indexTree}`, { actual: indexTree });
      const found = await compareWorktree(dir, { head, tree: manifest.tree }, { signal: opts.signal });
      if (found.headMoved || !found.treeAvailable || found.drifted.length > 0) {
        throw verifyFailed(`${found.drifted.length} path(s) differ, HEAD ${found.head.current ?? "unborn"}`, {
          paths: found.drifted.slice(0, 100),
        });
      }
    });
    const tenths = (ms: number) => Math.round(ms * 10) / 10;
    const { fetch, reconstruct, materialize, verify } = timer.ms;
    const timings: RestoreTimings = {
      fetch: tenths(fetch),
      reconstruct: tenths(reconstruct),
      materialize: tenths(materialize),
      verify: tenths(verify),
      publish: 0,
      commitsFrom,
    };
    const warnings = captureWarnings(manifest);
    if (history.shallow) {
      warnings.push({
        kind: "shallow-history",
        message: "History was fetched shallow (git fetch --unshallow for the rest).",
      });
    }
    return {
      status: "reset",
      changedPaths: changes.written.length + changes.deleted.length,
      result: {
        version: 1,
        status: "restored",
        snapshotId: record.snapshotId,
        recorded: { head, tree: manifest.tree, branch: manifest.branch },
        holds: {
          stage: "exact",
          head,
          tree: manifest.tree,
          branch: manifest.branch,
          basis: "recorded-head",
          appliedChangeSets: chain.applied.map((l) => l.uuid),
        },
        missing: {
          commits: [],
          changeSets: [],
          paths: [],
          pathsComplete: true,
          cause: null,
          causeMessage: null,
          nextStep: null,
        },
        warnings,
        timings,
      },
    };
  } catch (error) {
    if (isStrataError(error, "ABORTED")) throw error;
    return declined(error, touched);
  } finally {
    await history.cleanup();
    await rm(scratch, { recursive: true, force: true });
  }
}
