import { describe, expect, it } from "vitest";
import { EVIDENCE_CHECKS, failedEvidenceChecks, type BaselineEvidence } from "./baseline-evidence.ts";
import type { Manifest } from "./manifest.ts";

const commit = "a".repeat(40);
const other = "b".repeat(40);

function evidence(overrides: Partial<BaselineEvidence> = {}): BaselineEvidence {
  return {
    remoteTrackingRef: "refs/remotes/origin/main",
    fetched: true,
    remoteCommit: commit,
    head: commit,
    branch: "main",
    stagedCount: 0,
    modifiedCount: 0,
    untrackedCount: 0,
    inProgress: { merge: false, rebase: false, cherryPick: false, bisect: false },
    repositoryRoot: "/src/app",
    captureRoot: "/src/app",
    ...overrides,
  };
}

const manifest: Manifest = { treeId: "c".repeat(40), head: commit, branch: "main", blobDigests: [], sizeBytes: 0 };

function check(e: BaselineEvidence, opts: { commit?: string; manifest?: Manifest; canonicalRef?: string } = {}) {
  return failedEvidenceChecks({
    canonicalRef: opts.canonicalRef ?? "refs/heads/main",
    commit: opts.commit ?? commit,
    manifest: opts.manifest ?? manifest,
    evidence: e,
  });
}

describe("failedEvidenceChecks", () => {
  it("accepts a freshly fetched, clean checkout of the canonical branch", () => {
    expect(check(evidence())).toEqual([]);
    // A trailing slash names the same directory.
    expect(check(evidence({ captureRoot: "/src/app/" }))).toEqual([]);
  });

  it.each([
    ["remote_ref_fetched", { fetched: false }],
    ["remote_ref_is_canonical", { remoteTrackingRef: "refs/remotes/origin/develop" }],
    ["remote_ref_is_canonical", { remoteTrackingRef: "refs/heads/main" }],
    ["head_is_canonical_commit", { remoteCommit: other }],
    ["nothing_staged", { stagedCount: 1 }],
    ["no_tracked_modifications", { modifiedCount: 3 }],
    ["no_untracked_files", { untrackedCount: 2 }],
    ["no_operation_in_progress", { inProgress: { merge: false, rebase: true, cherryPick: false, bisect: false } }],
    ["no_operation_in_progress", { inProgress: { merge: false, rebase: false, cherryPick: false, bisect: true } }],
    ["capture_root_is_repository_root", { captureRoot: "/src/app/packages/web" }],
  ] as const)("names %s when it fails", (name, overrides) => {
    expect(check(evidence(overrides))).toEqual([name]);
  });

  it("refuses a task branch or a detached HEAD", () => {
    expect(check(evidence({ branch: "feature/a" }), { manifest: { ...manifest, branch: "feature/a" } })).toEqual([
      "canonical_branch_checked_out",
      "manifest_matches_evidence",
    ]);
    expect(check(evidence({ branch: null }))).toEqual(["canonical_branch_checked_out"]);
  });

  it("refuses a commit that is not the checked-out HEAD, and a manifest of another tree", () => {
    expect(check(evidence(), { commit: other })).toEqual(["commit_is_head", "manifest_matches_evidence"]);
    expect(check(evidence(), { manifest: { ...manifest, head: other } })).toEqual(["manifest_matches_evidence"]);
  });

  it("judges the branch against the key's canonical ref", () => {
    const develop = evidence({ remoteTrackingRef: "refs/remotes/upstream/develop", branch: "develop" });
    expect(
      check(develop, { canonicalRef: "refs/heads/develop", manifest: { ...manifest, branch: "develop" } }),
    ).toEqual([]);
  });

  it("names every failed check of a dirty task checkout at once, in a stable order", () => {
    const dirty = evidence({
      fetched: false,
      head: other,
      branch: "feature/a",
      stagedCount: 1,
      modifiedCount: 1,
      untrackedCount: 1,
      inProgress: { merge: true, rebase: false, cherryPick: true, bisect: false },
      captureRoot: "/",
    });
    const failed = check(dirty, { commit: other, manifest: { ...manifest, head: other, branch: "feature/a" } });
    expect(failed).toEqual(EVIDENCE_CHECKS.filter((c) => c !== "remote_ref_is_canonical" && c !== "commit_is_head"));
  });
});
