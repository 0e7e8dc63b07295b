import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { baselineEvidenceSchema } from "../../domain/baseline-evidence.ts";
import { collectBaselineEvidence } from "./evidence.ts";
import {
  addOrigin,
  commitAll,
  git,
  imageOf,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../../testing/repos.ts";

afterAll(removeTemporaryDirectories);

/** A fresh clone of a repository whose origin has `main`. */
function freshClone(): { clone: string; upstream: string } {
  const upstream = initRepository({ "a.txt": "a\n", ".gitignore": "node_modules/\n" });
  const bare = addOrigin(upstream);
  const clone = join(temporaryDirectory(), "clone");
  git(temporaryDirectory(), ["clone", "--quiet", `file://${bare}`, clone]);
  return { clone, upstream };
}

describe("baseline evidence", () => {
  it("passes for a freshly fetched clean checkout of the canonical branch, ignored caches allowed", async () => {
    const { clone } = freshClone();
    write(clone, "node_modules/dep/index.js", "cache\n");
    const before = imageOf(clone);
    const { evidence, failed } = await collectBaselineEvidence(clone, { canonicalRef: "main" });
    expect(failed).toEqual([]);
    expect(baselineEvidenceSchema.parse(evidence)).toEqual(evidence);
    expect(evidence).toMatchObject({
      remoteTrackingRef: "refs/remotes/origin/main",
      fetched: true,
      branch: "main",
      stagedCount: 0,
      modifiedCount: 0,
      untrackedCount: 0,
      inProgress: { merge: false, rebase: false, cherryPick: false, bisect: false },
    });
    expect(evidence.head).toBe(evidence.remoteCommit);
    // Reading the evidence leaves the index, HEAD and the files as they were.
    const after = imageOf(clone);
    expect(after.index).toBe(before.index);
    expect(after.head).toBe(before.head);
    expect([...after.files]).toEqual([...before.files]);
  });

  it("fetches first: a checkout behind its remote is not the canonical commit", async () => {
    const { clone, upstream } = freshClone();
    write(upstream, "b.txt", "b\n");
    commitAll(upstream, "newer");
    git(upstream, ["push", "--quiet", "origin", "main"]);
    const { evidence, failed } = await collectBaselineEvidence(clone, { canonicalRef: "refs/heads/main" });
    expect(evidence.fetched).toBe(true);
    expect(evidence.remoteCommit).toBe(git(upstream, ["rev-parse", "HEAD"]).trim());
    expect(failed).toEqual(["head_is_canonical_commit"]);
  });

  it("names every dirty condition", async () => {
    const { clone } = freshClone();
    git(clone, ["checkout", "--quiet", "-b", "task/42"]);
    write(clone, "staged.txt", "staged\n");
    git(clone, ["add", "staged.txt"]);
    write(clone, "a.txt", "modified\n");
    write(clone, "loose.txt", "untracked\n");
    write(clone, ".git/MERGE_HEAD", `${git(clone, ["rev-parse", "HEAD"]).trim()}\n`);
    const { evidence, failed } = await collectBaselineEvidence(join(clone), { canonicalRef: "main" });
    expect(evidence).toMatchObject({ branch: "task/42", stagedCount: 1, modifiedCount: 1, untrackedCount: 1 });
    expect(evidence.inProgress.merge).toBe(true);
    expect(failed).toEqual([
      "canonical_branch_checked_out",
      "nothing_staged",
      "no_tracked_modifications",
      "no_untracked_files",
      "no_operation_in_progress",
      "manifest_matches_evidence",
    ]);
  });

  it("refuses a subdirectory, an unrelated repository inside, and a remote it cannot reach", async () => {
    const { clone } = freshClone();
    write(clone, "sub/file.txt", "x\n");
    commitAll(clone, "sub");
    git(clone, ["push", "--quiet", "origin", "main"]);
    const sub = await collectBaselineEvidence(join(clone, "sub"), { canonicalRef: "main" });
    expect(sub.failed).toEqual(["capture_root_is_repository_root"]);

    const nested = join(clone, "vendor", "other");
    write(nested, "x.txt", "x\n");
    git(nested, ["init", "--quiet"]);
    expect((await collectBaselineEvidence(clone, { canonicalRef: "main" })).failed).toEqual(["no_untracked_files"]);

    const lonely = initRepository();
    git(lonely, ["remote", "add", "origin", `file://${temporaryDirectory()}/missing.git`]);
    const unreachable = await collectBaselineEvidence(lonely, { canonicalRef: "main" });
    expect(unreachable.evidence.fetched).toBe(false);
    expect(unreachable.failed).toContain("remote_ref_fetched");
  });
});
