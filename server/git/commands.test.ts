// Argument building and parsing, without running git.
import { describe, expect, it } from "vitest";
import { isStrataError } from "../domain/errors.ts";
import {
  blobContents,
  changedFilesBetween,
  commitText,
  configMatching,
  fetchBranch,
  ignoredPaths,
  indexFileEntries,
  lineEndingAttributes,
  oidArg,
  parseRawDiff,
  pathGroups,
  pathsWithCarriageReturns,
  parseTouchedPaths,
  pathsTouchedBy,
  resolveCommit,
  setIndexEntries,
  treeEntries,
  treePatch,
  refUpdate,
  updateIndexFromWorktree,
  updateRefs,
  wholeFilesInPatch,
  WHOLE_FILE_THRESHOLD_BYTES,
} from "./commands.ts";
import { parseStatus, parseUnreadableWarnings, statusCommand } from "./status.ts";
import type { GitOutput } from "./runner.ts";

const A = "a".repeat(40);
const B = "b".repeat(40);
const Z = "0".repeat(40);

function output(stdout: string | Buffer, exitCode = 0): GitOutput {
  return { stdout: Buffer.isBuffer(stdout) ? stdout : Buffer.from(stdout), stderr: "", exitCode };
}

function refused(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch (error) {
    return isStrataError(error, "INVALID_INPUT");
  }
}

describe("status --porcelain=v2 -z", () => {
  it("asks for one pass with everything a capture needs, on the given index", () => {
    const command = statusCommand({ untracked: "all", ignored: true, ignoreSubmodules: "dirty", indexFile: "/x/idx" });
    expect(command.args).toEqual(
      expect.arrayContaining(["status", "--porcelain=v2", "-z", "--branch", "--no-renames", "--ignored=matching"]),
    );
    expect(command.env).toEqual({ GIT_INDEX_FILE: "/x/idx" });
    const writing = statusCommand({
      untracked: "all",
      ignored: false,
      ignoreSubmodules: "dirty",
      indexFile: "/x/idx",
      writeRefreshedIndex: true,
    });
    expect(writing.env).toEqual({ GIT_INDEX_FILE: "/x/idx", GIT_OPTIONAL_LOCKS: "1" });
    expect(statusCommand({ untracked: "no", ignored: false, ignoreSubmodules: "none" }).env).toEqual({});
  });

  it("reads headers, changed, renamed, unmerged, untracked and ignored records; names keep their spaces", () => {
    const records = [
      `# branch.oid ${A}`,
      "# branch.head feature/x",
      `1 .M N... 100644 100644 100644 ${A} ${A} src/file name.ts`,
      `1 A. N... 000000 100644 100644 ${Z} ${B} new.txt`,
      `1 .M SC.. 160000 160000 160000 ${A} ${A} lib`,
      `2 R. N... 100644 100644 100644 ${A} ${A} R100 renamed.txt`,
      "original.txt",
      `u UU N... 100644 100644 100644 100644 ${A} ${B} ${A} conflict.txt`,
      "? naïve café.txt",
      "? tools/",
      "! node_modules/",
    ];
    const parsed = parseStatus(Buffer.from(`${records.join("\0")}\0`));
    expect(parsed.head).toBe(A);
    expect(parsed.branch).toBe("feature/x");
    expect(parsed.entries).toEqual([
      expect.objectContaining({ kind: "changed", x: ".", y: "M", path: "src/file name.ts", oidHead: A }),
      expect.objectContaining({ kind: "changed", x: "A", y: ".", modeHead: "000000", oidIndex: B, path: "new.txt" }),
      expect.objectContaining({ kind: "changed", submodule: "SC..", path: "lib" }),
      expect.objectContaining({ kind: "changed", x: "R", path: "renamed.txt" }),
      { kind: "unmerged", x: "U", y: "U", submodule: "N...", path: "conflict.txt" },
      { kind: "untracked", path: "naïve café.txt" },
      { kind: "untracked", path: "tools/" },
      { kind: "ignored", path: "node_modules/" },
    ]);
  });

  it("reads an unborn branch and a detached HEAD", () => {
    expect(parseStatus(Buffer.from("# branch.oid (initial)\0# branch.head main\0"))).toEqual({
      head: null,
      branch: "main",
      entries: [],
    });
    expect(parseStatus(Buffer.from(`# branch.oid ${A}\0# branch.head (detached)\0`)).branch).toBeNull();
  });

  it("refuses names that are not UTF-8 and lines it cannot read", () => {
    const bad = Buffer.concat([Buffer.from("? caf"), Buffer.from([0xe9]), Buffer.from(".txt\0")]);
    expect(() => parseStatus(bad)).toThrow(/not valid UTF-8/);
    expect(() => parseStatus(Buffer.from("X what\0"))).toThrow(/cannot read/);
  });

  it("finds the directories git could only warn about", () => {
    const stderr = "warning: could not open directory 'secret dir/': Permission denied\n";
    expect(parseUnreadableWarnings(stderr)).toEqual(["secret dir/"]);
  });
});

