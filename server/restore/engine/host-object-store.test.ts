import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CaptureManifest } from "../../domain/capture-manifest.ts";
import type { RestoreResult } from "../../domain/restore-result.ts";
import { hostObjectStorePath } from "./host-object-store.ts";
import { memoryBlobSource } from "./restore-blobs.ts";
import { fetchableRemotes } from "./restore-history.ts";
import { restoreWorktree, type RestoreOptions } from "./restore.ts";
import { captureInto } from "../../testing/checkouts.ts";
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

const SNAPSHOT_ID = "4b1f7e0a-2c3d-4e5f-8a9b-0c1d2e3f4a5b";

/** Bytes under a directory (files only). */
function diskBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) total += diskBytes(full);
    else if (entry.isFile()) total += statSync(full).size;
  }
  return total;
}

/** A checkout with some bulk (files that do not compress away), pushed to a file:// origin. */
function pushedCheckout(files = 40): { root: string; remote: string } {
  const contents: Record<string, string> = {};
  for (let i = 0; i < files; i++) {
    contents[`src/file-${i}.txt`] = Array.from({ length: 200 }, (_, j) =>
      createHash("sha256").update(`${i}:${j}:${Math.random()}`).digest("hex"),
    ).join("\n");
  }
  const root = initRepository(contents);
  const remote = addOrigin(root);
  return { root, remote };
}

/** A host: its data directory's stores and its restore state. */
function host() {
  const dir = temporaryDirectory("strata-host-");
  return { stores: join(dir, "objects"), stateDir: join(dir, "state"), worktrees: join(dir, "worktrees") };
}

async function restoreOn(
  h: ReturnType<typeof host>,
  manifest: CaptureManifest,
  blobs: Map<string, Buffer>,
  name: string,
  extra: Partial<RestoreOptions> = {},
) {
  const into = join(h.worktrees, name);
  const report = await restoreWorktree({ snapshotId: SNAPSHOT_ID, manifest }, into, {
    blobs: memoryBlobSource(blobs),
    stateDir: h.stateDir,
    objectStores: h.stores,
    ...extra,
  });
  return { into, result: report.result };
}

function storeOf(h: ReturnType<typeof host>, manifest: CaptureManifest): string {
  const remotes = fetchableRemotes(manifest).map((r) => ({ name: r.name, url: r.fetchUrl }));
  return hostObjectStorePath(h.stores, remotes, manifest.objectFormat)!;
}

/** A global git configuration that makes every fetch use protocol v0 (no commit by id from a file:// remote). */
function protocolV0Env(): Record<string, string | undefined> {
  const file = join(temporaryDirectory("strata-gitconfig-"), "config");
  writeFileSync(file, "[protocol]\n\tversion = 0\n");
  return { ...process.env, GIT_CONFIG_GLOBAL: file };
}

