import { spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CaptureManifest } from "../../domain/capture-manifest.ts";
import { StrataError } from "../../domain/errors.ts";
import { checkRestoreRecord } from "../../domain/restore-record.ts";
import { memoryBlobSource } from "./restore-blobs.ts";
import { filesDifferingFromIndex } from "../../git/restore-commands.ts";
import { filesDifferingFromBlobs, restoreWorktree, type RestoreOptions } from "./restore.ts";
import { createGitRunner } from "../../git/runner.ts";
import {
  captureInto,
  CHECKOUT_FIXTURES,
  crlfBeforeTextAttribute,
  FAKE_SECRET,
  unpushedOnMovedRemote,
} from "../../testing/checkouts.ts";
import {
  addOrigin,
  commitAll,
  git,
  initRepository,
  removeTemporaryDirectories,
  spyGit,
  temporaryDirectory,
  write,
} from "../../testing/repos.ts";

afterAll(removeTemporaryDirectories);

const SNAPSHOT_ID = "0d3c1a52-8d0e-4a4e-9a56-3f1e8b2c9d71";

/** A "second machine": its own directory for worktrees and its own state directory. */
function secondMachine() {
  const dir = temporaryDirectory("strata-machine-");
  return { into: join(dir, "worktrees", "restored"), stateDir: join(dir, "state") };
}

function options(blobs: Map<string, Buffer>, stateDir: string, extra: Partial<RestoreOptions> = {}): RestoreOptions {
  return { blobs: memoryBlobSource(blobs), stateDir, ...extra };
}

/** Restores a record on a new "second machine". */
async function restoreElsewhere(manifest: unknown, blobs: Map<string, Buffer>, extra: Partial<RestoreOptions> = {}) {
  const machine = secondMachine();
  const report = await restoreWorktree(
    { snapshotId: SNAPSHOT_ID, manifest },
    machine.into,
    options(blobs, machine.stateDir, extra),
  );
  return { into: machine.into, report };
}

/** Output of a git call that may fail (then ""). */
function gitMaybe(dir: string, args: string[]): string {
  const run = spawnSync("git", args, { cwd: dir, encoding: "utf8" });
  return run.status === 0 ? run.stdout.trim() : "";
}

/** What the restored worktree holds, read with plain git. */
function inspect(dir: string) {
  git(dir, ["update-index", "-q", "--really-refresh"]);
  return {
    tree: git(dir, ["write-tree"]).trim(),
    dirtyFiles: git(dir, ["diff-files", "--name-only"]).trim(),
    strays: git(dir, ["ls-files", "--others", "--exclude-standard"]).trim(),
    head: gitMaybe(dir, ["rev-parse", "--verify", "--quiet", "HEAD"]) || null,
    branch: gitMaybe(dir, ["symbolic-ref", "--quiet", "--short", "HEAD"]) || null,
    remotes: gitMaybe(dir, ["config", "--get-regexp", "^remote\\..*\\.url$"]),
  };
}

function expectRecorded(dir: string, manifest: CaptureManifest) {
  const seen = inspect(dir);
  expect(seen.tree).toBe(manifest.tree);
  expect(seen.dirtyFiles).toBe("");
  expect(seen.strays).toBe("");
  expect(seen.head).toBe(manifest.head);
  expect(seen.branch).toBe(manifest.branch);
  expect(seen.remotes).toBe(manifest.remotes.map((r) => `remote.${r.name}.url ${r.url}`).join("\n"));
  expect(gitMaybe(dir, ["config", "strata.restoredFrom"])).toBe(SNAPSHOT_ID);
  expect(gitMaybe(dir, ["config", "strata.restoreStage"])).toBe("exact");
  // Its own object store: nothing borrowed from the first machine.
  expect(existsSync(join(dir, ".git", "objects", "info", "alternates"))).toBe(false);
}

