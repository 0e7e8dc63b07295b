// What a restore produced: what the worktree holds, what is missing, why, and the next step a
// person should take. Workers store it on the restore row (restores.result) and pass it to
// workspace.reportRestore; the dashboard reads it (restore-notice.ts). Plain data, no I/O.
import { z } from "zod";
import { blobDigestSchema } from "./content.ts";
import { objectIdSchema } from "./snapshot-keys.ts";

/** The failures the degraded ladder answers; anything else is not about the snapshot's content. */
const DEGRADABLE_CAUSES = [
  "BLOB_MISSING",
  "BLOB_CORRUPT",
  "COMMITS_UNAVAILABLE",
  "DELTA_FAILED",
  "TREE_MISMATCH",
] as const;
export type DegradableCause = (typeof DEGRADABLE_CAUSES)[number];

export function isDegradableCause(code: string): code is DegradableCause {
  return (DEGRADABLE_CAUSES as readonly string[]).includes(code);
}

/**
 * How far the worktree got, best first:
 * - `exact`: the recorded HEAD and every change set (the recorded tree);
 * - `changes`: the recorded HEAD and the change sets up to the first that failed;
 * - `head`: the recorded HEAD without any change set;
 * - `closest-commit`: another commit, the closest one this host could get;
 * - `nothing`: nothing was written.
 */
const RESTORE_STAGES = ["exact", "changes", "head", "closest-commit", "nothing"] as const;
export type RestoreStage = (typeof RESTORE_STAGES)[number];

/** Where the commit the worktree holds came from. */
const RESTORE_BASES = ["recorded-head", "pushed-base", "earlier-snapshot", "branch-tip"] as const;
export type RestoreBasis = (typeof RESTORE_BASES)[number];

/** Why a change set is not in the worktree. */
const CHANGE_SET_FAILURES = [
  "blob-missing",
  "blob-corrupt",
  "does-not-apply",
  "tree-differs",
  /** It comes after one that failed (an incremental patch needs the tree before it). */
  "after-failure",
  /** The commit it applies to could not be had. */
  "no-base",
] as const;

const missingChangeSetSchema = z.strictObject({
  uuid: z.uuid(),
  kind: z.enum(["full", "incremental"]),
  digest: blobDigestSchema,
  size: z.number().int().nonnegative(),
  reason: z.enum(CHANGE_SET_FAILURES),
});
export type MissingChangeSet = z.infer<typeof missingChangeSetSchema>;

const RESTORE_WARNINGS = [
  /** The capture left files out (secrets, ignored, too large…); they are not in the worktree. */
  "omitted-content",
  /** The capturing machine converted line endings or ran filter drivers. */
  "filters",
  /** History was fetched shallow: `git log` stops at the restored commit. */
  "shallow-history",
  /** The worktree's repository borrows objects from a shared object store (alternates). */
  "shared-object-store",
  /** An interrupted earlier restore's staging directory could not be removed. */
  "stale-restore-retained",
  /** Git LFS files whose object no source had: they hold their pointer, listed in `paths`. */
  "lfs-objects-unavailable",
] as const;

const restoreWarningSchema = z.strictObject({
  kind: z.enum(RESTORE_WARNINGS),
  message: z.string().max(2000),
  paths: z.array(z.string().max(4096)).max(1000).optional(),
});
export type RestoreWarning = z.infer<typeof restoreWarningSchema>;

export const RESTORE_PHASES = ["fetch", "reconstruct", "materialize", "verify", "publish"] as const;
export type RestorePhase = (typeof RESTORE_PHASES)[number];

const restoreTimingsSchema = z.strictObject({
  fetch: z.number().nonnegative(),
  reconstruct: z.number().nonnegative(),
  materialize: z.number().nonnegative(),
  verify: z.number().nonnegative(),
  publish: z.number().nonnegative(),
  /** Where HEAD's commit came from: already in the object store, the bundle, or a remote. */
  commitsFrom: z.enum(["object-store", "bundle", "remote", "none"]),
});
export type RestoreTimings = z.infer<typeof restoreTimingsSchema>;

