// Git LFS files restored on a "second machine" with real git-lfs: committed files' objects from
// the recorded remotes (a bare repository whose LFS store git-lfs's file transfer serves), files
// edited or added since HEAD from the snapshot, in order, never waiting for input; a file whose
// object nobody has stays a pointer and the warning names exactly it.
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaptureManifest } from "../../domain/capture-manifest.ts";
import { StrataError } from "../../domain/errors.ts";
import { checkRestoreRecord } from "../../domain/restore-record.ts";
import type { RestoreResult } from "../../domain/restore-result.ts";
import { captureInto } from "../../testing/checkouts.ts";
import {
  credentialsWall,
  lfsCheckout,
  lfsOid,
  lfsStoreHas,
  pushWithoutLfsObjects,
  requireGitLfs,
} from "../../testing/lfs.ts";
import { git, removeTemporaryDirectories, temporaryDirectory, write } from "../../testing/repos.ts";
import { memoryBlobSource } from "./restore-blobs.ts";
import { resetWorktree } from "./reset-worktree.ts";
import { restoreWorktree, type RestoreOptions } from "./restore.ts";

beforeAll(requireGitLfs);
afterAll(removeTemporaryDirectories);

const SNAPSHOT_ID = "6b1f0c2e-3d4a-4b5c-8d6e-7f8091a2b3c4";

const MODEL = Buffer.from("model weights \u0000\u0001\u0002 v1\n");
const TEXTURE = Buffer.from("texture \u0000\u00ff\n");

async function restoreElsewhere(
  manifest: CaptureManifest,
  blobs: ReadonlyMap<string, Buffer>,
  extra: Partial<RestoreOptions> = {},
) {
  const machine = temporaryDirectory("strata-machine-");
  const into = join(machine, "restored");
  const report = await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, into, {
    blobs: memoryBlobSource(blobs),
    stateDir: join(machine, "state"),
    ...extra,
  });
  return { into, result: report.result };
}

function lfsWarning(result: RestoreResult) {
  return result.warnings.find((w) => w.kind === "lfs-objects-unavailable");
}

/** The restored worktree re-read by plain git: the recorded tree, nothing dirty. */
function expectTree(dir: string, manifest: CaptureManifest) {
  git(dir, ["update-index", "-q", "--really-refresh"]);
  expect(git(dir, ["diff-files", "--name-only"]).trim()).toBe("");
  expect(git(dir, ["write-tree"]).trim()).toBe(manifest.tree);
}

function pointerText(content: Buffer): string {
  return `version https://git-lfs.github.com/spec/v1\noid sha256:${lfsOid(content)}\nsize ${content.length}\n`;
}