describe("argument guards", () => {
  it("refuses refs and object ids that could be read as options or carry control characters", () => {
    expect(refused(() => resolveCommit("--upload-pack=evil"))).toBe(true);
    expect(refused(() => resolveCommit("main\nrm"))).toBe(true);
    expect(refused(() => resolveCommit("has space"))).toBe(true);
    expect(refused(() => oidArg("-x"))).toBe(true);
    expect(refused(() => oidArg("abc"))).toBe(true);
    expect(refused(() => refUpdate("-d", A))).toBe(true);
    expect(refused(() => refUpdate("refs/strata/x", "-x"))).toBe(true);
    expect(refused(() => commitText(A, [], "msg", { name: "a>b", email: "s@x", when: 0 }))).toBe(true);
    expect(refused(() => fetchBranch("--exec=evil", "main", 1000))).toBe(true);
    expect(refused(() => fetchBranch("origin", "-main", 1000))).toBe(true);
    expect(resolveCommit("main").args).toEqual([
      "rev-parse",
      "--verify",
      "--quiet",
      "--end-of-options",
      "main^{commit}",
    ]);
  });

  it("puts paths after -- or on stdin, never among options", () => {
    expect(treeEntries(A, ["--force", "-rf"]).args.slice(-3)).toEqual(["--", "--force", "-rf"]);
    const update = updateIndexFromWorktree("/idx", ["-n", "a b"]);
    expect(update.args).not.toContain("-n");
    expect(update.input).toBe("-n\0a b\0");
    expect(refused(() => updateIndexFromWorktree("/idx", ["bad\0path"]))).toBe(true);
    expect(refused(() => treeEntries(A, ["bad\0path"]))).toBe(true);
  });

  it("feeds index entries as mode, id, tab, path; mode 0 removes", () => {
    const command = setIndexEntries("/idx", [
      { mode: "100644", oid: A, path: "a file" },
      { mode: "0", oid: Z, path: "gone" },
    ]);
    expect(command.args).toEqual(["-c", "core.splitIndex=false", "update-index", "-z", "--index-info"]);
    expect(command.input).toBe(`100644 ${A}\ta file\u00000 ${Z}\tgone\u0000`);
    expect(command.env).toMatchObject({ GIT_INDEX_FILE: "/idx" });
  });
});

