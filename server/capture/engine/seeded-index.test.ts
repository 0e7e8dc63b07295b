// The seeded private index a verify compares through: it must never hide a change the plain
// index of the recorded tree would show (assume-unchanged and skip-worktree entries, files
// changed in the second their index was written, every index version), and it never writes the
// checkout's own index.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  commitAll,
  git,
  initRepository,
  removeTemporaryDirectories,
  spyGit,
  temporaryDirectory,
  write,
} from "../../testing/repos.ts";
import { captureCheckout } from "./capture.ts";
import { createGitRunner } from "../../git/runner.ts";
import { seedIndexWithTree, summarizeIndex } from "./seeded-index.ts";
import { compareWorktree } from "../../restore/engine/worktree-drift.ts";

afterAll(removeTemporaryDirectories);

function committed() {
  const root = initRepository({ "a.txt": "a\n", "dir/b.txt": "b\n", "c.txt": "c\n" });
  write(root, "a.txt", "a, second\n");
  commitAll(root, "second");
  const head = git(root, ["rev-parse", "HEAD"]).trim();
  const tree = git(root, ["rev-parse", "HEAD^{tree}"]).trim();
  return { root, recorded: { head, tree } };
}

const indexOf = (root: string) => readFileSync(join(root, ".git", "index"));

describe("summarizeIndex", () => {
  it.each([2, 3, 4])("reads index version %i: unchecked entries, and the tree its cache holds", (version) => {
    const { root, recorded } = committed();
    git(root, ["update-index", `--index-version=${version}`]);
    git(root, ["write-tree"]);
    expect(summarizeIndex(indexOf(root), 20)).toEqual({ unchecked: false, tree: recorded.tree });
    write(root, "c.txt", "c, staged\n");
    git(root, ["add", "c.txt"]);
    expect(summarizeIndex(indexOf(root), 20)).toEqual({ unchecked: false, tree: null });
    git(root, ["update-index", "--assume-unchanged", "dir/b.txt"]);
    expect(summarizeIndex(indexOf(root), 20)?.unchecked).toBe(true);
    git(root, ["update-index", "--no-assume-unchanged", "dir/b.txt"]);
    git(root, ["update-index", "--skip-worktree", "a.txt"]);
    expect(summarizeIndex(indexOf(root), 20)?.unchecked).toBe(true);
  });

  it("refuses what is not an index", () => {
    expect(summarizeIndex(Buffer.from("not an index at all"), 20)).toBeNull();
    const { root } = committed();
    expect(summarizeIndex(indexOf(root).subarray(0, 60), 20)).toBeNull();
  });
});

/** Paths of an index whose entries carry stat data (`ls-files --debug` shows mtime 0:0 for none). */
function onIndex(root: string, indexFile: string, args: string[]): string {
  return execFileSync("git", args, { cwd: root, env: { ...process.env, GIT_INDEX_FILE: indexFile } }).toString();
}

function entriesWithStat(root: string, indexFile: string): string[] {
  const out = onIndex(root, indexFile, ["ls-files", "--debug"]);
  return out
    .split(/\n(?=\S)/)
    .filter((entry) => !/mtime: 0:0/.test(entry))
    .map((entry) => entry.split("\n")[0]!);
}

describe("seedIndexWithTree", () => {
  it("keeps the checkout's stat data for entries that hold the recorded content, also when files changed", async () => {
    const { root, recorded } = committed();
    // The recorded tree has another a.txt than the checkout's index, and the file changed since.
    write(root, "a.txt", "a, edited after the commit\n");
    write(root, "c.txt", "c, edited too\n");
    git(root, ["status", "--porcelain"]);
    const indexFile = join(temporaryDirectory(), "index");
    const first = git(root, ["rev-parse", "HEAD~1^{tree}"]).trim();
    await seedIndexWithTree(createGitRunner({ cwd: root }), {
      gitDir: join(root, ".git"),
      indexFile,
      tree: first,
      objectFormat: "sha1",
    });
    expect(onIndex(root, indexFile, ["write-tree"]).trim()).toBe(first);
    // a.txt differs between the trees (no stat data); the others keep theirs.
    expect(entriesWithStat(root, indexFile)).toEqual(["c.txt", "dir/b.txt"]);
    expect(recorded.tree).not.toBe(first);
  });
});

