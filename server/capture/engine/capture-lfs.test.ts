// What a capture keeps of Git LFS files, with real git-lfs: the objects of files changed since
// HEAD (no remote has them), never those of committed files or of files it leaves out, each read
// once, and nothing at all (not even a git call) in a repository whose attributes name no LFS.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keptLfsObjects } from "./capture-lfs.ts";
import { captureCheckout } from "./capture.ts";
import { createGitRunner } from "../../git/runner.ts";
import { LFS_ATTRIBUTES, lfsCheckout, lfsOid, requireGitLfs } from "../../testing/lfs.ts";
import {
  imageOf,
  initRepository,
  removeTemporaryDirectories,
  spyGit,
  temporaryDirectory,
  write,
} from "../../testing/repos.ts";

beforeAll(requireGitLfs);
afterAll(removeTemporaryDirectories);

const MODEL = Buffer.from("model \u0000 v1\n");
const TEXTURE = Buffer.from("texture \u0000\n");

async function captured(root: string, options: Parameters<typeof captureCheckout>[1] = {}) {
  const result = await captureCheckout(root, options);
  if (result.outcome !== "captured") throw new Error(`expected a capture, got ${result.outcome}`);
  return result;
}

describe("Git LFS files in a capture", () => {
  it("stores the object of each LFS file changed since HEAD, and leaves the checkout as it was", async () => {
    const { root } = lfsCheckout({ "models/model.bin": MODEL, "textures/wall.bin": TEXTURE, "README.md": "r\n" });
    const edited = Buffer.from("model \u0000 v2\n");
    write(root, "models/model.bin", edited);
    const before = imageOf(root);
    const first = await captured(root);
    expect(imageOf(root)).toEqual(before);
    expect(first.manifest.lfsObjects).toEqual([{ oid: lfsOid(edited), size: edited.length }]);
    expect(first.artifacts.get(lfsOid(edited))).toEqual(edited);
    // The committed file's object is on the remote: not stored.
    expect(first.artifacts.has(lfsOid(TEXTURE))).toBe(false);

    // The next capture built on it lists the object without reading it again.
    write(root, "README.md", "r2\n");
    const next = await captured(root, { previous: first.manifest });
    expect(next.manifest.lfsObjects).toEqual(first.manifest.lfsObjects);
    expect(next.artifacts.has(lfsOid(edited))).toBe(false);
  });

  it("reads an object from the worktree when the LFS store lacks it, and records none it cannot read", async () => {
    const { root } = lfsCheckout({ "models/model.bin": MODEL });
    const edited = Buffer.from("model \u0000 v3\n");
    write(root, "models/model.bin", edited);
    const { manifest } = await captured(root);
    const keep = () =>
      keptLfsObjects(createGitRunner({ cwd: root }), {
        root,
        // A git directory whose LFS store is empty.
        commonDir: temporaryDirectory("strata-empty-"),
        head: manifest.head,
        tree: manifest.tree,
        attributeTexts: [LFS_ATTRIBUTES],
        previous: null,
      });
    const fromWorktree = await keep();
    expect(fromWorktree.entries).toEqual([{ oid: lfsOid(edited), size: edited.length }]);
    expect(fromWorktree.artifacts.get(lfsOid(edited))).toEqual(edited);
    // Changed again since: the recorded object is nowhere on this machine.
    write(root, "models/model.bin", "model v4\n");
    expect(await keep()).toEqual({ entries: [], artifacts: new Map() });
  });

  it("never stores the content of an LFS file the capture leaves out", async () => {
    const { root } = lfsCheckout({ "models/model.bin": MODEL });
    const key = Buffer.from("FAKE KEY MATERIAL \u0000\n");
    write(root, "keys/id_rsa.bin", key);
    const big = Buffer.alloc(4096, 7);
    write(root, "models/model.bin", big);
    const { manifest, artifacts } = await captured(root, { maxFileBytes: 1024 });
    expect(manifest.omitted.map((o) => [o.path, o.reason])).toEqual([
      ["keys/id_rsa.bin", "denied"],
      ["models/model.bin", "too-large"],
    ]);
    expect(manifest.lfsObjects).toBeUndefined();
    expect([...artifacts.values()].some((b) => b.includes(key) || b.equals(big))).toBe(false);
  });

  it("costs no git call in a repository whose attributes name no LFS filter", async () => {
    const root = initRepository({ "a.bin": "a\n", ".gitattributes": "*.bin -diff\n" });
    write(root, "a.bin", "b\n");
    const spy = spyGit();
    const { manifest } = await captured(root, { gitPath: spy.gitPath });
    expect(manifest.lfsObjects).toBeUndefined();
    expect(spy.calls().filter((c) => c.includes("%(objecttype) %(objectsize)"))).toEqual([]);
  });
});