export const restoreResultSchema = z.strictObject({
  version: z.literal(1),
  /** `restored`: the recorded tree, verified; `degraded`: less; `unrestored`: nothing written. */
  status: z.enum(["restored", "degraded", "unrestored"]),
  snapshotId: z.string(),
  recorded: z.strictObject({ head: objectIdSchema.nullable(), tree: objectIdSchema, branch: z.string().nullable() }),
  /** What the worktree holds. */
  holds: z.strictObject({
    stage: z.enum(RESTORE_STAGES),
    head: objectIdSchema.nullable(),
    /** The tree of the files written (null when nothing was). */
    tree: objectIdSchema.nullable(),
    branch: z.string().nullable(),
    basis: z.enum(RESTORE_BASES).nullable(),
    appliedChangeSets: z.array(z.uuid()),
  }),
  /** What the worktree lacks; empty lists and null cause when restored exactly. */
  missing: z.strictObject({
    /**
     * Recorded commits (HEAD, unpushed ones) that the restored history does not hold; when the
     * bundle holds them and only the pushed commits it builds on could not be fetched, those.
     */
    commits: z.array(objectIdSchema),
    changeSets: z.array(missingChangeSetSchema),
    /** Files that do not have their recorded content (as far as could be read). */
    paths: z.array(z.string()),
    /** False when a missing change set could not be read, so its files are unknown. */
    pathsComplete: z.boolean(),
    cause: z.enum(DEGRADABLE_CAUSES).nullable(),
    causeMessage: z.string().max(2000).nullable(),
    nextStep: z.string().max(2000).nullable(),
  }),
  warnings: z.array(restoreWarningSchema),
  /** This host's shared object store of the repository the restore used (null: none). */
  objectStore: z.string().max(4096).nullable().optional(),
  timings: restoreTimingsSchema.optional(),
});
export type RestoreResult = z.infer<typeof restoreResultSchema>;

/**
 * The flat `missing` list `workspace.reportRestore` takes for a degraded outcome: one entry per
 * commit, change set and path, never empty.
 */
export function missingEntries(result: RestoreResult): string[] {
  const entries = [
    ...result.missing.commits.map((c) => `commit:${c}`),
    ...result.missing.changeSets.map((c) => `change-set:${c.uuid}`),
    ...result.missing.paths.map((p) => `path:${p}`),
  ].map((e) => e.slice(0, 1000));
  if (entries.length === 0) entries.push(`tree:${result.recorded.tree}`);
  return entries.slice(0, 10_000);
}

function short(oid: string): string {
  return oid.slice(0, 12);
}

/** The sentence a person reads about what to do next, for a failure cause. */
export function nextStepFor(
  cause: DegradableCause,
  facts: {
    head: string | null;
    commits: readonly string[];
    digests: readonly string[];
    paths: readonly string[];
    /** The blob that failed is the bundle of unpushed commits. */
    bundleLost?: boolean;
    /**
     * The pushed commits the bundle builds on, when they are what could not be had (the bundle
     * itself holds the unpushed commits).
     */
    missingBase?: readonly string[];
    /**
     * Files whose recorded blob the repository's own attributes do not read back, which the
     * snapshot holds no bytes of (captured before such files were recorded byte for byte).
     */
    convertedByRepository?: readonly string[];
  },
): string {
  const orPush =
    facts.bundleLost && facts.head
      ? ` Or push commit ${short(facts.head)} (with its history) to a recorded remote from the machine that has it.`
      : "";
  switch (cause) {
    case "BLOB_MISSING":
      return (
        `Store blob ${facts.digests.map(short).join(", ") || "(unknown)"} again (strata import of an export of this ` +
        `snapshot, or upload it from the machine that captured it), then restore again.${orPush}`
      );
    case "BLOB_CORRUPT":
      return (
        `The stored copy of blob ${facts.digests.map(short).join(", ") || "(unknown)"} is damaged: upload it again from a ` +
        `good copy, then restore again.${orPush}`
      );
    case "COMMITS_UNAVAILABLE": {
      const base = facts.missingBase ?? [];
      if (base.length > 0) {
        const named = base.map(short).join(", ");
        return (
          `The snapshot's bundle holds its unpushed commits, but they build on the pushed commit ${named}, which ` +
          `this host could not fetch from the recorded remotes. Make a recorded remote that has ${named} reachable ` +
          `from this host (run git ls-remote once to accept its host key), or restore with an object store that ` +
          `holds it, then restore again.`
        );
      }
      const commits = facts.commits.length > 0 ? facts.commits : facts.head ? [facts.head] : [];
      return (
        `Push commit ${commits.map(short).join(", ") || "HEAD"} (with its history) to a recorded remote from the ` +
        `machine that has it, or make the remote reachable from this host (run git ls-remote once to accept its host ` +
        `key), then restore again.`
      );
    }
    case "DELTA_FAILED":
      return (
        `The remaining change sets no longer apply. Capture the original checkout again if it still exists, or ` +
        `re-apply the changes to ${facts.paths.length > 0 ? facts.paths.slice(0, 5).join(", ") : "the listed files"} by hand.`
      );
    case "TREE_MISMATCH":
      if (facts.convertedByRepository && facts.convertedByRepository.length > 0) {
        return (
          `The repository's own .gitattributes (text, eol) change the recorded content of ` +
          `${facts.convertedByRepository.slice(0, 5).join(", ")} whenever git reads it back, on every host, and the ` +
          `snapshot holds no copy of those files' bytes. Capture the checkout again (a capture now records such files ` +
          `byte for byte), then restore the new snapshot.`
        );
      }
      return (
        `The files written differ from the recorded content (checkout filters or line-ending settings on this host?). ` +
        `Compare ${facts.paths.slice(0, 5).join(", ") || "the worktree"} with the snapshot, or restore on a host without ` +
        `those settings.`
      );
  }
}
