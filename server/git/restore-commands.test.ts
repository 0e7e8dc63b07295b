// The restore's git calls and parsers, without running git.
import { describe, expect, it } from "vitest";
import { StrataError } from "../domain/errors.ts";
import {
  applyPatchToIndex,
  BATCH_SSH_COMMAND,
  fetchRefspecs,
  hasCommit,
  initRestoreRepository,
  parseNeedsUpdate,
  setConfig,
  setIndexEntriesAfresh,
  treeFiles,
  unbundle,
} from "./restore-commands.ts";
import { fetchableRemotes, parseBundleHeader } from "../restore/engine/restore-history.ts";
import { pathsInPatch, unquoteGitPath } from "../restore/engine/restore-patches.ts";

const OID = "a".repeat(40);

describe("restore git calls as data", () => {
  it("runs with hooks, fsmonitor and maintenance off, and fetches only over allowed transports", () => {
    const fetch = fetchRefspecs("https://example.invalid/a.git", [`${OID}:refs/remotes/strata/pushed/${OID}`], {
      shallow: true,
      timeoutMs: 1000,
      sshCommand: BATCH_SSH_COMMAND,
    });
    expect(fetch.args).toEqual(
      expect.arrayContaining(["core.hooksPath=/dev/null", "protocol.allow=never", "--depth=1"]),
    );
    expect(fetch.args.slice(-3)).toEqual([
      "--",
      "https://example.invalid/a.git",
      `${OID}:refs/remotes/strata/pushed/${OID}`,
    ]);
    expect(fetch.env).toEqual({ GIT_SSH_COMMAND: "ssh -o BatchMode=yes -o ConnectTimeout=15" });
    expect(fetch.timeoutMs).toBe(1000);
    expect(initRestoreRepository("/tmp/x", "sha256").args).toEqual(
      expect.arrayContaining(["init", "--template=", "--object-format=sha256", "--", "/tmp/x"]),
    );
    expect(applyPatchToIndex("/tmp/i", "/tmp/p.patch").env).toMatchObject({ GIT_INDEX_FILE: "/tmp/i" });
    expect(hasCommit(OID).okExitCodes).toContain(128);
  });

  it("refuses values that could be read as options", () => {
    const s = { shallow: false, timeoutMs: 1, sshCommand: null };
    expect(() => fetchRefspecs("-oProxyCommand=x", [OID], s)).toThrow(StrataError);
    expect(() => fetchRefspecs("/srv/a.git", ["--upload-pack=x"], s)).toThrow(StrataError);
    expect(() => setConfig("remote.origin.url", "--evil")).toThrow(StrataError);
    expect(() => hasCommit("HEAD")).toThrow(StrataError);
    expect(() => unbundle("relative.bundle")).toThrow(StrataError);
  });

  it("reads git's answers", () => {
    expect(parseNeedsUpdate("a.txt: needs update\nsub dir/b c.txt: needs update\nnoise\n")).toEqual([
      "a.txt",
      "sub dir/b c.txt",
    ]);
    const prerequisite = "b".repeat(40);
    expect(parseBundleHeader(`# v2 git bundle\n-${prerequisite} base commit\n${OID} HEAD\n\nPACK…`)).toEqual({
      prerequisites: [prerequisite],
      refs: [{ oid: OID, name: "HEAD" }],
    });
    expect(parseBundleHeader(`# v3 git bundle\n@object-format=sha1\n${OID} HEAD\n\nPACK`)?.refs).toHaveLength(1);
    expect(parseBundleHeader("diff --git a/x b/x\n\n")).toBeNull();
  });

  it("lists the files a patch touches, quoted names included", () => {
    const patch = Buffer.from(
      [
        "diff --git a/a.txt b/a.txt",
        "index 1..2 100644",
        "diff --git a/with space b/x.txt b/with space b/x.txt",
        'diff --git "a/na\\303\\257ve \\"q\\".txt" "b/na\\303\\257ve \\"q\\".txt"',
        "+diff --git a/not-a-header b/not-a-header",
        "",
      ].join("\n"),
    );
    expect(pathsInPatch(patch)).toEqual(["a.txt", "with space b/x.txt", 'naïve "q".txt']);
    expect(unquoteGitPath("tab\\there")).toBe("tab\there");
  });

  it("resolves a relative local remote against the recorded root, and nothing else", () => {
    const remotes = fetchableRemotes({
      root: "/home/dev/app",
      remotes: [
        { name: "up", url: "../upstream" },
        { name: "abs", url: "/srv/a.git" },
        { name: "scp", url: "git@host:a.git" },
        { name: "https", url: "https://host/a.git" },
      ],
    } as Parameters<typeof fetchableRemotes>[0]);
    expect(remotes.map((r) => r.fetchUrl)).toEqual([
      "/home/dev/upstream",
      "/srv/a.git",
      "git@host:a.git",
      "https://host/a.git",
    ]);
  });
});

describe("the calls behind files written verbatim", () => {
  it("lists a tree's files and sets index entries afresh, with the restore's settings", () => {
    const files = treeFiles(OID);
    expect(files.args).toEqual(expect.arrayContaining(["core.hooksPath=/dev/null", "ls-tree", "-r", "-z", OID]));
    const parsed = files.parse({
      stdout: Buffer.from(`100644 blob ${OID}\tdata.bin\u0000100755 blob ${OID}\tbin/a b\u0000`),
      stderr: "",
      exitCode: 0,
    });
    expect([...parsed]).toEqual([
      ["data.bin", { mode: "100644", oid: OID }],
      ["bin/a b", { mode: "100755", oid: OID }],
    ]);
    const afresh = setIndexEntriesAfresh("/tmp/index", [{ mode: "100644", oid: OID, path: "data.bin" }]);
    expect(afresh.args).toEqual(expect.arrayContaining(["core.fsmonitor=false", "update-index", "--index-info"]));
    expect(afresh.input).toBe(`100644 ${OID}\tdata.bin\u0000`);
    expect(afresh.env).toMatchObject({ GIT_INDEX_FILE: "/tmp/index" });
  });
});