describe("compareWorktree through the seeded index", () => {
  it("sees a change to an assume-unchanged or skip-worktree file", async () => {
    const { root, recorded } = committed();
    git(root, ["update-index", "--assume-unchanged", "dir/b.txt"]);
    write(root, "dir/b.txt", "b, hidden from git status\n");
    expect(git(root, ["status", "--porcelain"])).toBe("");
    expect((await compareWorktree(root, recorded)).drifted).toEqual([{ path: "dir/b.txt", change: "modified" }]);

    git(root, ["update-index", "--no-assume-unchanged", "dir/b.txt"]);
    git(root, ["checkout", "--", "dir/b.txt"]);
    git(root, ["update-index", "--skip-worktree", "c.txt"]);
    write(root, "c.txt", "c, also hidden\n");
    expect((await compareWorktree(root, recorded)).drifted).toEqual([{ path: "c.txt", change: "modified" }]);
  });

  it("sees a same-size change made in the second the index was written, and leaves the index as it was", async () => {
    const { root, recorded } = committed();
    const index = join(root, ".git", "index");
    const when = statSync(index).mtime;
    write(root, "c.txt", "C\n");
    utimesSync(join(root, "c.txt"), when, when);
    const before = indexOf(root);
    const comparison = await compareWorktree(root, recorded);
    expect(comparison.drifted).toEqual([{ path: "c.txt", change: "modified" }]);
    expect(indexOf(root).equals(before)).toBe(true);
  });

  it("reads the index of the checkout's last capture when that one holds the recorded tree, never writing the checkout's", async () => {
    const { root } = committed();
    write(root, "a.txt", "a, edited after the commit\n");
    write(root, "new.txt", "new\n");
    const captured = await captureCheckout(root);
    if (captured.outcome !== "captured") throw new Error(captured.outcome);
    const recorded = { head: captured.manifest.head, tree: captured.manifest.tree };
    const captureIndex = join(root, ".git", "strata", "index-all");
    expect(summarizeIndex(readFileSync(captureIndex), 20)?.tree).toBe(recorded.tree);
    const own = indexOf(root);
    expect(await compareWorktree(root, recorded)).toMatchObject({ drifted: [], headMoved: false, treeAvailable: true });
    expect(summarizeIndex(readFileSync(captureIndex), 20)?.tree).toBe(recorded.tree);
    expect(indexOf(root).equals(own)).toBe(true);
    // A change after the capture, the same size and in the second the capture's index was written.
    const when = statSync(captureIndex).mtime;
    write(root, "new.txt", "NEW\n");
    utimesSync(join(root, "new.txt"), when, when);
    write(root, "c.txt", "c, edited after the capture\n");
    expect((await compareWorktree(root, recorded)).drifted).toEqual([
      { path: "c.txt", change: "modified" },
      { path: "new.txt", change: "modified" },
    ]);
  });

  it("refreshes the capture's index once, as git status does its own, unless a capture holds it", async () => {
    const { root } = committed();
    write(root, "a.txt", "a, edited after the commit\n");
    const captured = await captureCheckout(root);
    if (captured.outcome !== "captured") throw new Error(captured.outcome);
    const recorded = { head: captured.manifest.head, tree: captured.manifest.tree };
    const captureIndex = join(root, ".git", "strata", "index-all");
    // The edit is dated in the second the capture wrote its index: git must re-read it.
    const written = statSync(captureIndex).mtime;
    utimesSync(join(root, "a.txt"), written, written);
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    const lock = join(root, ".git", "strata", "capture-all.lock");
    writeFileSync(lock, "4242\n");
    // The index's own date is what git measures "changed in the same second" against.
    const dated = () => statSync(captureIndex).mtimeMs;
    const before = dated();
    expect((await compareWorktree(root, recorded)).drifted).toEqual([]);
    expect(dated()).toBe(before);
    rmSync(lock);

    expect((await compareWorktree(root, recorded)).drifted).toEqual([]);
    const refreshed = dated();
    expect(Math.floor(refreshed / 1000)).toBeGreaterThan(Math.floor(statSync(join(root, "a.txt")).mtimeMs / 1000));
    expect(summarizeIndex(readFileSync(captureIndex), 20)?.tree).toBe(recorded.tree);
    // Refreshed once: the next verify has nothing to re-read or write.
    expect((await compareWorktree(root, recorded)).drifted).toEqual([]);
    expect(dated()).toBe(refreshed);
    // The next capture still trusts the index it left: it does not rebuild the tree.
    const spy = spyGit();
    expect((await captureCheckout(root, { previous: captured.manifest, gitPath: spy.gitPath })).outcome).toBe(
      "unchanged",
    );
    expect(spy.calls().filter((c) => / write-tree/.test(c))).toEqual([]);
    // Compared through the refreshed index, a deletion, an edit and a new file are told apart.
    rmSync(join(root, "dir", "b.txt"));
    write(root, "c.txt", "c, edited after the capture\n");
    write(root, "extra.txt", "new\n");
    expect((await compareWorktree(root, recorded)).drifted).toEqual([
      { path: "c.txt", change: "modified" },
      { path: "dir/b.txt", change: "deleted" },
      { path: "extra.txt", change: "added" },
    ]);
  });

  it("compares a checkout whose index holds another tree, or has unresolved conflicts", async () => {
    const { root, recorded } = committed();
    write(root, "c.txt", "staged only\n");
    git(root, ["add", "c.txt"]);
    git(root, ["checkout", "--", "."]);
    write(root, "c.txt", "c\n");
    // The index says c.txt is "staged only"; the files are still the recorded tree.
    expect((await compareWorktree(root, recorded)).drifted).toEqual([]);

    git(root, ["reset", "--quiet", "--hard"]);
    git(root, ["checkout", "--quiet", "-b", "other", "HEAD~1"]);
    write(root, "a.txt", "a, other\n");
    commitAll(root, "other");
    git(root, ["checkout", "--quiet", "main"]);
    expect(() => git(root, ["merge", "--quiet", "other"])).toThrow();
    const conflicted = await compareWorktree(root, recorded);
    expect(conflicted.drifted).toEqual([{ path: "a.txt", change: "modified" }]);
  });
});
