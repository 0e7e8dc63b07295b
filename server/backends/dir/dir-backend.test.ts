// The `dir` backend on real directories: pieces of large files, modes, links, empty and
// read-only directories, the deny-list, hostile records, layered records, adding dependency
// directories to a checkout. The store is in memory (the contract suite runs the catalog's).
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DIR_FULL_EVERY, dirManifestBytes, parseDirManifest, type DirManifest } from "../../domain/dir-manifest.ts";
import { isStrataError } from "../../domain/errors.ts";
import { treeImage } from "../../testing/backends.ts";
import { removeTemporaryDirectories, symlink, temporaryDirectory, write } from "../../testing/repos.ts";
import { memoryContentStore, readWhole } from "../content-store.ts";
import { sha256 } from "../../testing/content.ts";
import { pieceEnds, SINGLE_PIECE_BYTES } from "./chunks.ts";
import { captureDir } from "./dir-capture.ts";
import { restoreDir } from "./dir-restore.ts";

afterAll(removeTemporaryDirectories);

const MiB = 1024 * 1024;

function setup() {
  const store = memoryContentStore();
  const cacheDir = temporaryDirectory("strata-dir-cache-");
  const stateDir = temporaryDirectory("strata-dir-state-");
  return {
    store,
    capture: (dir: string, parent: string | null = null, include?: string[]) =>
      captureDir(dir, { store, cacheDir, parent, include }),
    restore: (ref: string, into: string, extra: { exactOnly?: boolean } = {}) =>
      restoreDir(ref, into, { source: store, stateDir, ...extra }),
    record: async (ref: string) => parseDirManifest(await readWhole(store, ref)),
    /** Stores a forged record and returns its reference. */
    forge: async (record: DirManifest) => {
      const bytes = dirManifestBytes(record);
      await store.put(sha256(bytes), bytes);
      return sha256(bytes);
    },
  };
}

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isStrataError(error)) return error;
    throw error;
  }
  throw new Error("expected a StrataError");
}

describe("pieces of large files", () => {
  it("keeps small files whole and cuts large ones where their content says", () => {
    expect(pieceEnds(new Uint8Array(SINGLE_PIECE_BYTES))).toEqual([SINGLE_PIECE_BYTES]);
    const big = randomBytes(9 * MiB);
    const ends = pieceEnds(big);
    expect(ends.length).toBeGreaterThan(2);
    expect(ends.at(-1)).toBe(big.length);
    // The same bytes shifted by an insertion cut at the same content after the insertion.
    const shifted = Buffer.concat([Buffer.from("inserted"), big]);
    const later = new Set(pieceEnds(shifted).map((e) => e - 8));
    expect(ends.slice(1, -1).filter((e) => later.has(e)).length).toBeGreaterThan(0);
  });

  it("stores an edited or shifted large file again only around the edit", async () => {
    const t = setup();
    const root = temporaryDirectory("strata-dir-");
    const big = randomBytes(24 * MiB);
    write(root, "data/model.bin", big);
    const first = await t.capture(root);
    expect(first.uploaded.bytes).toBeGreaterThan(24 * MiB);

    big.write("an edit in the middle", 12 * MiB);
    write(root, "data/model.bin", big);
    const edited = await t.capture(root, first.ref);
    expect(edited.uploaded.bytes).toBeLessThan(9 * MiB);

    write(root, "data/model.bin", Buffer.concat([Buffer.from("a header line\n"), big]));
    const shifted = await t.capture(root, edited.ref);
    expect(shifted.uploaded.bytes).toBeLessThan(9 * MiB);

    const into = join(temporaryDirectory("strata-dir-into-"), "w");
    expect((await t.restore(shifted.ref, into)).status).toBe("restored");
    expect(readFileSync(join(into, "data/model.bin")).equals(readFileSync(join(root, "data/model.bin")))).toBe(true);
  });
});