describe("restoring every capture fixture on a second machine", () => {
  for (const fixture of CHECKOUT_FIXTURES) {
    it(`${fixture.name}: the same tree id`, async () => {
      const captured = await fixture.make();
      const machine = secondMachine();
      const report = await restoreWorktree(
        { snapshotId: SNAPSHOT_ID, manifest: captured.manifest },
        machine.into,
        options(captured.blobs, machine.stateDir),
      );
      expect(report.result.status, JSON.stringify(report.result.missing)).toBe("restored");
      expect(report.path).toBe(machine.into);
      expect(report.result.holds).toMatchObject({
        stage: "exact",
        tree: captured.manifest.tree,
        basis: "recorded-head",
      });
      expectRecorded(machine.into, captured.manifest);
      // Files the repository's attributes do not read back hold the capturing machine's bytes.
      for (const file of captured.manifest.verbatim ?? []) {
        if (file.bytes)
          expect(readFileSync(join(machine.into, file.path))).toEqual(readFileSync(join(captured.root, file.path)));
      }
      // No staging directory or crash record is left.
      expect(readdirSync(join(machine.into, ".."))).toEqual(["restored"]);
      expect(readdirSync(join(machine.stateDir, "restores"))).toEqual([]);
      const secret = readdirSync(machine.into, { recursive: true, encoding: "utf8" })
        .filter((p) => !p.startsWith(".git"))
        .some((p) => {
          try {
            return readFileSync(join(machine.into, p)).includes(FAKE_SECRET);
          } catch {
            return false;
          }
        });
      expect(secret).toBe(false);
    });
  }
});

// --- refusals: nothing runs, nothing is written ----------------------------------------------------

const HEAD = "1".repeat(40);
const TREE = "2".repeat(40);

function validManifest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    version: 1,
    root: "/home/dev/app",
    objectFormat: "sha1",
    remotes: [{ name: "origin", url: "https://example.invalid/acme/app.git" }],
    branch: "main",
    head: HEAD,
    tree: TREE,
    patches: [
      {
        uuid: "5b0c2a8e-3f61-4d2b-9b7e-0c1d2e3f4a5b",
        parent: null,
        digest: "a".repeat(64),
        size: 10,
        kind: "full",
        base: HEAD,
        tree: TREE,
      },
    ],
    bundle: null,
    omitted: [],
    filters: { autocrlf: null, eol: null, drivers: [] },
    envHash: null,
    envFiles: [],
    snapshotRef: null,
    degradedFrom: null,
    capturedAt: "2026-11-30T10:00:00.000Z",
    ...overrides,
  };
}

function withRemote(url: string, name = "origin") {
  return validManifest({ remotes: [{ name, url }] });
}

function withPatch(changes: Record<string, unknown>) {
  const [link] = validManifest().patches as Record<string, unknown>[];
  return validManifest({ patches: [{ ...link, ...changes }] });
}

