import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import type { Db } from "../db/client.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { isStrataError, type StrataError } from "../domain/errors.ts";
import {
  addOrigin,
  commitAll,
  git,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  treeFromPatches,
  write,
} from "../testing/repos.ts";
import { readBlob, statBlob } from "../content/blobs.ts";
import { captureAndPublish, localCatalog, type CatalogPort } from "./capture-publish.ts";
import { consistencyViolations } from "../testing/content.ts";
import { makeAgent, uniqueName } from "../testing/lineage.ts";

afterAll(removeTemporaryDirectories);

const SECRET = `FAKE-SECRET-${Math.random().toString(36).slice(2)}-NOT-A-REAL-KEY`;

function checkpointTarget(label: string) {
  return {
    kind: "checkpoint" as const,
    key: {
      repository: { identity: `example.invalid/${uniqueName(label)}` },
      backendKind: "local",
      baseImage: "test-image",
      workContextId: uniqueName("wc"),
    },
  };
}

async function blobBytes(db: Db, digest: string): Promise<Buffer> {
  const info = await statBlob(db, digest);
  if (!info) throw new Error(`blob ${digest} is not stored`);
  const parts: Uint8Array[] = [];
  for await (const part of readBlob(db, info)) parts.push(part);
  return Buffer.concat(parts);
}

/** The tree a restorer gets from the stored patches alone. */
async function restoredTree(db: Db, root: string, manifest: CaptureManifest): Promise<string> {
  const artifacts = new Map<string, Buffer>();
  for (const p of manifest.patches) artifacts.set(p.digest, await blobBytes(db, p.digest));
  return treeFromPatches(root, manifest, artifacts);
}

/** Every value of every row of every table, as bytes and text. */
async function databaseContains(db: Db, kind: string, needle: string): Promise<string[]> {
  const tables =
    kind === "sqlite"
      ? await db.$queryRawUnsafe<{ name: string }[]>("SELECT name FROM sqlite_master WHERE type = 'table'")
      : await db.$queryRawUnsafe<{ name: string }[]>(
          "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
        );
  const hits: string[] = [];
  const bytes = Buffer.from(needle);
  for (const { name } of tables) {
    const rows = await db.$queryRawUnsafe<Record<string, unknown>[]>(`SELECT * FROM "${name}"`);
    for (const row of rows) {
      for (const [column, value] of Object.entries(row)) {
        const found =
          value instanceof Uint8Array
            ? Buffer.from(value).includes(bytes)
            : JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))?.includes(needle);
        if (found) hits.push(`${name}.${column}`);
      }
    }
  }
  return hits;
}