describe("what a capture holds", () => {
  it("restores modes, links, empty and read-only directories byte for byte", async () => {
    const t = setup();
    const root = temporaryDirectory("strata-dir-");
    write(root, "bin/tool", "#!/bin/sh\necho tool\n", 0o755);
    write(root, "private/key-material.txt", "only mine\n", 0o600);
    write(root, "locked/inside.txt", "read only dir\n", 0o444);
    write(root, "empty-file", "");
    mkdirSync(join(root, "cache/empty"), { recursive: true });
    symlink(root, "links/tool", "../bin/tool");
    symlink(root, "links/dir", "../locked");
    symlink(root, "links/dangling", "../nowhere");
    chmodSync(join(root, "locked"), 0o555);
    const captured = await t.capture(root);
    const into = join(temporaryDirectory("strata-dir-into-"), "w");
    const report = await t.restore(captured.ref, into);
    expect(report).toMatchObject({ status: "restored", stateDigest: captured.manifest.stateDigest });
    expect(treeImage(into)).toEqual(treeImage(root));
    // So that the temporary directories can be removed.
    for (const dir of [root, into]) chmodSync(join(dir, "locked"), 0o755);
  });

  it("leaves out secrets and links that leave the directory, never following them", async () => {
    const t = setup();
    const outside = temporaryDirectory("strata-outside-");
    write(outside, "secret.txt", "outside\n");
    const root = temporaryDirectory("strata-dir-");
    write(root, "app.js", "ok\n");
    write(root, ".env.local", "TOKEN=1\n");
    write(root, "config/server.pem", "-----BEGIN-----\n");
    write(root, ".env/inner.txt", "a denied directory is not entered\n");
    symlink(root, "escape-absolute", outside);
    symlink(root, "escape-relative", "../../..");
    const captured = await t.capture(root);
    expect(captured.omitted.map((o) => o.path).sort()).toEqual(
      [".env", ".env.local", "config/server.pem", "escape-absolute", "escape-relative"].sort(),
    );
    expect(captured.manifest.entries.map((e) => e.path).sort()).toEqual(["app.js", "config"]);
    const into = join(temporaryDirectory("strata-dir-into-"), "w");
    const report = await t.restore(captured.ref, into);
    expect(report.omitted.map((o) => o.path)).toContain(".env.local");
    expect(readdirSync(into).sort()).toEqual(["app.js", "config"]);
  });

  it("records only the change on its parent, and a whole record again after a long chain", async () => {
    const t = setup();
    const root = temporaryDirectory("strata-dir-");
    for (let i = 0; i < 20; i++) write(root, `pkg/file-${i}.js`, `module.exports = ${i};\n`);
    write(root, "pkg/gone.js", "to be removed\n");
    const first = await t.capture(root);
    write(root, "pkg/file-3.js", "module.exports = 'three';\n");
    rmSync(join(root, "pkg/gone.js"));
    const second = await t.capture(root, first.ref);
    const record = await t.record(second.ref);
    expect(record).toMatchObject({ parent: first.ref, depth: 1, removed: ["pkg/gone.js"] });
    expect(record.entries.map((e) => e.path)).toEqual(["pkg/file-3.js"]);
    expect(second.uploaded.blobs).toBe(2); // the changed file and the record

    let ref = second.ref;
    for (let i = 2; i <= DIR_FULL_EVERY; i++) {
      write(root, "pkg/counter.js", `${i}\n`);
      ref = (await t.capture(root, ref)).ref;
    }
    const last = await t.record(ref);
    expect(last.depth).toBe(0);
    expect(last.parent).toBeNull();
    const into = join(temporaryDirectory("strata-dir-into-"), "w");
    expect((await t.restore(ref, into)).status).toBe("restored");
    expect(treeImage(into)).toEqual(treeImage(root));
  });

  it("captures only the listed dependency directories that exist, and restores them only into an empty directory", async () => {
    const t = setup();
    const source = temporaryDirectory("strata-dir-");
    write(source, "package.json", "{}\n");
    write(source, "node_modules/a/index.js", "a\n");
    write(source, ".venv/lib/b.py", "b\n");
    const deps = await t.capture(source, null, ["node_modules", ".venv", "target"]);
    expect(deps.manifest.entries.map((e) => e.path)).not.toContain("package.json");

    const into = join(temporaryDirectory("strata-dir-into-"), "w");
    expect((await t.restore(deps.ref, into)).status).toBe("restored");
    expect(treeImage(into)).toEqual(treeImage(source, (path) => path === "package.json"));

    const taken = temporaryDirectory("strata-checkout-");
    write(taken, "node_modules/mine.js", "mine\n");
    expect((await failure(t.restore(deps.ref, taken))).code).toBe("UNSAFE_TARGET");
    expect(readdirSync(taken)).toEqual(["node_modules"]);
    expect(readdirSync(join(taken, "node_modules"))).toEqual(["mine.js"]);
  });

  it("restores what it can when a piece is missing, and names the files", async () => {
    const t = setup();
    const root = temporaryDirectory("strata-dir-");
    write(root, "kept.txt", "kept\n");
    write(root, "lost.txt", "lost\n");
    const captured = await t.capture(root);
    t.store.blobs.delete(sha256("lost\n"));
    const into = join(temporaryDirectory("strata-dir-into-"), "w");
    const report = await t.restore(captured.ref, into);
    expect(report).toMatchObject({ status: "degraded", missing: { paths: ["lost.txt"], cause: "BLOB_MISSING" } });
    expect(readdirSync(into)).toEqual(["kept.txt"]);
    expect((await failure(t.restore(captured.ref, join(into, "..", "exact"), { exactOnly: true }))).code).toBe(
      "BLOB_MISSING",
    );
    expect(existsSync(join(into, "..", "exact"))).toBe(false);
  });
});