const MALFORMED: Array<[string, string, string, Record<string, unknown>]> = [
  // [what, field, a value that must not appear in the message, record]
  ["a snapshot id not in our form", "snapshotId", "NOT-AN-ID", {}],
  ["https credentials", "remotes[0].url", "hunter2", withRemote("https://bot:hunter2@example.invalid/a.git")],
  ["an https user name", "remotes[0].url", "tokenuser", withRemote("https://tokenuser@example.invalid/a.git")],
  ["an ssh password", "remotes[0].url", "sshpass", withRemote("ssh://git:sshpass@example.invalid/a.git")],
  ["a token in the query", "remotes[0].url", "qtoken", withRemote("https://example.invalid/a.git?access_token=qtoken")],
  ["a leading '-'", "remotes[0].url", "ProxyCommand", withRemote("-oProxyCommand=touch /tmp/x")],
  ["an ssh host starting with '-'", "remotes[0].url", "ProxyCommand", withRemote("ssh://-oProxyCommand=x/a.git")],
  ["an scp host starting with '-'", "remotes[0].url", "oProxy", withRemote("-oProxy@host:a.git")],
  ["an scp path starting with '-'", "remotes[0].url", "upload-pack", withRemote("git@host:--upload-pack=touch")],
  ["control characters", "remotes[0].url", "evil", withRemote("https://example.invalid/a.git\nevil")],
  ["the ext:: remote helper", "remotes[0].url", "touch", withRemote("ext::sh -c touch% /tmp/pwned")],
  ["another remote helper", "remotes[0].url", "fd::", withRemote("fd::17")],
  ["a scheme we do not fetch over", "remotes[0].url", "ftp://", withRemote("ftp://example.invalid/a.git")],
  ["a remote name with a newline", "remotes[0].name", "evil", withRemote("https://example.invalid/a.git", "o\nevil")],
  ["a remote name starting with '-'", "remotes[0].name", "--upload", withRemote("/srv/a.git", "--upload")],
  ["a short HEAD", "head", "12345", validManifest({ head: "12345" })],
  ["an upper-case HEAD", "head", "ABCDEF", validManifest({ head: "ABCDEF".padEnd(40, "0") })],
  ["a HEAD with spaces", "head", " 1111", validManifest({ head: ` ${HEAD.slice(1)}` })],
  ["a tree that is not an id", "tree", "HEAD~1", validManifest({ tree: "HEAD~1" })],
  ["a branch that is an option", "branch", "--force", validManifest({ branch: "--force" })],
  ["a branch with '..'", "branch", "a..b", validManifest({ branch: "a..b" })],
  ["a patch digest that is not sha256", "patches[0].digest", "zzzz", withPatch({ digest: "zzzz" })],
  ["a patch uuid in another form", "patches[0].uuid", "PATCH-1", withPatch({ uuid: "PATCH-1" })],
  ["a patch base that is not HEAD", "patches[0].base", "3333", withPatch({ base: "3".repeat(40) })],
  ["a patch tree that is not an id", "patches[0].tree", "master", withPatch({ tree: "master" })],
  [
    "a whole file that is not an object id",
    "patches[0].files[0].oid",
    "HEAD:a.bin",
    withPatch({ files: [{ oid: "HEAD:a.bin", digest: "c".repeat(64), size: 1 }] }),
  ],
  [
    "a whole file digest that is not sha256",
    "patches[0].files[0].digest",
    "yyyy",
    withPatch({ files: [{ oid: "5".repeat(40), digest: "yyyy", size: 1 }] }),
  ],
  ["whole files that are not a list", "patches[0].files", "zzzz", withPatch({ files: "zzzz" })],
  [
    "a bundle commit that is not an id",
    "bundle.commits[0]",
    "HEAD@{1}",
    validManifest({ bundle: { digest: "b".repeat(64), size: 1, commits: ["HEAD@{1}"] } }),
  ],
  [
    "a bundle that does not carry HEAD",
    "bundle.commits[0]",
    "4444",
    validManifest({ bundle: { digest: "b".repeat(64), size: 1, commits: ["4".repeat(40)] } }),
  ],
  [
    "a verbatim file outside the worktree",
    "verbatim[0].path",
    "../../etc",
    validManifest({ verbatim: [{ path: "../../etc/passwd", oid: "5".repeat(40), attributes: "text" }] }),
  ],
  [
    "a verbatim file inside .git",
    "verbatim[0].path",
    "hooks/post",
    validManifest({ verbatim: [{ path: ".GIT/hooks/post-checkout", oid: "5".repeat(40), attributes: "text" }] }),
  ],
  [
    "verbatim bytes that are not a sha256",
    "verbatim[0].bytes.digest",
    "qqqq",
    validManifest({
      verbatim: [{ path: "a.txt", oid: "5".repeat(40), attributes: "", bytes: { digest: "qqqq", size: 1 } }],
    }),
  ],
  ["an unknown object format", "objectFormat", "sha3", validManifest({ objectFormat: "sha3" })],
  ["an unknown version", "version", "99", validManifest({ version: 99 })],
];

