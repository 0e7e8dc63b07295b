// The lines of files known only through patches: real git makes the patches (as a capture does,
// full then incremental), the diff between two versions built on one HEAD is rendered from them
// alone, and git applies that diff to the first version's real bytes to get the second's.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { git, initRepository, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { parsePatch } from "./patch-sections.ts";
import { applyHunks, newHeadLines, renderDiff, unknownHead, type HeadLines, type SparseText } from "./sparse-text.ts";

afterAll(removeTemporaryDirectories);

/** A small deterministic random source (tests must not depend on luck). */
function random(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

function edit(lines: string[], next: (n: number) => number, label: string): string[] {
  const out = [...lines];
  for (let k = 0, edits = 1 + next(4); k < edits; k += 1) {
    const at = next(out.length + 1);
    switch (next(3)) {
      case 0:
        out.splice(at, 0, `${label} inserted ${k}`);
        break;
      case 1:
        out.splice(at, 1 + next(3));
        break;
      default:
        if (at < out.length) out[at] = `${label} changed ${k}`;
    }
  }
  return out;
}

/** The patch from one commit to the next, as a capture writes it. */
function patchBetween(root: string, from: string, to: string): Buffer {
  return execFileSync(
    "git",
    ["diff-tree", "-r", "-p", "--full-index", "--no-renames", "--src-prefix=a/", "--dst-prefix=b/", from, to],
    { cwd: root },
  );
}

function commit(root: string, content: string | null, message: string): string {
  if (content === null) git(root, ["rm", "--quiet", "f.txt"]);
  else write(root, "f.txt", content);
  git(root, ["add", "-A"]);
  git(root, ["commit", "--quiet", "--allow-empty", "-m", message]);
  return git(root, ["rev-parse", "HEAD"]).trim();
}

/** A version of f.txt after following `patches` from HEAD (null: deleted). */
function follow(patches: Buffer[], head: HeadLines): SparseText | null {
  let text: SparseText | null = unknownHead();
  for (const patch of patches) {
    const section = parsePatch(patch).sections.find((s) => s.path === "f.txt");
    if (!section) continue;
    if (section.deleted) {
      applyHunks(text ?? [], section.hunks, head, true);
      text = null;
    } else text = applyHunks(text ?? [], section.hunks, head);
  }
  return text;
}

/** Git applies `diff` to `before` (null: no file) and gives the file it leads to. */
function applied(before: string | null, diff: string, deleted: boolean): string | null {
  const dir = temporaryDirectory("strata-apply-");
  if (before !== null) writeFileSync(join(dir, "f.txt"), before);
  const header =
    before === null
      ? "diff --git a/f.txt b/f.txt\nnew file mode 100644\n--- /dev/null\n+++ b/f.txt\n"
      : deleted
        ? "diff --git a/f.txt b/f.txt\ndeleted file mode 100644\n--- a/f.txt\n+++ /dev/null\n"
        : "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n";
  writeFileSync(join(dir, "x.patch"), header + diff);
  execFileSync("git", ["apply", "--recount", "x.patch"], { cwd: dir });
  try {
    return readFileSync(join(dir, "f.txt"), "utf8");
  } catch {
    return null;
  }
}

const text = (lines: string[], eol = true) => (lines.length === 0 ? "" : lines.join("\n") + (eol ? "\n" : ""));

describe("sparse text", () => {
  it("renders, from patches alone, a diff git applies exactly, across 12 random histories on one HEAD", () => {
    const headLines = Array.from({ length: 80 }, (_, i) => `line ${i + 1}`);
    const root = initRepository({ "f.txt": text(headLines) });
    const head = git(root, ["rev-parse", "HEAD"]).trim();
    for (let seed = 1; seed <= 12; seed += 1) {
      const next = random(seed);
      // A: two captures (a full patch, then an incremental one); B: one full patch.
      const a1 = edit(headLines, next, "a1");
      const a = edit(a1, next, "a2");
      const b = edit(headLines, next, "b");
      const noEol = next(4) === 0;
      git(root, ["checkout", "--quiet", "--detach", head]);
      const ca1 = commit(root, text(a1), "a1");
      const ca = commit(root, text(a, !noEol), "a");
      git(root, ["checkout", "--quiet", "--detach", head]);
      const cb = commit(root, text(b), "b");
      const known = newHeadLines();
      const va = follow([patchBetween(root, head, ca1), patchBetween(root, ca1, ca)], known);
      const vb = follow([patchBetween(root, head, cb)], known);
      const rendered = renderDiff(va!, vb!, known, Number.MAX_SAFE_INTEGER);
      expect({ seed, partial: rendered.partial }).toEqual({ seed, partial: false });
      expect({ seed, file: applied(text(a, !noEol), rendered.text, false) }).toEqual({ seed, file: text(b) });
    }
  }, 120_000);

  it("compares a file one side deleted with the other side's version of it, and one neither changed", () => {
    const lines = Array.from({ length: 30 }, (_, i) => `row ${i}`);
    const root = initRepository({ "f.txt": text(lines) });
    const head = git(root, ["rev-parse", "HEAD"]).trim();
    const gone = commit(root, null, "deleted");
    git(root, ["checkout", "--quiet", "--detach", head]);
    const changed = commit(root, text(lines.map((l, i) => (i === 20 ? "row twenty" : l))), "changed");
    const known = newHeadLines();
    expect(follow([patchBetween(root, head, gone)], known)).toBeNull();
    const kept = follow([patchBetween(root, head, changed)], known)!;
    // The deletion showed every line of HEAD's file, so the kept version is known whole.
    const diff = renderDiff(kept, [], known, Number.MAX_SAFE_INTEGER);
    expect(diff).toMatchObject({ deletions: 30, additions: 0, partial: false });
    expect(applied(text(lines.map((l, i) => (i === 20 ? "row twenty" : l))), diff.text, true)).toBeNull();
    // HEAD's version against itself: nothing differs, though none of it is known.
    expect(renderDiff(unknownHead(), unknownHead(), newHeadLines(), 100).changed).toBe(false);
  });

  it("reads quoted paths, and refuses a hunk whose line counts do not add up", () => {
    const root = initRepository({ "café menu.txt": "soup\n" });
    const before = git(root, ["rev-parse", "HEAD"]).trim();
    write(root, "café menu.txt", "soup\nbread\n");
    git(root, ["commit", "--quiet", "-am", "more"]);
    const patch = patchBetween(root, before, git(root, ["rev-parse", "HEAD"]).trim());
    expect(patch.toString()).toContain('"a/caf\\303\\251 menu.txt"');
    const { sections, unreadable } = parsePatch(patch);
    expect(unreadable).toEqual([]);
    expect(sections.map((s) => [s.path, s.hunks.length])).toEqual([["café menu.txt", 1]]);
    const broken = Buffer.from(
      "diff --git a/x b/x\nindex 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n",
    );
    expect(parsePatch(broken)).toEqual({ sections: [], unreadable: ["x"] });
  });
});