describe("hostile records", () => {
  const cases: [string, (r: DirManifest) => DirManifest][] = [
    [
      "a path out of the directory",
      (r) => ({ ...r, entries: [...r.entries, { type: "dir", path: "a/../../x", mode: 0o755 }] }),
    ],
    ["an absolute path", (r) => ({ ...r, entries: [...r.entries, { type: "dir", path: "/absolute/x", mode: 0o755 }] })],
    ["a NUL in a path", (r) => ({ ...r, entries: [...r.entries, { type: "dir", path: "a\u0000b", mode: 0o755 }] })],
    [
      "a link out of the directory",
      (r) => ({ ...r, entries: [...r.entries, { type: "symlink", path: "l", target: "../../etc" }] }),
    ],
    [
      "a file below a link",
      (r) => ({
        ...r,
        entries: [
          ...r.entries,
          { type: "symlink", path: "through", target: "app" },
          { type: "file", path: "through/x", mode: 0o644, size: 3, digest: sha256("ok\n") },
        ],
      }),
    ],
    [
      "a secret",
      (r) => ({
        ...r,
        entries: [...r.entries, { type: "file", path: ".env", mode: 0o644, size: 3, digest: sha256("ok\n") }],
      }),
    ],
    ["a digest the entries do not add up to", (r) => ({ ...r, stateDigest: sha256("something else") })],
    ["a chain that does not end in a whole record", (r) => ({ ...r, depth: 1 })],
  ];

  for (const [what, poison] of cases) {
    it(`refuses ${what} before writing anything`, async () => {
      const t = setup();
      const root = temporaryDirectory("strata-dir-");
      write(root, "app/ok.txt", "ok\n");
      const { manifest } = await t.capture(root);
      const ref = await t.forge(poison(manifest));
      const parent = temporaryDirectory("strata-dir-hostile-");
      expect((await failure(t.restore(ref, join(parent, "w")))).code).toBe("INVALID_SNAPSHOT");
      expect(readdirSync(parent)).toEqual([]);
    });
  }

  it("refuses a record that is not one", async () => {
    const t = setup();
    const bytes = Buffer.from(JSON.stringify({ format: "strata-dir/1", entries: "no" }));
    await t.store.put(sha256(bytes), bytes);
    const parent = temporaryDirectory("strata-dir-hostile-");
    expect((await failure(t.restore(sha256(bytes), join(parent, "w")))).code).toBe("INVALID_SNAPSHOT");
    writeFileSync(join(parent, "marker"), "");
    expect(readdirSync(parent)).toEqual(["marker"]);
  });
});