describe("records that fail the security checks", () => {
  it.each(MALFORMED)(
    "refuses %s (INVALID_SNAPSHOT naming %s) before git runs",
    async (_what, field, value, manifest) => {
      const spy = spyGit();
      const machine = secondMachine();
      const snapshotId = field === "snapshotId" ? value : SNAPSHOT_ID;
      const error = await restoreWorktree({ snapshotId, manifest }, machine.into, {
        ...options(new Map(), machine.stateDir),
        gitPath: spy.gitPath,
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StrataError);
      const typed = error as StrataError;
      expect(typed.code).toBe("INVALID_SNAPSHOT");
      expect(typed.data?.field).toBe(field);
      expect(JSON.stringify(typed.toJSON())).not.toContain(value);
      expect(spy.calls()).toEqual([]);
      expect(existsSync(join(machine.into, ".."))).toBe(false);
      expect(existsSync(machine.stateDir)).toBe(false);
    },
  );

  /** The patch-chain fixture restored on a second machine through a git that logs its calls. */
  async function restoreChainWithSpy() {
    const fixture = CHECKOUT_FIXTURES.find((f) => f.name.startsWith("a patch chain"));
    const captured = await fixture!.make();
    const spy = spyGit();
    const machine = secondMachine();
    const report = await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest: captured.manifest }, machine.into, {
      ...options(captured.blobs, machine.stateDir),
      gitPath: spy.gitPath,
    });
    return { captured, spy, machine, report };
  }

  it("applies a chain of several links with one git apply, and says every link applied", async () => {
    const { captured, spy, machine, report } = await restoreChainWithSpy();
    expect(captured.manifest.patches.length).toBeGreaterThan(2);
    expect(report.result.status).toBe("restored");
    expect(report.result.holds.appliedChangeSets).toEqual(captured.manifest.patches.map((p) => p.uuid));
    expect(git(machine.into, ["write-tree"]).trim()).toBe(captured.manifest.tree);
    expect(spy.calls().filter((c) => / apply /.test(` ${c} `))).toHaveLength(1);
  });

  it("accepts the record kinds a capture writes (the spy sees git start)", async () => {
    const { spy, report } = await restoreChainWithSpy();
    expect(report.result.status).toBe("restored");
    expect(spy.calls().length).toBeGreaterThan(0);
    for (const url of [
      "/srv/git/app.git",
      "../upstream",
      "file:///srv/git/app.git",
      "git@example.invalid:acme/app.git",
      "example.invalid:acme/app.git",
      "ssh://git@example.invalid:2222/acme/app.git",
      "git://example.invalid/acme/app.git",
      "http://example.invalid/acme/app.git",
    ]) {
      expect(() => checkRestoreRecord({ snapshotId: SNAPSHOT_ID, manifest: withRemote(url) }), url).not.toThrow();
    }
  });
});

describe("a target that is not new or empty", () => {
  it("is refused with UNSAFE_TARGET and nothing is written", async () => {
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const machine = secondMachine();
    mkdirSync(machine.into, { recursive: true });
    writeFileSync(join(machine.into, "mine.txt"), "the user's file\n");
    const spy = spyGit();
    const refuse = (into: string) =>
      restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest: captured.manifest }, into, {
        ...options(captured.blobs, machine.stateDir),
        gitPath: spy.gitPath,
      }).then(
        () => {
          throw new Error("expected a refusal");
        },
        (e: unknown) => e as StrataError,
      );

    expect((await refuse(machine.into)).code).toBe("UNSAFE_TARGET");
    expect((await refuse(join(machine.into, "mine.txt"))).code).toBe("UNSAFE_TARGET");
    symlinkSync(temporaryDirectory(), join(machine.into, "..", "link"));
    expect((await refuse(join(machine.into, "..", "link"))).code).toBe("UNSAFE_TARGET");

    expect(readdirSync(machine.into)).toEqual(["mine.txt"]);
    expect(readFileSync(join(machine.into, "mine.txt"), "utf8")).toBe("the user's file\n");
    expect(readdirSync(join(machine.into, "..")).sort()).toEqual(["link", "restored"]);
    expect(existsSync(machine.stateDir)).toBe(false);
    expect(spy.calls()).toEqual([]);
  });

  it("restores into an existing empty directory", async () => {
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const machine = secondMachine();
    mkdirSync(machine.into, { recursive: true });
    const report = await restoreWorktree(
      { snapshotId: SNAPSHOT_ID, manifest: captured.manifest },
      machine.into,
      options(captured.blobs, machine.stateDir),
    );
    expect(report.result.status).toBe("restored");
    expectRecorded(machine.into, captured.manifest);
  });
});

// --- interrupted restores -------------------------------------------------------------------------

describe("a restore killed midway", () => {
  it("leaves a staging directory and a crash record, which the next restore removes", async () => {
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const machine = secondMachine();
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "server/testing/restore-process.ts",
        JSON.stringify({
          manifest: captured.manifest,
          snapshotId: SNAPSHOT_ID,
          into: machine.into,
          stateDir: machine.stateDir,
          blobs: Object.fromEntries([...captured.blobs].map(([d, b]) => [d, b.toString("base64")])),
        }),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("STUCK")) resolve();
      });
      child.on("exit", () => reject(new Error("the restore process ended before it got stuck")));
    });
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));

    const parent = join(machine.into, "..");
    const leftovers = readdirSync(parent);
    expect(leftovers).toHaveLength(1);
    expect(leftovers[0]).toMatch(/^\.strata-staging-restored-/);
    expect(existsSync(machine.into)).toBe(false);
    expect(readdirSync(join(machine.stateDir, "restores"))).toHaveLength(1);

    // A live restore's staging directory is left alone; the dead one's is removed.
    const live = join(parent, ".strata-staging-live-x");
    mkdirSync(live);
    writeFileSync(
      join(machine.stateDir, "restores", "live.json"),
      JSON.stringify({
        version: 1,
        host: hostname(),
        pid: process.pid,
        pidStart: null,
        staging: live,
        target: join(parent, "live"),
        startedAt: new Date().toISOString(),
      }),
    );
    const next = join(parent, "next");
    const report = await restoreWorktree(
      { snapshotId: SNAPSHOT_ID, manifest: captured.manifest },
      next,
      options(captured.blobs, machine.stateDir),
    );
    expect(report.result.status).toBe("restored");
    expect(readdirSync(parent).sort()).toEqual([".strata-staging-live-x", "next"]);
    expect(readdirSync(join(machine.stateDir, "restores"))).toEqual(["live.json"]);
  });
});

