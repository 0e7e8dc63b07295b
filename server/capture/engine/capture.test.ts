import { createHash } from "node:crypto";
import { readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CaptureManifest, OmittedEntry } from "../../domain/capture-manifest.ts";
import { captureCheckout, type CaptureOptions, type CaptureResult } from "./capture.ts";
import { crlfBeforeTextAttribute, FAKE_SECRET, parserFixturesCheckout } from "../../testing/checkouts.ts";
import {
  addOrigin,
  commitAll,
  expectedTree,
  git,
  imageOf,
  initRepository,
  remove,
  removeTemporaryDirectories,
  spyGit,
  symlink,
  temporaryDirectory,
  treeFromPatches,
  write,
} from "../../testing/repos.ts";

afterAll(removeTemporaryDirectories);

/** Obviously fake secret material, made per run; the tests look for these bytes later. */
const SECRET = `FAKE-SECRET-${Math.random().toString(36).slice(2)}-NOT-A-REAL-KEY`;

const DENIED_NAMES = [
  ".env",
  ".env.local",
  "config/.env.production",
  "certs/server.pem",
  "certs/tls.key",
  "certs/bundle.p12",
  "certs/bundle.pfx",
  "ssh/id_rsa",
  "ssh/id_ed25519",
  "ssh/id_ecdsa",
  "ssh/id_dsa",
  "ssh/id_mldsa",
  "ssh/id_xmss",
  "ssh/id_deploy",
  "ssh/id_rsa.bak",
  "ssh/id_server.pem",
  "ssh/id_rsa.pub.key",
  "aws/credentials",
  "gcloud/credentials.json",
  ".netrc",
  "_netrc",
  ".git-credentials",
  ".pgpass",
];
const KEPT_LOOKALIKES = ["ssh/id_rsa.pub", "ssh/id_ed25519-cert.pub", "src/id_utils.ts", "docs/environment.md"];

interface Captured {
  manifest: CaptureManifest;
  artifacts: Map<string, Buffer>;
}

async function captureUntouched(root: string, options: CaptureOptions = {}): Promise<CaptureResult> {
  const before = imageOf(root);
  const result = await captureCheckout(root, options);
  const after = imageOf(root);
  // The user's index, HEAD, refs and files: byte for byte.
  expect(after.index).toBe(before.index);
  expect(after.head).toBe(before.head);
  expect(after.packedRefs).toBe(before.packedRefs);
  expect([...after.refs]).toEqual([...before.refs]);
  expect([...after.files]).toEqual([...before.files]);
  return result;
}

async function capture(root: string, options: CaptureOptions = {}): Promise<Captured> {
  const result = await captureUntouched(root, options);
  if (result.outcome === "unavailable") throw result.error;
  if (result.outcome !== "captured") throw new Error(`expected a new snapshot, got ${result.outcome}`);
  // The recorded tree is the working copy's, minus what was left out.
  expect(result.manifest.tree).toBe(expectedTree(root, result.manifest));
  return { manifest: result.manifest, artifacts: result.artifacts };
}

function omittedAs(manifest: CaptureManifest, reason: OmittedEntry["reason"]): string[] {
  return manifest.omitted.filter((o) => o.reason === reason).map((o) => o.path);
}

function treeEntry(root: string, tree: string, path: string): string {
  return git(root, ["ls-tree", "--full-tree", tree, "--", path]).trim();
}

function allBytes(artifacts: Map<string, Buffer>): Buffer {
  return Buffer.concat([...artifacts.values()]);
}