describeEachDatabase("capture and publish", (catalog, kind) => {
  it("appends a checkpoint with its content as layers, then only what changed", async () => {
    const db = catalog().db;
    const { scope } = await makeAgent(db);
    const port = localCatalog(db, scope);
    const root = initRepository({ "a.txt": "a\n", "b.bin": Buffer.from([0, 1, 2, 3]) });
    addOrigin(root);
    write(root, "a.txt", "a, changed\n");
    write(root, "notes/new.md", "untracked\n");
    const target = checkpointTarget("ckpt");

    const first = await captureAndPublish(port, { dir: root, target });
    expect(first.outcome).toBe("appended");
    expect(first.layers).toEqual({ registered: true });
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: first.snapshotId } });
    expect(row).toMatchObject({ class: "checkpoint", state: "ready", treeId: first.manifest.tree, branch: "main" });
    const heads = await db.snapshotHead.findMany({ where: { snapshotId: first.snapshotId } });
    expect(heads).toHaveLength(2); // the patch and the manifest
    expect(await restoredTree(db, root, first.manifest)).toBe(first.manifest.tree);
    const storedManifest = JSON.parse((await blobBytes(db, first.manifestBlobDigest ?? "")).toString()) as unknown;
    expect(storedManifest).toEqual(first.manifest);
    expect(await consistencyViolations(db, { hashBlobs: true })).toEqual([]);

    const again = await captureAndPublish(port, { dir: root, target });
    expect(again).toMatchObject({ outcome: "unchanged", snapshotId: first.snapshotId, uploaded: { blobs: 0 } });

    write(root, "b.bin", Buffer.from([9, 9, 9]));
    const second = await captureAndPublish(port, { dir: root, target });
    expect(second.outcome).toBe("appended");
    expect(second.manifest.patches.map((p) => p.kind)).toEqual(["full", "incremental"]);
    // The full patch was stored already: only the new patch, the binary file it carries whole
    // and the manifests travel.
    expect(second.manifest.patches[1]?.files).toEqual([
      expect.objectContaining({ oid: git(root, ["hash-object", "b.bin"]).trim(), size: 3 }),
    ]);
    expect(second.uploaded.blobs).toBe(4);
    const secondRow = await db.snapshot.findUniqueOrThrow({ where: { id: second.snapshotId } });
    expect(secondRow).toMatchObject({ predecessorId: first.snapshotId, sequence: 2 });
    const layer = await db.layer.findFirstOrThrow({
      where: { agentUuid: second.manifest.patches[1]?.uuid ?? "" },
      include: { parent: { select: { agentUuid: true } } },
    });
    expect(layer.parent?.agentUuid).toBe(first.manifest.patches[0]?.uuid);
    expect(await restoredTree(db, root, second.manifest)).toBe(second.manifest.tree);
    expect(await consistencyViolations(db, { hashBlobs: true })).toEqual([]);
  });

  it("captures afresh when content of the previous capture is gone from the catalog", async () => {
    const db = catalog().db;
    const { scope } = await makeAgent(db);
    const local = localCatalog(db, scope);
    const root = initRepository({ "a.txt": "a\n" });
    write(root, "a.txt", "one\n");
    const target = checkpointTarget("collected");
    const first = await captureAndPublish(local, { dir: root, target });
    const collected = first.manifest.patches[0]?.digest ?? "";
    // As if collection had deleted the first patch's blob.
    const port: CatalogPort = {
      ...local,
      missingBlobs: async (digests) => [
        ...new Set([...(await local.missingBlobs(digests)), ...digests.filter((d) => d === collected)]),
      ],
    };
    write(root, "a.txt", "two\n");
    const second = await captureAndPublish(port, { dir: root, target });
    expect(second.manifest.patches.map((p) => p.kind)).toEqual(["full"]);
    expect(await restoredTree(db, root, second.manifest)).toBe(second.manifest.tree);
  });

  it("loses the fence to a newer head and records nothing when storage fails", async () => {
    const db = catalog().db;
    const { scope } = await makeAgent(db);
    const local = localCatalog(db, scope);
    const root = initRepository({ "a.txt": "a\n" });
    write(root, "a.txt", "mine\n");
    const target = checkpointTarget("fence");
    await captureAndPublish(local, { dir: root, target });

    // A worker that saw no head (it captured before the other one published).
    write(root, "a.txt", "stale worker\n");
    const stale: CatalogPort = { ...local, lineageHeadId: async () => null };
    const lost = await captureAndPublish(stale, { dir: root, target }).catch((e: unknown) => e);
    expect(isStrataError(lost, "FENCE_LOST")).toBe(true);

    const before = await db.snapshot.count();
    const broken: CatalogPort = {
      ...local,
      putBlob: async () => {
        throw new Error("connection refused");
      },
    };
    write(root, "a.txt", "storage is down\n");
    const failed = await captureAndPublish(broken, { dir: root, target }).catch((e: unknown) => e);
    expect(isStrataError(failed, "BLOB_STORE_FAILED")).toBe(true);
    expect(await db.snapshot.count()).toBe(before);

    const notRepo = await captureAndPublish(local, { dir: temporaryDirectory(), target }).catch((e: unknown) => e);
    expect(isStrataError(notRepo, "NOT_A_REPOSITORY")).toBe(true);
  });

  it("publishes a baseline from a freshly fetched clean clone, and refuses a dirty one", async () => {
    const db = catalog().db;
    const { scope } = await makeAgent(db);
    const port = localCatalog(db, scope);
    const upstream = initRepository({ "a.txt": "a\n", ".gitignore": "node_modules/\n" });
    const bare = addOrigin(upstream);
    const clone = join(temporaryDirectory(), "clone");
    git(temporaryDirectory(), ["clone", "--quiet", `file://${bare}`, clone]);
    write(clone, "node_modules/dep/index.js", "a cache may stay\n");
    const key = {
      repository: { identity: `example.invalid/${uniqueName("baseline")}` },
      backendKind: "local",
      baseImage: "test-image",
      canonicalRef: "main",
    };

    const published = await captureAndPublish(port, { dir: clone, target: { kind: "baseline", key } });
    expect(published.outcome).toBe("published");
    expect(published.manifest.patches).toEqual([]);
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: published.snapshotId } });
    expect(row).toMatchObject({ class: "baseline", state: "ready", canonicalCommit: published.manifest.head });
    expect(await consistencyViolations(db, { hashBlobs: true })).toEqual([]);

    const repeated = await captureAndPublish(port, { dir: clone, target: { kind: "baseline", key } });
    expect(repeated).toMatchObject({ outcome: "unchanged", snapshotId: published.snapshotId });

    write(clone, "a.txt", "dirty\n");
    const dirty = await captureAndPublish(port, { dir: clone, target: { kind: "baseline", key } }).catch(
      (e: unknown) => e,
    );
    expect(isStrataError(dirty, "EVIDENCE_INVALID")).toBe(true);
    expect((dirty as StrataError).data?.failedChecks).toEqual(["no_tracked_modifications"]);
  });

  it("stores none of the secret bytes of a checkout full of them", async () => {
    const db = catalog().db;
    const { scope } = await makeAgent(db);
    const port = localCatalog(db, scope);
    const root = initRepository({ "app.ts": "export {};\n", ".env.example": "EXAMPLE=1\n" });
    addOrigin(root);
    // A secret in an unpushed commit, deleted again in the next one.
    write(root, "deploy/prod.pem", `-----BEGIN ${SECRET}-----\n`);
    commitAll(root, "add a key by mistake");
    git(root, ["rm", "--quiet", "deploy/prod.pem"]);
    commitAll(root, "remove it");
    // Secrets in the working tree, untracked, staged and in a tracked file.
    for (const name of [".env", ".env.local", "id_rsa", "id_ed25519.bak", "server.key", "aws/credentials", ".netrc"]) {
      write(root, name, `${SECRET} (${name})\n`);
    }
    write(root, "staged.p12", `${SECRET} staged\n`);
    git(root, ["add", "staged.p12"]);
    write(root, ".env.example", `EXAMPLE=${SECRET}\n`);
    write(root, "app.ts", "export const ok = true;\n");

    const result = await captureAndPublish(port, { dir: root, target: checkpointTarget("secrets") });
    expect(result.outcome).toBe("appended");
    expect(result.manifest.bundle).toBeNull();
    expect(result.manifest.omitted.some((o) => o.reason === "unpushed-denied" && o.path === "deploy/prod.pem")).toBe(
      true,
    );
    expect(await databaseContains(db, kind, SECRET)).toEqual([]);
    // The scan does see what was stored: the harmless change is there.
    expect(await databaseContains(db, kind, "export const ok = true;")).not.toEqual([]);
  });
});
