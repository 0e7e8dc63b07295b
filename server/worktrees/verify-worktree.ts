// verifyWorktree(binding, dir): whether a checkout on this host is still exactly what a snapshot
// recorded (HEAD the recorded commit, every file of the recorded tree with its recorded content,
// nothing a capture here would add) and, when it is not, what drifted. Nothing in the checkout
// is written. The pool, leases, reuse and resume in place build on this.
import { isStrataError } from "../domain/errors.ts";
import { checkRestoreRecord, type RestoreRecord } from "../domain/restore-record.ts";
import { compareWorktree, type DriftedPath, type WorktreeDriftOptions } from "../restore/engine/worktree-drift.ts";
import { loadCaptureManifest, type RestorePort } from "../restore/restore-snapshot.ts";
import { workspaceDrift, type WorktreeVerification } from "./worktree-verification.ts";

/** What a snapshot recorded of a checkout: its id and its full manifest (checked before use). */
export type WorktreeBinding = RestoreRecord;

export interface VerifyWorktreeOptions extends WorktreeDriftOptions {
  /** How many drifted (and left-out) paths the answer lists; the counts are always whole. */
  maxPaths?: number;
}

const DEFAULT_MAX_PATHS = 100;

/** Compares the checkout at `dir` with a snapshot's record; answers, never throws for drift. */
export async function checkWorktree(
  binding: WorktreeBinding,
  dir: string,
  opts: VerifyWorktreeOptions = {},
): Promise<WorktreeVerification> {
  const manifest = checkRestoreRecord(binding);
  const { maxPaths = DEFAULT_MAX_PATHS, ...driftOptions } = opts;
  const found = await compareWorktree(
    dir,
    { head: manifest.head, tree: manifest.tree, verbatim: manifest.verbatim },
    driftOptions,
  );
  const count = (change: DriftedPath["change"]) => found.drifted.filter((d) => d.change === change).length;
  return {
    snapshotId: binding.snapshotId,
    root: found.root,
    matches: !found.headMoved && found.treeAvailable && found.drifted.length === 0,
    head: found.head,
    branch: { recorded: manifest.branch, current: found.branch },
    tree: manifest.tree,
    headMoved: found.headMoved,
    headOnlyAdvanced: found.headOnlyAdvanced,
    treeAvailable: found.treeAvailable,
    drift: {
      added: count("added"),
      modified: count("modified"),
      deleted: count("deleted"),
      total: found.drifted.length,
      paths: found.drifted.slice(0, maxPaths),
    },
    leftOut: { total: found.leftOut.length, paths: found.leftOut.slice(0, maxPaths) },
  };
}

/** Resolves with the answer when the checkout matches its snapshot; rejects with WORKSPACE_DRIFT otherwise. */
export async function verifyWorktree(
  binding: WorktreeBinding,
  dir: string,
  opts: VerifyWorktreeOptions = {},
): Promise<WorktreeVerification> {
  const verification = await checkWorktree(binding, dir, opts);
  if (!verification.matches) throw workspaceDrift(verification);
  return verification;
}

/** Where a snapshot's record is read from: this machine's catalog or a server (client/restore-port.ts). */
export type SnapshotRecordSource = Pick<RestorePort, "getSnapshot" | "open">;

/** Checks the checkout at `dir` against one of the agent's snapshots, read from a catalog. */
export async function checkSnapshotWorktree(
  source: SnapshotRecordSource,
  opts: VerifyWorktreeOptions & { snapshotId: string; dir: string },
): Promise<WorktreeVerification> {
  const { snapshotId, dir, ...rest } = opts;
  const snapshot = await source.getSnapshot(snapshotId);
  const { manifest } = await loadCaptureManifest(source, snapshot, rest.signal);
  return checkWorktree({ snapshotId: snapshot.id, manifest }, dir, rest);
}

/** The verification, or null when the directory is no checkout this host can compare. */
export async function checkIfCheckout(binding: WorktreeBinding, dir: string): Promise<WorktreeVerification | null> {
  try {
    return await checkWorktree(binding, dir);
  } catch (error) {
    if (isStrataError(error, "NOT_A_REPOSITORY") || isStrataError(error, "UNREADABLE_PATH")) return null;
    if (isStrataError(error, "GIT_FAILED")) return null;
    throw error;
  }
}

/**
 * Whether a task may continue where the checkout is, writing nothing: it matches its snapshot, or
 * HEAD only moved forward over the same files (the recorded edits were committed).
 */
export function continuesAt(v: WorktreeVerification): boolean {
  return v.matches || v.headOnlyAdvanced;
}