describe("parsers", () => {
  it("reads configuration pairs, keys and values apart", () => {
    const command = configMatching("^remote\\..*\\.url$");
    expect(command.okExitCodes).toContain(1);
    expect(command.parse(output("remote.origin.url\nhttps://h/r\0core.autocrlf\ntrue\0"))).toEqual([
      ["remote.origin.url", "https://h/r"],
      ["core.autocrlf", "true"],
    ]);
    expect(command.parse(output("", 1))).toEqual([]);
  });

  it("reads tree entries", () => {
    const parsed = treeEntries(A, ["x"]).parse(
      output(`100755 blob ${B}\tbin/run me\u0000160000 commit ${A}\tlib\u0000`),
    );
    expect(parsed).toEqual([
      { mode: "100755", oid: B, path: "bin/run me" },
      { mode: "160000", oid: A, path: "lib" },
    ]);
  });

  it("reads the paths each commit touches, in the order the commits were given", () => {
    expect(pathsTouchedBy([A, B]).input).toBe(`${A}\n${B}\n`);
    const touched = parseTouchedPaths([A, ".env", "src/a.ts", B, "README.md"], [A, B]);
    expect([...touched]).toEqual([
      [A, [".env", "src/a.ts"]],
      [B, ["README.md"]],
    ]);
    expect([...parseTouchedPaths([A, B], [A, B])]).toEqual([
      [A, []],
      [B, []],
    ]);
  });

  it("evaluates a pattern file alone in a scratch repository", () => {
    const command = ignoredPaths(["a.tmp"], {
      patternFile: {
        file: "/r/.strata/snapshot-ignore",
        scratchGitDir: "/c/scratch.git",
        emptyWorkTree: "/c/empty",
        ignoreCase: true,
      },
    });
    expect(command.args).toEqual([
      "--git-dir=/c/scratch.git",
      "--work-tree=/c/empty",
      "-c",
      "core.excludesFile=/r/.strata/snapshot-ignore",
      "-c",
      "core.ignoreCase=true",
      "check-ignore",
      "-z",
      "--stdin",
      "--no-index",
    ]);
    expect(command.parse(output("a.tmp\0"))).toEqual(new Set(["a.tmp"]));
  });

  it("builds patches that any git applies the same way, naming binary and large files by object id", () => {
    const patch = treePatch(A, B, 100);
    expect(patch.args).toEqual(
      expect.arrayContaining(["--full-index", "--no-renames", "--no-ext-diff", "--no-textconv"]),
    );
    expect(patch.args).not.toContain("--binary");
    expect(patch.args.slice(0, 2)).toEqual(["-c", `core.bigFileThreshold=${WHOLE_FILE_THRESHOLD_BYTES}`]);
    expect(patch.args.slice(-2)).toEqual([A, B]);
    expect(patch.maxOutputBytes).toBe(100);
  });

  it("finds the files a patch carries whole in its section headers only", () => {
    const zero = "0".repeat(40);
    const C = "c".repeat(40);
    const patch = [
      `diff --git a/img.png b/img.png`,
      `index ${A}..${B} 100644`,
      `Binary files a/img.png and b/img.png differ`,
      `diff --git a/notes.txt b/notes.txt`,
      `index ${A}..${C} 100644`,
      `--- a/notes.txt`,
      `+++ b/notes.txt`,
      `@@ -1 +1 @@`,
      `-Binary files a/x and b/x differ`,
      `+diff --git a/y b/y`,
      `diff --git a/gone.bin b/gone.bin`,
      `deleted file mode 100644`,
      `index ${B}..${zero}`,
      `Binary files a/gone.bin and /dev/null differ`,
      `diff --git a/new.bin b/new.bin`,
      `new file mode 100755`,
      `index ${zero}..${C}`,
      `Binary files /dev/null and b/new.bin differ`,
      ``,
    ].join("\n");
    expect(wholeFilesInPatch(Buffer.from(patch))).toEqual([B, C]);
    expect(wholeFilesInPatch(Buffer.alloc(0))).toEqual([]);
  });

  it("reads blobs in one cat-file --batch and refuses one it did not print", () => {
    const command = blobContents([A, B], 1000);
    expect(command.args).toEqual(["cat-file", "--batch"]);
    expect(command.input).toBe(`${A}\n${B}\n`);
    const printed = Buffer.concat([
      Buffer.from(`${A} blob 3\n`),
      Buffer.from([0, 10, 255]),
      Buffer.from(`\n${B} blob 0\n\n`),
    ]);
    const blobs = command.parse(output(printed));
    expect([...(blobs.get(A) ?? [])]).toEqual([0, 10, 255]);
    expect(blobs.get(B)?.length).toBe(0);
    expect(() => command.parse(output(`${A} missing\n`))).toThrow(/could not read/);
    expect(() => command.parse(output(Buffer.from(`${A} blob 1\nx\n`)))).toThrow(/did not print/);
  });

  it("commits with a fixed identity and date, and moves refs without hooks", () => {
    expect(commitText(A, [B], "msg\n", { name: "Strata", email: "s@x", when: 1_700_000_000.5 })).toBe(
      `tree ${A}\nparent ${B}\nauthor Strata <s@x> 1700000000 +0000\ncommitter Strata <s@x> 1700000000 +0000\n\nmsg\n`,
    );
    const moves = updateRefs(refUpdate("refs/strata/snapshots/a/b", A));
    expect(moves.args).toEqual(["-c", "core.hooksPath=/dev/null", "update-ref", "--no-deref", "--stdin", "-z"]);
    expect(moves.input).toBe(`update refs/strata/snapshots/a/b\u0000${A}\u0000\u0000`);
  });
});

