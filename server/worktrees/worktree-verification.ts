// The answer of verify (verify-worktree.ts): whether a checkout matches its snapshot and, when
// not, what drifted; and the typed WORKSPACE_DRIFT failure that carries it. No I/O here, so the
// CLI reads it without loading the catalog.
import type { OmittedEntry } from "../domain/capture-manifest.ts";
import { StrataError } from "../domain/errors.ts";
import type { DriftedPath } from "../restore/engine/worktree-drift.ts";

export interface WorktreeVerification {
  snapshotId: string;
  /** The checkout's top directory. */
  root: string;
  /** HEAD is the recorded commit and every file is the recorded tree's. */
  matches: boolean;
  head: { recorded: string | null; current: string | null };
  branch: { recorded: string | null; current: string | null };
  tree: string;
  headMoved: boolean;
  /** HEAD only moved forward over the same files: not a match, but a resume may continue here. */
  headOnlyAdvanced: boolean;
  /** Whether this repository holds the recorded tree (when not, the checkout counts as drifted). */
  treeAvailable: boolean;
  drift: {
    added: number;
    modified: number;
    deleted: number;
    total: number;
    /** The first `maxPaths` drifted paths, sorted by path. */
    paths: DriftedPath[];
  };
  /** Files the tree lacks that a capture on this host leaves out (ignored ones are not listed). */
  leftOut: { total: number; paths: OmittedEntry[] };
}

/** What drifted, in a sentence. */
export function describeDrift(v: WorktreeVerification): string {
  const parts: string[] = [];
  if (!v.treeAvailable) parts.push(`this repository does not hold the recorded tree ${v.tree}`);
  if (v.headMoved) {
    parts.push(
      `HEAD moved from ${v.head.recorded ?? "an unborn branch"} to ${v.head.current ?? "an unborn branch"}` +
        (v.headOnlyAdvanced ? " (only forward: the files are still the recorded tree)" : ""),
    );
  }
  if (v.drift.total > 0) {
    const kinds = (["added", "modified", "deleted"] as const)
      .filter((k) => v.drift[k] > 0)
      .map((k) => `${v.drift[k]} ${k}`);
    parts.push(`${v.drift.total} path(s) differ from the recorded tree (${kinds.join(", ")})`);
  }
  return parts.join("; ");
}

/** The typed failure of a checkout that does not match its snapshot; `data` is the whole answer. */
export function workspaceDrift(v: WorktreeVerification): StrataError {
  return new StrataError(
    "WORKSPACE_DRIFT",
    `The checkout at ${v.root} drifted from snapshot ${v.snapshotId}: ${describeDrift(v)}.`,
    {
      hint: v.headOnlyAdvanced
        ? "Only HEAD moved forward over the recorded files: work may continue here; capture to record the new HEAD."
        : `Restore the snapshot into a new directory (strata restore ${v.snapshotId} --into DIR), or capture this checkout to record what it holds now.`,
      data: { ...v },
    },
  );
}