describe("capture of a working copy with everything in it", () => {
  it("records the exact tree and leaves the repository untouched", async () => {
    const root = initRepository({
      "README.md": "hello\n",
      "bin/tool.sh": "#!/bin/sh\necho tool\n",
      "data/blob.bin": Buffer.from([0, 1, 2, 3, 255, 254, 0, 10, 13]),
      "old name.txt": "to be renamed\n",
      "gone.txt": "to be deleted\n",
      "stage/both.txt": "v0\n",
      ".gitignore": "node_modules/\n*.log\nbuild/\n",
      ".gitattributes": "*.psd filter=lfs diff=lfs merge=lfs -text\n",
      ".env.example": "EXAMPLE=1\n",
    });
    addOrigin(root);
    git(root, ["config", "core.autocrlf", "true"]);

    write(root, "data/blob.bin", Buffer.from([9, 0, 8, 0, 7, 0xff]));
    write(root, "crlf/windows.txt", "line one\r\nline two\r\n");
    symlink(root, "links/to-readme", "../README.md");
    git(root, ["update-index", "--chmod=+x", "bin/tool.sh"]);
    write(root, "bin/tool.sh", "#!/bin/sh\necho tool v2\n", 0o755);
    write(root, "unicode/naïve café ☕.txt", "unicode and spaces\n");
    git(root, ["mv", "old name.txt", "new name.txt"]);
    remove(root, "gone.txt");
    write(root, "stage/both.txt", "v1 staged\n");
    git(root, ["add", "stage/both.txt"]);
    write(root, "stage/both.txt", "v2 in the working tree\n");
    write(root, "notes/untracked.md", "not added\n");
    write(root, "debug.log", "ignored\n");
    write(root, "node_modules/pkg/index.js", "ignored dir\n");
    write(root, "build/keep.log", "forced\n");
    git(root, ["add", "-f", "build/keep.log"]);
    write(root, "art/cover.psd", "pretend LFS content\n");
    write(root, ".env.example", `EXAMPLE=2 ${SECRET}\n`);
    for (const name of DENIED_NAMES) write(root, name, `${SECRET} in ${name}\n`);
    for (const name of KEPT_LOOKALIKES) write(root, name, `not a secret: ${name}\n`);
    const nested = join(root, "tools", "vendored");
    write(root, "tools/vendored/file.txt", "inside a nested repository\n");
    git(nested, ["init", "--quiet"]);
    git(nested, ["add", "-A"]);
    git(nested, ["commit", "--quiet", "-m", "nested"]);
    write(root, ".strata/snapshot-ignore", "scratch/\n*.tmp\n");
    write(root, "scratch/big-output.dat", "snapshot-ignored\n");
    write(root, "notes/draft.tmp", "snapshot-ignored\n");

    const { manifest, artifacts } = await capture(root, { snapshotRef: { workContext: "task-1" } });

    expect(manifest.branch).toBe("main");
    expect(manifest.head).toBe(git(root, ["rev-parse", "HEAD"]).trim());
    expect(manifest.remotes).toEqual([{ name: "origin", url: expect.stringMatching(/^file:\/\//) }]);
    expect(manifest.filters).toEqual({
      autocrlf: "true",
      eol: null,
      drivers: [{ name: "lfs", configured: expect.any(Boolean), required: expect.any(Boolean) }],
    });

    // What is in the tree.
    expect(treeEntry(root, manifest.tree, "bin/tool.sh")).toMatch(/^100755 /);
    expect(treeEntry(root, manifest.tree, "links/to-readme")).toMatch(/^120000 /);
    expect(treeEntry(root, manifest.tree, "unicode/naïve café ☕.txt")).not.toBe("");
    expect(treeEntry(root, manifest.tree, "new name.txt")).not.toBe("");
    expect(treeEntry(root, manifest.tree, "old name.txt")).toBe("");
    expect(treeEntry(root, manifest.tree, "gone.txt")).toBe("");
    expect(treeEntry(root, manifest.tree, "build/keep.log")).not.toBe("");
    expect(treeEntry(root, manifest.tree, "art/cover.psd")).not.toBe("");
    expect(treeEntry(root, manifest.tree, "tools/vendored")).toBe("");
    const both = git(root, ["cat-file", "-p", `${manifest.tree}:stage/both.txt`]);
    expect(both).toBe("v2 in the working tree\n");
    // CRLF is stored as git stores it under core.autocrlf=true: LF.
    expect(git(root, ["cat-file", "-p", `${manifest.tree}:crlf/windows.txt`])).toBe("line one\nline two\n");
    for (const name of KEPT_LOOKALIKES) expect(treeEntry(root, manifest.tree, name)).not.toBe("");

    // What was left out, and why.
    expect(omittedAs(manifest, "ignored")).toEqual(expect.arrayContaining(["debug.log", "node_modules/"]));
    expect(omittedAs(manifest, "nested-repository")).toEqual(["tools/vendored/"]);
    expect(omittedAs(manifest, "snapshot-ignore")).toEqual(
      expect.arrayContaining(["notes/draft.tmp", "scratch/big-output.dat"]),
    );
    expect(omittedAs(manifest, "denied").sort()).toEqual([...DENIED_NAMES, ".env.example"].sort());
    // A tracked denied file keeps its HEAD content; its change is only listed.
    expect(git(root, ["cat-file", "-p", `${manifest.tree}:.env.example`])).toBe("EXAMPLE=1\n");
    expect(manifest.omitted.find((o) => o.path === ".env.example")?.detail).toMatch(/HEAD content kept/);
    for (const name of DENIED_NAMES) expect(treeEntry(root, manifest.tree, name)).toBe("");

    // No secret byte in anything the capture hands over for storage.
    expect(allBytes(artifacts).includes(SECRET)).toBe(false);
    expect(JSON.stringify(manifest).includes(SECRET)).toBe(false);

    // The patch chain rebuilds the tree from HEAD.
    expect(manifest.patches).toHaveLength(1);
    expect(manifest.patches[0]).toMatchObject({ kind: "full", parent: null, base: manifest.head, tree: manifest.tree });
    expect(treeFromPatches(root, manifest, artifacts)).toBe(manifest.tree);
    // Everything is pushed: no bundle.
    expect(manifest.bundle).toBeNull();

    // The snapshot ref: a commit of the tree on top of HEAD, outside refs/heads and refs/tags.
    expect(manifest.snapshotRef?.name).toMatch(/^refs\/strata\/snapshots\/task-1\//);
    const ref = manifest.snapshotRef?.name ?? "";
    expect(git(root, ["rev-parse", `${ref}^{tree}`]).trim()).toBe(manifest.tree);
    expect(git(root, ["rev-parse", `${ref}^`]).trim()).toBe(manifest.head);
    expect(git(root, ["for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags"]).trim()).toBe(
      "refs/heads/main",
    );
  });
});

describe("capture over time", () => {
  it("is unchanged until something changes, then grows the chain, restarting when HEAD moves", async () => {
    const root = initRepository({ "a.txt": "a\n", "b.txt": "b\n", ".gitignore": ".env.local\n" });
    addOrigin(root);
    const ref = { workContext: "task-2", checkout: "main-checkout" };
    const artifacts = new Map<string, Buffer>();
    const keep = (c: Captured) => {
      for (const [digest, bytes] of c.artifacts) artifacts.set(digest, bytes);
      return c.manifest;
    };

    // A clean checkout: the tree is HEAD's, no patch at all.
    const clean = keep(await capture(root, { snapshotRef: ref }));
    expect(clean.patches).toEqual([]);
    expect(clean.tree).toBe(git(root, ["rev-parse", "HEAD^{tree}"]).trim());

    const same = await captureUntouched(root, { previous: clean, snapshotRef: ref });
    expect(same.outcome).toBe("unchanged");

    write(root, "a.txt", "a changed\n");
    const first = keep(await capture(root, { previous: clean, snapshotRef: ref }));
    expect(first.patches.map((p) => p.kind)).toEqual(["full"]);

    const refBefore = git(root, ["rev-parse", first.snapshotRef?.name ?? ""]).trim();
    expect((await captureUntouched(root, { previous: first, snapshotRef: ref })).outcome).toBe("unchanged");
    expect(git(root, ["rev-parse", first.snapshotRef?.name ?? ""]).trim()).toBe(refBefore);

    // A newly left-out file alone makes a new snapshot that lists it (same tree).
    write(root, ".env.local", `TOKEN=${SECRET}\n`);
    const listed = keep(await capture(root, { previous: first, snapshotRef: ref }));
    expect(listed.tree).toBe(first.tree);
    expect(listed.omitted.map((o) => o.path)).toContain(".env.local");
    expect(listed.patches).toEqual(first.patches);

    write(root, "b.txt", "b changed\n");
    write(root, "c.txt", "new file\n");
    const second = keep(await capture(root, { previous: listed, snapshotRef: ref }));
    expect(second.patches.map((p) => p.kind)).toEqual(["full", "incremental"]);
    expect(second.patches[1]?.parent).toBe(second.patches[0]?.uuid);
    expect(second.patches[1]?.base).toBe(listed.tree);
    expect(treeFromPatches(root, second, artifacts)).toBe(second.tree);

    // fullEvery bounds the chain.
    write(root, "c.txt", "changed again\n");
    const restarted = keep(await capture(root, { previous: second, fullEvery: 2, snapshotRef: ref }));
    expect(restarted.patches.map((p) => p.kind)).toEqual(["full"]);
    expect(treeFromPatches(root, restarted, artifacts)).toBe(restarted.tree);

    // HEAD moves: a full patch against the new HEAD.
    git(root, ["add", "a.txt"]);
    git(root, ["commit", "--quiet", "-m", "commit a"]);
    const moved = keep(await capture(root, { previous: restarted, snapshotRef: ref }));
    expect(moved.head).not.toBe(restarted.head);
    expect(moved.patches.map((p) => p.kind)).toEqual(["full"]);
    expect(moved.patches[0]?.base).toBe(moved.head);
    expect(treeFromPatches(root, moved, artifacts)).toBe(moved.tree);
    // The unpushed commit travels as a bundle.
    expect(moved.bundle?.commits).toEqual([moved.head]);
    const bundle = artifacts.get(moved.bundle?.digest ?? "");
    expect(bundle?.subarray(0, 16).toString()).toMatch(/^# v[23] git bundle/);

    expect(allBytes(artifacts).includes(SECRET)).toBe(false);
  });

  it("rebuilds a damaged or deleted private index and records the same tree", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    write(root, "a.txt", "changed\n");
    write(root, "new.txt", "untracked\n");
    const first = await capture(root);
    writeFileSync(join(root, ".git", "strata", "index-all"), "this is not an index");
    write(root, "new.txt", "untracked, changed\n");
    const second = await capture(root, { previous: first.manifest });
    remove(root, ".git/strata");
    const third = await captureUntouched(root, { previous: second.manifest });
    expect(third.outcome).toBe("unchanged");
  });

  it("leaves an index with racily clean entries for the next write, and still sees racy changes", async () => {
    const root = initRepository({ "a.txt": "one\n", "b.txt": "b\n" });
    const indexFile = join(root, ".git", "strata", "index-all");
    const stateOf = () => JSON.parse(readFileSync(join(root, ".git", "strata", "state-all.json"), "utf8"));
    const indexStat = () => statSync(indexFile, { bigint: true });
    const first = await capture(root);
    // Dated in the future, a.txt is modified in (or after) the second of any index write.
    const later = new Date(Date.now() + 120_000);
    write(root, "a.txt", "two\n");
    utimesSync(join(root, "a.txt"), later, later);
    const second = await capture(root, { previous: first.manifest });
    expect(stateOf().racyEntries).toBe(true);

    // Its status leaves the index alone; the one after it writes it as git status would.
    const written = indexStat();
    expect((await captureUntouched(root, { previous: second.manifest })).outcome).toBe("unchanged");
    expect(indexStat().mtimeNs).toBe(written.mtimeNs);
    expect(stateOf().racyEntries).toBe(false);
    expect((await captureUntouched(root, { previous: second.manifest })).outcome).toBe("unchanged");
    expect(indexStat().mtimeNs).not.toBe(written.mtimeNs);

    // Same size, same modification time: still captured (the entry is checked by content).
    write(root, "a.txt", "six\n");
    utimesSync(join(root, "a.txt"), later, later);
    const third = await capture(root, { previous: second.manifest });
    expect(treeEntry(root, third.manifest.tree, "a.txt")).toContain(git(root, ["hash-object", "a.txt"]).trim());
  });

  it("drops a file that an earlier capture took once .gitignore ignores it", async () => {
    const root = initRepository({ "a.txt": "a\n", ".gitignore": "" });
    write(root, "out.log", "captured at first\n");
    const first = await capture(root);
    expect(treeEntry(root, first.manifest.tree, "out.log")).not.toBe("");
    write(root, ".gitignore", "*.log\n");
    const second = await capture(root, { previous: first.manifest });
    expect(treeEntry(root, second.manifest.tree, "out.log")).toBe("");
    expect(omittedAs(second.manifest, "ignored")).toContain("out.log");
  });
});

describe("a repository without commits", () => {
  it("records the working tree against the empty tree", async () => {
    const root = temporaryDirectory();
    git(root, ["init", "--quiet", "--initial-branch=main"]);
    write(root, "first.txt", "before any commit\n");
    write(root, "staged.txt", "staged\n");
    git(root, ["add", "staged.txt"]);
    write(root, ".env", `${SECRET}\n`);
    const { manifest, artifacts } = await capture(root, { snapshotRef: { workContext: "unborn" } });
    expect(manifest).toMatchObject({ head: null, branch: "main", bundle: null });
    expect(manifest.patches.map((p) => p.kind)).toEqual(["full"]);
    expect(treeFromPatches(root, manifest, artifacts)).toBe(manifest.tree);
    expect(omittedAs(manifest, "denied")).toEqual([".env"]);
    expect(allBytes(artifacts).includes(SECRET)).toBe(false);
  });
});

describe("files whose bytes the repository's line-ending attributes do not read back", () => {
  const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");
  const paths = (manifest: CaptureManifest) => (manifest.verbatim ?? []).map((f) => f.path);

  it("records their bytes beside the blob git stores, whichever way the capture finds them", async () => {
    const root = initRepository({
      ".gitattributes": "* text eol=lf\n*.png binary\n",
      "img/logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      "src/plain.js": "plain\n",
    });
    addOrigin(root);
    const bytes = "ab\r\r\ncd\r\n";
    write(root, "data.bin", bytes);
    write(root, "src/windows.js", "crlf only\r\n");

    const { manifest, artifacts } = await capture(root);
    // The tree holds what `git add` stores (capture() compares it with git add -A): a blob
    // that still has a CRLF, which no checkout reads back as itself.
    expect(git(root, ["cat-file", "-p", `${manifest.tree}:data.bin`])).toBe("ab\r\ncd\n");
    expect(manifest.verbatim).toEqual([
      {
        path: "data.bin",
        oid: git(root, ["rev-parse", `${manifest.tree}:data.bin`]).trim(),
        attributes: "text eol=lf",
        bytes: { digest: sha256(bytes), size: bytes.length },
      },
    ]);
    expect(artifacts.get(sha256(bytes))?.toString("latin1")).toBe(bytes);
    expect((await captureUntouched(root, { previous: manifest })).outcome).toBe("unchanged");

    // A capture without the last one's answers searches the whole tree and finds the same.
    const fresh = await capture(root, { cacheDir: temporaryDirectory("strata-cache-") });
    expect(fresh.manifest.verbatim).toEqual(manifest.verbatim);

    // Committed, the file keeps its bytes (its blob is HEAD's now); rewritten plainly, it needs none.
    commitAll(root, "data.bin with CR bytes");
    const committed = await capture(root, { previous: manifest });
    expect(committed.manifest.verbatim).toEqual(manifest.verbatim);
    write(root, "data.bin", "ab\ncd\n");
    write(root, "src/plain.js", "x\r\r\ny\n");
    const rewritten = await capture(root, { previous: committed.manifest });
    expect(paths(rewritten.manifest)).toEqual(["src/plain.js"]);
  });

  it("has git search changed blobs too large to read at once", async () => {
    const root = initRepository({ ".gitattributes": "* text eol=lf\n", "a.txt": "a\n" });
    addOrigin(root);
    write(root, "a.txt", "a2\n");
    const first = await capture(root);
    expect(first.manifest.verbatim).toBeUndefined();
    write(root, "big.txt", `${"x".repeat(200)}\r\r\n`);
    commitAll(root, "a large file with CR bytes");
    const spy = spyGit();
    const next = await capture(root, { previous: first.manifest, maxSnapshotBytes: 50, gitPath: spy.gitPath });
    expect(paths(next.manifest)).toEqual(["big.txt"]);
    expect(spy.calls().some((c) => / grep [\s\S]* -- big\.txt$/.test(c))).toBe(true);
  });

  it("lists a file committed with CRLF before the attribute without storing its bytes", async () => {
    const root = crlfBeforeTextAttribute();
    const result = await captureUntouched(root);
    if (result.outcome !== "captured") throw new Error(`expected a capture, got ${result.outcome}`);
    expect(result.manifest.tree).toBe(git(root, ["rev-parse", "HEAD^{tree}"]).trim());
    expect(result.manifest.verbatim).toEqual([
      { path: "legacy.txt", oid: git(root, ["rev-parse", "HEAD:legacy.txt"]).trim(), attributes: "text" },
    ]);
    expect(result.artifacts.size).toBe(0);
  });

  it("never stores the bytes of a file the capture leaves out", async () => {
    const root = initRepository({
      ".gitattributes": "* text eol=lf\n",
      ".env.test": "A=1\r\r\n",
      // Unchanged since its commit, but its bytes are not its blob's: still never stored.
      "notes/private.md": `${SECRET}\r\r\n`,
    });
    addOrigin(root);
    write(root, ".env.test", `A=${SECRET}\r\r\n`);
    write(root, ".strata/snapshot-ignore", "notes/\n");
    const { manifest, artifacts } = await capture(root);
    expect(omittedAs(manifest, "denied")).toEqual([".env.test"]);
    expect(manifest.verbatim?.map((f) => [f.path, f.bytes])).toEqual([
      [".env.test", undefined],
      ["notes/private.md", undefined],
    ]);
    expect(allBytes(artifacts).includes(SECRET)).toBe(false);
  });

  it("costs no git call where no attribute file mentions line endings", async () => {
    const root = initRepository({ "a.txt": "a\r\r\n", ".gitattributes": "*.psd -diff\n" });
    write(root, "a.txt", "b\r\r\n");
    const spy = spyGit();
    const { manifest } = await capture(root, { gitPath: spy.gitPath });
    expect(manifest.verbatim).toBeUndefined();
    expect(spy.calls().filter((c) => / grep |check-attr/.test(c))).toEqual([]);
  });
});

describe("history that has not been pushed", () => {
  it("leaves the bundle out when an unpushed commit adds a secret, naming commits and paths", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    addOrigin(root);
    write(root, "config/.env", `SECRET=${SECRET}\n`);
    write(root, "a.txt", "a2\n");
    const leak = commitAll(root, "oops, a secret");
    remove(root, "config/.env");
    const after = commitAll(root, "remove it again");

    const { manifest, artifacts } = await capture(root);
    expect(manifest.bundle).toBeNull();
    const entry = manifest.omitted.find((o) => o.reason === "unpushed-denied");
    expect(entry).toMatchObject({ path: "config/.env", commits: [leak] });
    expect(manifest.head).toBe(after);
    expect(allBytes(artifacts).includes(SECRET)).toBe(false);

    // Once pushed, the secret is the remote's already; the remaining history has none.
    git(root, ["push", "--quiet", "origin", "main"]);
    write(root, "b.txt", "b\n");
    const local = commitAll(root, "local work");
    const next = await capture(root, { previous: manifest });
    expect(next.manifest.bundle?.commits).toEqual([local]);
  });

  it("bundles unpushed commits under id_* directories (parser fixtures) and keeps SSH key files out", async () => {
    const { root, fixtures, unpushed: local } = parserFixturesCheckout();
    for (const key of [".ssh/id_deploy", `${fixtures}/id_statement/id_rsa`]) write(root, key, `${SECRET} in ${key}\n`);

    const { manifest, artifacts } = await capture(root);
    expect(manifest.bundle?.commits).toEqual([local]);
    expect(omittedAs(manifest, "unpushed-denied")).toEqual([]);
    expect(omittedAs(manifest, "denied").sort()).toEqual(
      [".ssh/id_deploy", ".ssh/id_ed25519", `${fixtures}/id_statement/id_rsa`].sort(),
    );
    expect(git(root, ["cat-file", "-p", `${manifest.tree}:${fixtures}/expression/id_expression/input.js`])).toBe(
      "%%y%%;\n",
    );
    expect(treeEntry(root, manifest.tree, `${fixtures}/statement/id_statement/output.json`)).not.toBe("");
    expect(allBytes(artifacts).includes(SECRET)).toBe(false);
    expect(allBytes(artifacts).includes(FAKE_SECRET)).toBe(false);

    // A key file committed under such a directory still keeps the whole history out.
    git(root, ["add", `${fixtures}/id_statement/id_rsa`]);
    git(root, ["commit", "--quiet", "-m", "a key, unpushed"]);
    const leak = git(root, ["rev-parse", "HEAD"]).trim();
    const next = await capture(root, { previous: manifest });
    expect(next.manifest.bundle).toBeNull();
    expect(next.manifest.omitted.find((o) => o.reason === "unpushed-denied")).toMatchObject({
      path: `${fixtures}/id_statement/id_rsa`,
      commits: [leak],
    });
  });

  it("records a detached HEAD in a repository without remotes, bundling all of its history", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    write(root, "a.txt", "a2\n");
    const second = commitAll(root, "second");
    git(root, ["checkout", "--quiet", "--detach", "HEAD~1"]);
    write(root, "b.txt", "dirty on a detached HEAD\n");

    const { manifest, artifacts } = await capture(root);
    expect(manifest.branch).toBeNull();
    expect(manifest.remotes).toEqual([]);
    expect(manifest.head).toBe(git(root, ["rev-parse", "HEAD"]).trim());
    expect(manifest.head).not.toBe(second);
    expect(manifest.bundle?.commits).toEqual([manifest.head]);
    const bundleFile = join(temporaryDirectory(), "snapshot.bundle");
    writeFileSync(bundleFile, artifacts.get(manifest.bundle?.digest ?? "") ?? Buffer.alloc(0));
    expect(git(root, ["bundle", "list-heads", bundleFile])).toContain(manifest.head ?? "-");
  });

  it("records remotes without credentials", async () => {
    const root = initRepository();
    git(root, ["remote", "add", "origin", `https://x-access-token:${SECRET}@example.invalid/acme/app.git`]);
    git(root, ["remote", "add", "mirror", "git@example.invalid:acme/app.git"]);
    const { manifest } = await capture(root);
    expect(manifest.remotes).toEqual([
      { name: "origin", url: "https://example.invalid/acme/app.git" },
      { name: "mirror", url: "git@example.invalid:acme/app.git" },
    ]);
    expect(JSON.stringify(manifest).includes(SECRET)).toBe(false);
  });
});

describe("submodules", () => {
  it("records the checked-out commit and reports changes and unpushed commits inside", async () => {
    const library = initRepository({ "lib.txt": "library\n" });
    const root = initRepository({ "app.txt": "app\n" });
    git(root, ["-c", "protocol.file.allow=always", "submodule", "add", "--quiet", `file://${library}`, "lib"]);
    commitAll(root, "add submodule");
    const sub = join(root, "lib");
    write(sub, "lib.txt", "changed inside the submodule\n");
    write(sub, "extra.txt", "untracked inside\n");

    const { manifest } = await capture(root);
    expect(omittedAs(manifest, "submodule-changes")).toEqual(["lib"]);
    expect(omittedAs(manifest, "unpushed-submodule-commit")).toEqual([]);
    expect(treeEntry(root, manifest.tree, "lib")).toContain(git(sub, ["rev-parse", "HEAD"]).trim());

    // A commit inside the submodule that its remote does not have.
    const local = commitAll(sub, "submodule work");
    const next = await capture(root, { previous: manifest });
    expect(omittedAs(next.manifest, "unpushed-submodule-commit")).toEqual(["lib"]);
    expect(treeEntry(root, next.manifest.tree, "lib")).toContain(local);
  });
});

describe("failures are typed and never thrown", () => {
  it("reports a directory outside any repository", async () => {
    const result = await captureCheckout(temporaryDirectory());
    expect(result.outcome).toBe("unavailable");
    if (result.outcome === "unavailable") expect(result.error.code).toBe("NOT_A_REPOSITORY");
  });

  it("reports a missing git", async () => {
    const result = await captureCheckout(initRepository(), { gitPath: "/nonexistent/git" });
    expect(result.outcome === "unavailable" && result.error.code).toBe("GIT_UNAVAILABLE");
  });

  it("reports a looping symbolic link as an unreadable path, naming it", async () => {
    const root = initRepository();
    symlink(root, "loop-a", "loop-b");
    symlink(root, "loop-b", "loop-a");
    const result = await captureCheckout(join(root, "loop-a"));
    expect(result.outcome === "unavailable" && result.error.code).toBe("UNREADABLE_PATH");
    if (result.outcome === "unavailable") expect(result.error.message).toContain("loop-a");
  });

  it("reports an abort", async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await captureCheckout(initRepository(), { signal: controller.signal });
    expect(result.outcome === "unavailable" && result.error.code).toBe("ABORTED");
  });
});

describe("limits", () => {
  it("leaves out files over maxFileBytes and beyond maxSnapshotBytes, keeping HEAD content", async () => {
    const root = initRepository({ "tracked.txt": "small\n" });
    write(root, "tracked.txt", "x".repeat(2000));
    write(root, "a-new.txt", "y".repeat(300));
    write(root, "b-new.txt", "z".repeat(300));
    write(root, "c-new.txt", "w".repeat(300));
    const { manifest } = await capture(root, { maxFileBytes: 1000, maxSnapshotBytes: 700 });
    expect(omittedAs(manifest, "too-large")).toEqual(["tracked.txt"]);
    expect(git(root, ["cat-file", "-p", `${manifest.tree}:tracked.txt`])).toBe("small\n");
    expect(omittedAs(manifest, "snapshot-too-large")).toEqual(["c-new.txt"]);
  });

  it("leaves untracked files out when untracked capture is off", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    write(root, "a.txt", "a2\n");
    write(root, "new.txt", "untracked\n");
    write(root, "staged.txt", "staged by the user\n");
    git(root, ["add", "staged.txt"]);
    const { manifest } = await capture(root, { includeUntracked: false });
    expect(omittedAs(manifest, "untracked")).toEqual(["new.txt"]);
    expect(treeEntry(root, manifest.tree, "staged.txt")).not.toBe("");
    expect(readFileSync(join(root, "new.txt"), "utf8")).toBe("untracked\n");
  });
});