describe("line endings the repository converts", () => {
  it("searches the index for lines ending in CR, everywhere or in literal paths", () => {
    const everywhere = pathsWithCarriageReturns("/tmp/index", null);
    expect(everywhere.args).toContain("--cached");
    expect(everywhere.args.at(-1)).toBe("\r$");
    expect(everywhere.env).toEqual({ GIT_INDEX_FILE: "/tmp/index" });
    const some = pathsWithCarriageReturns("/tmp/index", ["a*b.txt", "--force"]);
    expect(some.args[0]).toBe("--literal-pathspecs");
    expect(some.args.slice(-3)).toEqual(["--", "a*b.txt", "--force"]);
    expect(some.parse(output("a*b.txt\0--force\0"))).toEqual(["a*b.txt", "--force"]);
    expect(some.okExitCodes).toContain(1);
  });

  it("keeps each group of path arguments small", () => {
    const paths = Array.from({ length: 5000 }, (_, i) => `packages/fixtures/case-${i}/input.js`);
    const groups = pathGroups(paths);
    expect(groups.flat()).toEqual(paths);
    expect(groups.length).toBeGreaterThan(1);
    for (const group of groups) expect(group.join(" ").length).toBeLessThan(64 * 1024);
    expect(pathGroups([])).toEqual([]);
  });

  it("reads check-attr's triplets, by path", () => {
    const call = lineEndingAttributes("/tmp/index", ["a b.txt", "c"]);
    expect(call.args).toEqual(["check-attr", "--cached", "-z", "--stdin", "text", "eol", "crlf"]);
    expect(call.input).toBe("a b.txt\0c\0");
    const parsed = call.parse(output("a b.txt\0text\0set\0a b.txt\0eol\0lf\0c\0text\0unspecified\0"));
    expect(parsed.get("a b.txt")).toEqual({ text: "set", eol: "lf" });
    expect(parsed.get("c")).toEqual({ text: "unspecified" });
  });

  it("reads stage-0 index entries and raw tree differences", () => {
    const entries = indexFileEntries("/tmp/index").parse(
      output([`100644 ${A} 0\ta.txt`, `100644 ${B} 1\tconflict`, `120000 ${B} 0\tlink`, ""].join("\u0000")),
    );
    expect([...entries.keys()]).toEqual(["a.txt", "link"]);
    expect(entries.get("a.txt")).toEqual({ mode: "100644", oid: A, path: "a.txt" });

    expect(changedFilesBetween(A, B).args).toEqual(["diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", A, B]);
    const zero = "0".repeat(40);
    expect(
      parseRawDiff([
        `:000000 100644 ${zero} ${A} A`,
        "new file.txt",
        `:100644 100755 ${A} ${B} M`,
        "bin/tool",
        `:100644 000000 ${A} ${zero} D`,
        "gone",
      ]),
    ).toEqual([
      { path: "new file.txt", mode: "100644", oid: A },
      { path: "bin/tool", mode: "100755", oid: B },
      { path: "gone", mode: "000000", oid: null },
    ]);
  });
});