// --- the degraded ladder, rungs (b) and (c) ----------------------------------------------------------

describe("the closest commit and nothing", () => {
  it("falls back to the pushed base of the unpushed commits when the bundle does not hold HEAD", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    addOrigin(root);
    const base = git(root, ["rev-parse", "HEAD"]).trim();
    const blobs = new Map<string, Buffer>();
    write(root, "a.txt", "first local\n");
    commitAll(root, "local one");
    const first = await captureInto(root, blobs);
    git(root, ["reset", "--quiet", "--hard", base]);
    write(root, "b.txt", "second local\n");
    commitAll(root, "local two");
    write(root, "b.txt", "dirty\n");
    const second = await captureInto(root, blobs);
    // A damaged record: the bundle of another capture, valid but without this HEAD.
    const manifest = {
      ...second,
      bundle: { ...second.bundle!, digest: first.bundle!.digest, size: first.bundle!.size },
    };

    const machine = secondMachine();
    const report = await restoreWorktree(
      { snapshotId: SNAPSHOT_ID, manifest },
      machine.into,
      options(blobs, machine.stateDir),
    );
    expect(report.result).toMatchObject({
      status: "degraded",
      holds: { stage: "closest-commit", head: base, basis: "pushed-base", appliedChangeSets: [] },
      missing: {
        commits: [second.head],
        changeSets: [{ uuid: second.patches[0]!.uuid, reason: "no-base" }],
        paths: ["b.txt"],
        pathsComplete: false,
        cause: "COMMITS_UNAVAILABLE",
      },
    });
    expect(inspect(machine.into)).toMatchObject({ head: base, branch: "main", dirtyFiles: "", strays: "" });
    expect(gitMaybe(machine.into, ["config", "strata.restoreStage"])).toBe("closest-commit");
    expect(report.result.missing.nextStep).toContain(second.head!.slice(0, 12));
  });

  it("tries the caller's earlier commits, nearest first, before the branch tip", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    addOrigin(root);
    write(root, "a.txt", "pushed\n");
    const earlier = commitAll(root, "pushed later on");
    git(root, ["push", "--quiet", "origin", "main"]);
    write(root, "a.txt", "more\n");
    commitAll(root, "and more, pushed");
    git(root, ["push", "--quiet", "origin", "main"]);
    git(root, ["reset", "--quiet", "--hard", earlier]);
    write(root, "c.txt", "local\n");
    commitAll(root, "local");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    blobs.delete(manifest.bundle!.digest);

    const machine = secondMachine();
    const report = await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, machine.into, {
      ...options(blobs, machine.stateDir),
      candidates: ["9".repeat(40), earlier, "not-an-id"],
    });
    expect(report.result.holds).toMatchObject({ stage: "closest-commit", head: earlier, basis: "earlier-snapshot" });
    expect(report.result.missing.cause).toBe("BLOB_MISSING");
    expect(report.result.missing.commits).toEqual([manifest.head]);
    expect(report.result.missing.nextStep).toMatch(/Or push commit/);
  });

  it("names the pushed base the bundle builds on when the remote moved away, not the unpushed commits", async () => {
    const captured = await unpushedOnMovedRemote();
    const bundled = captured.manifest.bundle!.commits;
    expect(bundled).toHaveLength(3);
    const { report } = await restoreElsewhere(captured.manifest, captured.blobs);
    expect(report.path).toBeNull();
    expect(report.result).toMatchObject({
      status: "unrestored",
      missing: { commits: [captured.base], cause: "COMMITS_UNAVAILABLE" },
    });
    const { causeMessage, nextStep } = report.result.missing;
    expect(causeMessage).toContain(`pushed commit ${captured.base}`);
    expect(nextStep).toContain(captured.base.slice(0, 12));
    expect(nextStep).not.toMatch(/Push commit/);
    for (const commit of bundled) expect(nextStep).not.toContain(commit.slice(0, 12));

    // The base is all that was missing: a host that has it restores everything from the bundle.
    const again = await restoreElsewhere(captured.manifest, captured.blobs, { objectStore: captured.root });
    expect(again.report.result.status).toBe("restored");
    expect(inspect(again.into)).toMatchObject({ tree: captured.manifest.tree, head: captured.manifest.head });
  });

  it("writes nothing when no commit can be had, and exactOnly throws the cause", async () => {
    const fixture = CHECKOUT_FIXTURES.find((f) => f.name.startsWith("a detached HEAD"));
    const captured = await fixture!.make();
    captured.blobs.delete(captured.manifest.bundle!.digest);
    const machine = secondMachine();
    const report = await restoreWorktree(
      { snapshotId: SNAPSHOT_ID, manifest: captured.manifest },
      machine.into,
      options(captured.blobs, machine.stateDir),
    );
    expect(report.path).toBeNull();
    expect(report.result).toMatchObject({
      status: "unrestored",
      holds: { stage: "nothing", head: null, tree: null },
      missing: {
        commits: captured.manifest.bundle!.commits,
        changeSets: captured.manifest.patches.map((p) => ({ uuid: p.uuid, reason: "no-base" })),
        cause: "BLOB_MISSING",
      },
    });
    expect(readdirSync(join(machine.into, ".."))).toEqual([]);
    expect(readdirSync(join(machine.stateDir, "restores"))).toEqual([]);

    const exact = await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest: captured.manifest }, machine.into, {
      ...options(captured.blobs, machine.stateDir),
      exactOnly: true,
    }).then(
      () => {
        throw new Error("expected a failure");
      },
      (e: unknown) => e as StrataError,
    );
    expect(exact.code).toBe("BLOB_MISSING");
    expect(readdirSync(join(machine.into, ".."))).toEqual([]);
  });
});

