import { describe, expect, it } from "vitest";
import { describeRestoreResult } from "./restore-notice.ts";

const COMMIT = "8e0b51c2a7d6".padEnd(40, "0");
const TIP = "3f2a9c1d7b04".padEnd(40, "1");

describe("describeRestoreResult", () => {
  it("reads the early form: a flat list of missing entries", () => {
    const notice = describeRestoreResult({
      outcome: "degraded",
      result: { missing: ["src/app.ts", COMMIT, "bundle"], treeId: null },
    });
    expect(notice.missing).toEqual({ commits: [COMMIT], changeSets: [], paths: ["src/app.ts"], other: ["bundle"] });
    expect(notice.cause).toBeNull();
    expect(notice.nextStep).toMatch(/discard/);
    expect(notice.summary).toBe("Restored partly; missing 1 commit, 1 path, bundle.");
  });

  it("reads the ladder's full result: holds, missing by kind, cause and next step", () => {
    const notice = describeRestoreResult({
      outcome: "degraded",
      result: {
        holds: { stage: "closest-commit", head: TIP, tree: "ab".repeat(20), basis: "branch-tip" },
        missing: {
          commits: [COMMIT],
          changeSets: [{ uuid: "0b6f7f7e-1111-4222-8333-944445555666", reason: "commit unavailable" }],
          paths: [{ path: "README.md" }],
          cause: "COMMITS_UNAVAILABLE",
        },
      },
    });
    expect(notice.holds).toEqual({ stage: "closest-commit", head: TIP, tree: "ab".repeat(20), basis: "branch-tip" });
    expect(notice.missing.changeSets).toEqual(["0b6f7f7e-1111-4222-8333-944445555666 (commit unavailable)"]);
    expect(notice.missing.paths).toEqual(["README.md"]);
    expect(notice.cause).toBe("COMMITS_UNAVAILABLE");
    expect(notice.nextStep).toMatch(/Push the missing commits/);
    expect(notice.summary).toBe(
      `Restored commit ${TIP.slice(0, 12)} (branch-tip); missing 1 commit, 1 change set, 1 path.`,
    );
  });

  it("reads the kind:value entries reportRestore takes, and the worker's full result (restore-result.ts)", () => {
    const uuid = "0b6f7f7e-1111-4222-8333-944445555666";
    const flat = describeRestoreResult({
      outcome: "degraded",
      result: { missing: [`commit:${COMMIT}`, `change-set:${uuid}`, "path:src/a.ts", `tree:${"cd".repeat(20)}`] },
    });
    expect(flat.missing).toEqual({
      commits: [COMMIT],
      changeSets: [uuid],
      paths: ["src/a.ts"],
      other: [`recorded tree ${"cd".repeat(6)}`],
    });
    const full = describeRestoreResult({
      outcome: "degraded",
      result: {
        version: 1,
        status: "degraded",
        snapshotId: "s1",
        recorded: { head: COMMIT, tree: "cd".repeat(20), branch: "main" },
        holds: {
          stage: "changes",
          head: COMMIT,
          tree: "ef".repeat(20),
          branch: "main",
          basis: "recorded-head",
          appliedChangeSets: [],
        },
        missing: {
          commits: [],
          changeSets: [{ uuid, kind: "incremental", digest: "a".repeat(64), size: 10, reason: "blob-missing" }],
          paths: ["src/a.ts"],
          pathsComplete: true,
          cause: "BLOB_MISSING",
          causeMessage: "Blob aaaa is not stored.",
          nextStep: "Store blob aaaaaaaaaaaa again, then restore again.",
        },
        warnings: [{ kind: "omitted-content", message: "2 files were left out at capture." }],
      },
    });
    expect(full.holds).toEqual({ stage: "changes", head: COMMIT, tree: "ef".repeat(20), basis: "recorded-head" });
    expect(full.recorded).toEqual({ head: COMMIT, tree: "cd".repeat(20), branch: "main" });
    expect(full.missing.changeSets).toEqual([`${uuid} (blob-missing)`]);
    expect(full).toMatchObject({
      cause: "BLOB_MISSING",
      causeMessage: "Blob aaaa is not stored.",
      nextStep: "Store blob aaaaaaaaaaaa again, then restore again.",
      warnings: [{ kind: "omitted-content", message: "2 files were left out at capture." }],
    });
  });

  it("prefers the worker's own next step, and says when nothing was restored", () => {
    const notice = describeRestoreResult({
      outcome: "unrestored",
      result: { reason: "commits-unavailable", nextStep: "Run git ls-remote origin once, then retry." },
    });
    expect(notice.nextStep).toBe("Run git ls-remote origin once, then retry.");
    expect(notice.cause).toBe("commits-unavailable");
    expect(notice.summary).toMatch(/^Nothing was restored; missing unknown content\./);
  });

  it("copes with no result at all", () => {
    const notice = describeRestoreResult({ outcome: "degraded", result: null, errorCode: "BLOB_MISSING" });
    expect(notice.cause).toBe("BLOB_MISSING");
    expect(notice.nextStep).toMatch(/Upload the missing blobs/);
  });
});