describe("Git LFS files in a restore", () => {
  it("downloads the objects of committed files from the recorded remote", async () => {
    const { root, origin } = lfsCheckout({ "models/model.bin": MODEL, "README.md": "models\n" });
    expect(lfsStoreHas(origin, lfsOid(MODEL))).toBe(true);
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    // Nothing changed since HEAD: the snapshot stores no LFS object.
    expect(manifest.lfsObjects).toBeUndefined();

    const { into, result } = await restoreElsewhere(manifest, blobs);
    expect(result.status, JSON.stringify(result.missing)).toBe("restored");
    expect(readFileSync(join(into, "models/model.bin"))).toEqual(MODEL);
    expect(lfsWarning(result)).toBeUndefined();
    // LFS is the restore's own work, not a conversion of this host's to warn about.
    expect(result.warnings.map((w) => w.kind)).not.toContain("filters");
    expectTree(into, manifest);
    // The restored worktree reads its LFS files through the filter that wrote them.
    expect(git(into, ["config", "--local", "filter.lfs.process"]).trim()).toBe("git-lfs filter-process");
  });

  it("is never reset in place for reuse: an LFS snapshot restores fresh, nothing written", async () => {
    const { root } = lfsCheckout({ "models/model.bin": MODEL });
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    const { into } = await restoreElsewhere(manifest, blobs);
    const before = git(into, ["status", "--porcelain", "--ignored"]);
    const report = await resetWorktree({ snapshotId: SNAPSHOT_ID, manifest }, into, manifest, {
      blobs: memoryBlobSource(blobs),
    });
    expect(report).toMatchObject({ status: "declined", touched: false });
    expect(git(into, ["status", "--porcelain", "--ignored"])).toBe(before);
  });

  it("restores an LFS file edited since HEAD, and one added, from the snapshot", async () => {
    const { root, origin } = lfsCheckout({ "models/model.bin": MODEL, "textures/wall.bin": TEXTURE });
    const edited = Buffer.from("model weights \u0000\u0003 v2, retrained\n");
    const added = Buffer.from("a new asset \u0000\u0004\n");
    write(root, "models/model.bin", edited);
    write(root, "textures/floor.bin", added);
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    expect(manifest.lfsObjects).toEqual(
      [
        { oid: lfsOid(edited), size: edited.length },
        { oid: lfsOid(added), size: added.length },
      ].sort((a, b) => (a.oid < b.oid ? -1 : 1)),
    );
    expect(blobs.get(lfsOid(edited))).toEqual(edited);
    expect(blobs.get(lfsOid(added))).toEqual(added);
    // No remote has them: they were never pushed.
    expect(lfsStoreHas(origin, lfsOid(edited))).toBe(false);

    const { into, result } = await restoreElsewhere(manifest, blobs);
    expect(result.status, JSON.stringify(result.missing)).toBe("restored");
    expect(readFileSync(join(into, "models/model.bin"))).toEqual(edited);
    expect(readFileSync(join(into, "textures/floor.bin"))).toEqual(added);
    expect(readFileSync(join(into, "textures/wall.bin"))).toEqual(TEXTURE);
    expect(lfsWarning(result)).toBeUndefined();
    expectTree(into, manifest);
  });

  it("downloads an edited file's object from the recorded remotes in order when the snapshot lacks it", async () => {
    // `empty` comes first and has neither the commits nor any LFS object; origin has both.
    const { root, origin } = lfsCheckout({ "models/model.bin": MODEL }, (dir) => {
      const empty = temporaryDirectory("strata-remote-");
      git(empty, ["init", "--quiet", "--bare"]);
      git(dir, ["remote", "add", "empty", `file://${empty}`]);
    });
    const edited = Buffer.from("model weights, pushed by hand\n");
    write(root, "models/model.bin", edited);
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    expect(manifest.remotes.map((r) => r.name)).toEqual(["empty", "origin"]);
    // The edit's object reaches origin's LFS store the way a user would send it; the
    // snapshot's own copy is lost.
    git(root, ["lfs", "push", "--object-id", "origin", lfsOid(edited)]);
    blobs.delete(lfsOid(edited));

    const { into, result } = await restoreElsewhere(manifest, blobs);
    expect(result.status, JSON.stringify(result.missing)).toBe("restored");
    expect(readFileSync(join(into, "models/model.bin"))).toEqual(edited);
    expect(lfsWarning(result)).toBeUndefined();
    expect(lfsStoreHas(origin, lfsOid(edited))).toBe(true);
  });

  it("keeps the pointer of a file whose object nobody has, names exactly that file, and restores the rest", async () => {
    const { root, origin } = lfsCheckout({ "models/model.bin": MODEL });
    const lost = Buffer.from("never uploaded \u0000\n");
    pushWithoutLfsObjects(root, { "models/lost.bin": lost, "notes.txt": "notes\n" });
    expect(lfsStoreHas(origin, lfsOid(lost))).toBe(false);
    const edited = Buffer.from("edited since HEAD\n");
    write(root, "models/model.bin", edited);
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);

    const { into, result } = await restoreElsewhere(manifest, blobs);
    // The pointer is what the tree records: the restore verifies, and says what it lacks.
    expect(result.status, JSON.stringify(result.missing)).toBe("restored");
    expect(readFileSync(join(into, "models/lost.bin"), "utf8")).toBe(pointerText(lost));
    expect(readFileSync(join(into, "models/model.bin"))).toEqual(edited);
    expect(readFileSync(join(into, "notes.txt"), "utf8")).toBe("notes\n");
    const warning = lfsWarning(result);
    expect(warning?.paths).toEqual(["models/lost.bin"]);
    expect(warning?.message).toContain("git lfs push");
    expectTree(into, manifest);
  });

  it("never waits for input: a remote that asks for credentials is passed over for the next", async () => {
    const wall = await credentialsWall();
    try {
      const { root } = lfsCheckout({ "models/model.bin": MODEL }, (dir) => {
        git(dir, ["remote", "add", "gate", wall.url]);
      });
      const blobs = new Map<string, Buffer>();
      const manifest = await captureInto(root, blobs);
      expect(manifest.remotes.map((r) => r.name)).toEqual(["gate", "origin"]);
      const started = Date.now();
      const { into, result } = await restoreElsewhere(manifest, blobs, { fetchTimeoutMs: 20_000 });
      expect(result.status, JSON.stringify(result.missing)).toBe("restored");
      expect(readFileSync(join(into, "models/model.bin"))).toEqual(MODEL);
      // Both git and git-lfs asked it first and were refused at once: no prompt, no timeout.
      expect(wall.requests().some((r) => r.includes("/info/refs"))).toBe(true);
      expect(wall.requests().some((r) => r.startsWith("POST /acme/app.git/info/lfs/objects/batch"))).toBe(true);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await wall.close();
    }
  });

  it("on a host without git-lfs, keeps every LFS file's pointer and says to install it", async () => {
    const { root } = lfsCheckout({ "models/model.bin": MODEL, "README.md": "models\n" });
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    // A host whose PATH has git and no git-lfs, and no system or global configuration naming it.
    const bin = temporaryDirectory("strata-bin-");
    symlinkSync(git(root, ["--exec-path"]).trim() + "/git", join(bin, "git"));
    const home = temporaryDirectory("strata-home-");
    mkdirSync(join(home, ".config"), { recursive: true });
    const baseEnv = { ...process.env, PATH: bin, HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
    const { into, result } = await restoreElsewhere(manifest, blobs, {
      baseEnv: { ...baseEnv, GIT_CONFIG_NOSYSTEM: "1" },
      gitPath: join(bin, "git"),
    });
    expect(result.status, JSON.stringify(result.missing)).toBe("restored");
    expect(readFileSync(join(into, "models/model.bin"), "utf8")).toBe(pointerText(MODEL));
    const warning = lfsWarning(result);
    expect(warning?.paths).toEqual(["models/model.bin"]);
    expect(warning?.message).toContain("git-lfs is not installed");
  });

  it("refuses a record whose LFS objects are not sha256 digests", async () => {
    const { root } = lfsCheckout({ "models/model.bin": MODEL });
    const manifest = await captureInto(root, new Map());
    const record = { snapshotId: SNAPSHOT_ID, manifest: { ...manifest, lfsObjects: [{ oid: "../../x", size: 1 }] } };
    let error: unknown = null;
    try {
      checkRestoreRecord(record);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StrataError);
    expect(error).toMatchObject({ code: "INVALID_SNAPSHOT", data: { field: "lfsObjects[0].oid" } });
  });
});