describe("one object store per repository on this host", () => {
  it("is shared by restores of the repository: the second fetches nothing and writes almost nothing", async () => {
    const { root } = pushedCheckout();
    write(root, "src/file-0.txt", "edited\n");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    const h = host();

    const first = await restoreOn(h, manifest, blobs, "one");
    const store = storeOf(h, manifest);
    expect(first.result).toMatchObject({ status: "restored", objectStore: store });
    expect(first.result.timings?.commitsFrom).toBe("remote");
    expect(first.result.warnings.map((w) => w.kind)).toContain("shared-object-store");

    const spy = spyGit();
    const second = await restoreOn(h, manifest, blobs, "two", { gitPath: spy.gitPath });
    expect(second.result).toMatchObject({ status: "restored", objectStore: store });
    expect(second.result.timings?.commitsFrom).toBe("object-store");
    expect(spy.calls().filter((c) => / fetch /.test(` ${c} `))).toEqual([]);
    expect(git(second.into, ["write-tree"]).trim()).toBe(manifest.tree);
    expect(git(second.into, ["fsck", "--connectivity-only"])).toBeDefined();
    // The second worktree's own objects are a small fraction of the store's.
    expect(diskBytes(join(second.into, ".git", "objects"))).toBeLessThan(diskBytes(join(store, "objects")) / 5);
    // What the change wrote is one pack, not a file per object; the index is version 4 (paths
    // prefix-compressed); Strata's pushed refs keep no reflog files.
    expect(git(second.into, ["count-objects", "-v"])).toMatch(/^count: 0$/m);
    expect(git(second.into, ["count-objects", "-v"])).toMatch(/^packs: 1$/m);
    expect(readFileSync(join(second.into, ".git", "index")).readUInt32BE(4)).toBe(4);
    expect(existsSync(join(second.into, ".git", "logs", "refs", "remotes", "strata"))).toBe(false);
  });

  it("fetches a missing commit alone with depth 1, and the history behind it when the remote refuses that", async () => {
    const { root } = pushedCheckout(2);
    const older = git(root, ["rev-parse", "HEAD"]).trim();
    write(root, "src/file-1.txt", "second\n");
    commitAll(root, "second");
    write(root, "src/file-1.txt", "third\n");
    commitAll(root, "third");
    git(root, ["push", "--quiet", "origin", "main"]);
    const blobs = new Map<string, Buffer>();
    const latest = await captureInto(root, blobs);
    const h = host();

    const shallow = await restoreOn(h, latest, blobs, "shallow");
    const store = storeOf(h, latest);
    expect(shallow.result.status).toBe("restored");
    expect(git(store, ["rev-list", "--count", latest.head!]).trim()).toBe("1");
    expect(existsSync(join(store, "shallow"))).toBe(true);
    // The worktree grafts where the store's history is cut, so git log works there.
    expect(git(shallow.into, ["rev-list", "--count", "HEAD"]).trim()).toBe("1");
    expect(shallow.result.warnings.map((w) => w.kind)).toContain("shallow-history");

    // An older commit, from a remote that hands out no commit by id (protocol v0): the branches
    // are fetched whole, and the store's cut is lifted.
    git(root, ["reset", "--quiet", "--hard", older]);
    const earlier = await captureInto(root, blobs);
    const full = await restoreOn(h, earlier, blobs, "full", { baseEnv: protocolV0Env() });
    expect(full.result.status).toBe("restored");
    expect(existsSync(join(store, "shallow"))).toBe(false);
    expect(git(store, ["rev-list", "--count", latest.head!]).trim()).toBe("3");
    expect(git(store, ["rev-parse", "refs/remotes/origin/main"]).trim()).toBe(latest.head);
    expect(git(full.into, ["rev-parse", "HEAD"]).trim()).toBe(older);
  });

  it("makes a capture in a restored worktree bundle only the commits really unpushed", async () => {
    const { root } = pushedCheckout(2);
    const base = git(root, ["rev-parse", "HEAD"]).trim();
    write(root, "local.txt", "one\n");
    const u1 = commitAll(root, "local one");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    expect(manifest.bundle?.commits).toEqual([u1]);
    const h = host();

    const restored = await restoreOn(h, manifest, blobs, "w");
    expect(restored.result.status).toBe("restored");
    const store = storeOf(h, manifest);
    expect(git(store, ["rev-parse", `refs/remotes/strata/pushed/${base}`]).trim()).toBe(base);
    expect(git(restored.into, ["rev-parse", `refs/remotes/strata/pushed/${base}`]).trim()).toBe(base);

    write(restored.into, "local.txt", "two\n");
    const u2 = commitAll(restored.into, "local two");
    const again = await captureInto(restored.into, new Map());
    expect(new Set(again.bundle?.commits)).toEqual(new Set([u1, u2]));
  });

  it("restores unpushed commits built on a pushed commit with history, which the store fetched shallow", async () => {
    const { root } = pushedCheckout(2);
    write(root, "src/file-0.txt", "second pushed commit\n");
    const base = commitAll(root, "pushed two");
    git(root, ["push", "--quiet", "origin", "main"]);
    write(root, "local.txt", "one\n");
    const unpushed = commitAll(root, "local one");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    expect(manifest.bundle?.commits).toEqual([unpushed]);
    const h = host();

    const restored = await restoreOn(h, manifest, blobs, "w");
    expect(restored.result.status).toBe("restored");
    expect(restored.result.timings?.commitsFrom).toBe("bundle");
    expect(git(restored.into, ["rev-parse", "HEAD"]).trim()).toBe(unpushed);
    // The store holds the base alone; the restored repository knows where its history stops.
    expect(git(storeOf(h, manifest), ["rev-list", "--count", base]).trim()).toBe("1");
    expect(git(restored.into, ["log", "--format=%s"]).trim().split("\n")).toEqual(["local one", "pushed two"]);
  });

  it("lets the degraded ladder find the pushed branch tip in the store when the remote is gone", async () => {
    const { root, remote } = pushedCheckout(2);
    const base = git(root, ["rev-parse", "HEAD"]).trim();
    write(root, "local.txt", "one\n");
    commitAll(root, "local one");
    const blobs = new Map<string, Buffer>();
    const first = await captureInto(root, blobs);
    const h = host();
    expect((await restoreOn(h, first, blobs, "first")).result.status).toBe("restored");

    write(root, "local.txt", "two\n");
    commitAll(root, "local two");
    const second = await captureInto(root, blobs, { previous: first });
    blobs.delete(second.bundle!.digest);
    rmSync(remote, { recursive: true, force: true });

    const { result } = await restoreOn(h, second, blobs, "second");
    expect(result).toMatchObject({
      status: "degraded",
      holds: { stage: "closest-commit", head: base, basis: "branch-tip" },
      missing: { cause: "BLOB_MISSING" },
    });
    expect(result.timings?.commitsFrom).toBe("object-store");

    // Without the store nothing can be had.
    const elsewhere = host();
    const without = await restoreOn(elsewhere, second, blobs, "second", { objectStores: null });
    expect(without.result.status).toBe("unrestored");
  });

  it("breaks a lock its holder left when it died on this host", async () => {
    const { root } = pushedCheckout(2);
    write(root, "src/file-0.txt", "edited\n");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    const h = host();
    const store = storeOf(h, manifest);
    const gone = spawnSync(process.execPath, ["-e", "0"]).pid!;
    mkdirSync(h.stores, { recursive: true });
    writeFileSync(`${store}.lock`, JSON.stringify({ token: "left-behind", pid: gone, host: hostname() }));
    const { result } = await restoreOn(h, manifest, blobs, "w");
    expect(result).toMatchObject({ status: "restored", objectStore: store });
    expect(existsSync(`${store}.lock`)).toBe(false);
  });

  it("stays valid when two processes restore into the same new store at once", async () => {
    const { root } = pushedCheckout();
    write(root, "local.txt", "one\n");
    commitAll(root, "local one");
    write(root, "src/file-3.txt", "dirty\n");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    const h = host();
    const encoded = Object.fromEntries([...blobs].map(([d, b]) => [d, b.toString("base64")]));
    const run = (name: string) =>
      new Promise<RestoreResult>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [
            "--import",
            "tsx",
            "server/testing/store-restore-process.ts",
            JSON.stringify({
              manifest,
              snapshotId: SNAPSHOT_ID,
              into: join(h.worktrees, name),
              stateDir: h.stateDir,
              objectStores: h.stores,
              blobs: encoded,
            }),
          ],
          { stdio: ["ignore", "pipe", "inherit"] },
        );
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
        child.on("error", reject);
        child.on("exit", (code) =>
          code === 0 ? resolve(JSON.parse(out) as RestoreResult) : reject(new Error(`exit ${code}`)),
        );
      });
    const results = await Promise.all([run("a"), run("b")]);
    const store = storeOf(h, manifest);
    for (const result of results) expect(result).toMatchObject({ status: "restored", objectStore: store });
    git(store, ["fsck", "--no-progress"]);
    for (const name of ["a", "b"]) {
      const into = join(h.worktrees, name);
      git(into, ["fsck", "--no-progress"]);
      expect(git(into, ["write-tree"]).trim()).toBe(manifest.tree);
    }
    expect(readdirSync(h.stores).filter((f) => f.endsWith(".lock") || f.includes(".new-"))).toEqual([]);
  }, 60_000);
});