describe("files whose bytes the repository's line-ending attributes do not read back", () => {
  const eolFixture = () => CHECKOUT_FIXTURES.find((f) => f.name.includes("text eol=lf"))!.make();

  it("writes a blob committed with CRLF before the `text` attribute as it is, verified by its bytes", async () => {
    const root = crlfBeforeTextAttribute();
    const blobs = new Map<string, Buffer>();
    const recorded = await captureInto(root, blobs);
    expect(recorded.verbatim).toEqual([expect.objectContaining({ path: "legacy.txt", attributes: "text" })]);

    const { into, report } = await restoreElsewhere(recorded, blobs);
    expect(report.result.status, JSON.stringify(report.result.missing)).toBe("restored");
    // Re-read, git would make it "one\ntwo\n" (another blob): the file is verified by its bytes,
    // which are the blob's own, as on the capturing machine.
    expect(readFileSync(join(into, "legacy.txt"), "latin1")).toBe("one\r\ntwo\r\n");
    expect(git(into, ["write-tree"]).trim()).toBe(recorded.tree);
  });

  it("names the repository's attributes, not this host, when a snapshot holds no copy of the bytes", async () => {
    const captured = await eolFixture();
    const { verbatim, ...older } = captured.manifest;
    expect(verbatim?.length).toBeGreaterThan(0);
    const { report } = await restoreElsewhere(older, captured.blobs);
    expect(report.result).toMatchObject({
      status: "degraded",
      holds: { stage: "exact", tree: captured.manifest.tree },
      missing: { cause: "TREE_MISMATCH", paths: ["data.bin", "fixtures/committed.txt", "src/plain.js"] },
    });
    expect(report.result.missing.causeMessage).toContain("repository's own attributes (text eol=lf)");
    expect(report.result.missing.nextStep).toMatch(/Capture the checkout again/);
    expect(report.result.missing.nextStep).not.toMatch(/host without/);
  });

  it("reports a stored copy of the bytes that is gone as BLOB_MISSING, naming the file", async () => {
    const captured = await eolFixture();
    const gone = captured.manifest.verbatim!.find((f) => f.path === "data.bin")!;
    captured.blobs.delete(gone.bytes!.digest);
    const { into, report } = await restoreElsewhere(captured.manifest, captured.blobs);
    expect(report.result).toMatchObject({
      status: "degraded",
      missing: { cause: "BLOB_MISSING", paths: ["data.bin"] },
    });
    expect(report.result.missing.nextStep).toContain(gone.bytes!.digest.slice(0, 12));
    // The other files still hold their recorded bytes.
    const plain = readFileSync(join(into, "src/plain.js"), "latin1");
    expect(plain).toBe(readFileSync(join(captured.root, "src/plain.js"), "latin1"));
  });
});

