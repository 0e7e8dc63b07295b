// The deterministic evidence that a checkout is a clean copy of the canonical branch, and the
// server's re-check of it. A publisher's own verdict is never trusted: every field is judged
// again here, and every failed check is named.
import { z } from "zod";
import type { Manifest } from "./manifest.ts";
import { branchOfCanonicalRef, objectIdSchema } from "./snapshot-keys.ts";

export const baselineEvidenceSchema = z.strictObject({
  /** The remote-tracking ref of the canonical branch, e.g. refs/remotes/origin/main. */
  remoteTrackingRef: z.string().trim().min(1).max(300),
  /** Whether fetching that ref succeeded just before validation. */
  fetched: z.boolean(),
  /** What the remote-tracking ref resolved to after the fetch. */
  remoteCommit: objectIdSchema,
  /** HEAD of the checkout. */
  head: objectIdSchema,
  /** The checked-out branch (short name), or null when HEAD is detached. */
  branch: z.string().trim().min(1).max(250).nullable(),
  stagedCount: z.number().int().nonnegative(),
  modifiedCount: z.number().int().nonnegative(),
  /** Untracked files that are not ignored (ignored caches may stay). */
  untrackedCount: z.number().int().nonnegative(),
  inProgress: z.strictObject({
    merge: z.boolean(),
    rebase: z.boolean(),
    cherryPick: z.boolean(),
    bisect: z.boolean(),
  }),
  /** `git rev-parse --show-toplevel` of the checkout. */
  repositoryRoot: z.string().trim().min(1).max(4096),
  /** The directory the capture covers. */
  captureRoot: z.string().trim().min(1).max(4096),
});
export type BaselineEvidence = z.infer<typeof baselineEvidenceSchema>;

export const EVIDENCE_CHECKS = [
  "remote_ref_fetched",
  "remote_ref_is_canonical",
  "head_is_canonical_commit",
  "commit_is_head",
  "canonical_branch_checked_out",
  "nothing_staged",
  "no_tracked_modifications",
  "no_untracked_files",
  "no_operation_in_progress",
  "capture_root_is_repository_root",
  "manifest_matches_evidence",
] as const;
export type EvidenceCheck = (typeof EVIDENCE_CHECKS)[number];

export interface BaselineClaim {
  /** The normalized canonical ref of the key (refs/heads/…). */
  canonicalRef: string;
  /** The commit being published. */
  commit: string;
  manifest: Manifest;
  evidence: BaselineEvidence;
}

function samePath(a: string, b: string): boolean {
  const trim = (p: string) => (p.length > 1 ? p.replace(/[/\\]+$/, "") : p);
  return trim(a) === trim(b);
}

/** Returns the checks the claim fails, in a stable order; empty when it may be published. */
export function failedEvidenceChecks(claim: BaselineClaim): EvidenceCheck[] {
  const { evidence: e, manifest, commit } = claim;
  const branch = branchOfCanonicalRef(claim.canonicalRef);
  const progress = e.inProgress;
  const verdicts: Record<EvidenceCheck, boolean> = {
    remote_ref_fetched: e.fetched,
    remote_ref_is_canonical: /^refs\/remotes\/[^/]+\/.+$/.test(e.remoteTrackingRef)
      ? e.remoteTrackingRef.replace(/^refs\/remotes\/[^/]+\//, "") === branch
      : false,
    head_is_canonical_commit: e.head === e.remoteCommit,
    commit_is_head: commit === e.head,
    canonical_branch_checked_out: e.branch === branch,
    nothing_staged: e.stagedCount === 0,
    no_tracked_modifications: e.modifiedCount === 0,
    no_untracked_files: e.untrackedCount === 0,
    no_operation_in_progress: !progress.merge && !progress.rebase && !progress.cherryPick && !progress.bisect,
    capture_root_is_repository_root: samePath(e.captureRoot, e.repositoryRoot),
    manifest_matches_evidence: manifest.head === commit && manifest.branch === branch,
  };
  return EVIDENCE_CHECKS.filter((check) => !verdicts[check]);
}