describe("a host object store", () => {
  it("is borrowed through alternates, so no commit is fetched", async () => {
    const captured = await CHECKOUT_FIXTURES[2]!.make();
    const machine = secondMachine();
    // The bundle is gone, but this host has the commits.
    captured.blobs.delete(captured.manifest.bundle!.digest);
    const report = await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest: captured.manifest }, machine.into, {
      ...options(captured.blobs, machine.stateDir),
      objectStore: captured.root,
    });
    expect(report.result.status).toBe("restored");
    expect(report.result.timings?.commitsFrom).toBe("object-store");
    expect(report.result.warnings.map((w) => w.kind)).toContain("shared-object-store");
    expect(inspect(machine.into).tree).toBe(captured.manifest.tree);
  });
});

describe("a host whose checkout filters change the files written", () => {
  it("finds a file a smudge filter changed even when its stat data is older than the index", async () => {
    const root = initRepository({ ".gitattributes": "*.txt filter=shout\n", "a.txt": "quiet\n", "b.md": "plain\n" });
    const config = join(temporaryDirectory(), "gitconfig");
    writeFileSync(config, '[filter "shout"]\n\tsmudge = tr a-z A-Z\n');
    const env = { ...process.env, GIT_CONFIG_GLOBAL: config };
    const index = join(temporaryDirectory(), "index");
    copyFileSync(join(root, ".git", "index"), index);
    for (const file of ["a.txt", "b.md"]) rmSync(join(root, file));
    spawnSync("git", ["checkout-index", "--all", "--force", "--index"], {
      cwd: root,
      env: { ...env, GIT_INDEX_FILE: index },
    });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("QUIET\n");
    // As when writing the files crossed a second: the index is newer than every file in it.
    const later = Date.now() / 1000 + 60;
    utimesSync(index, later, later);
    const runner = createGitRunner({ cwd: root, baseEnv: env });
    // A refresh alone trusts the stat data checkout recorded for the changed file.
    expect(await runner.run(filesDifferingFromIndex(index))).toEqual([]);
    utimesSync(index, later, later);
    expect(await filesDifferingFromBlobs(runner, index)).toEqual(["a.txt"]);
  });

  it("keeps the worktree as written and names the files that differ (TREE_MISMATCH)", async () => {
    const root = initRepository({ ".gitattributes": "*.txt filter=shout\n", "a.txt": "quiet\n", "b.md": "plain\n" });
    write(root, "c.txt", "also quiet\n");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    // This host's global configuration has a smudge filter that the capturing host did not.
    const config = join(temporaryDirectory(), "gitconfig");
    writeFileSync(config, '[filter "shout"]\n\tsmudge = tr a-z A-Z\n');
    const machine = secondMachine();
    const report = await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, machine.into, {
      ...options(blobs, machine.stateDir),
      baseEnv: { ...process.env, GIT_CONFIG_GLOBAL: config },
    });
    expect(report.result).toMatchObject({
      status: "degraded",
      holds: { stage: "exact", tree: manifest.tree },
      missing: { changeSets: [], paths: ["a.txt", "c.txt"], cause: "TREE_MISMATCH" },
    });
    expect(readFileSync(join(machine.into, "a.txt"), "utf8")).toBe("QUIET\n");
    expect(readFileSync(join(machine.into, "b.md"), "utf8")).toBe("plain\n");

    const exact = await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, secondMachine().into, {
      ...options(blobs, machine.stateDir),
      baseEnv: { ...process.env, GIT_CONFIG_GLOBAL: config },
      exactOnly: true,
    }).then(
      () => null,
      (e: unknown) => e as StrataError,
    );
    expect(exact?.code).toBe("TREE_MISMATCH");
  });
});
