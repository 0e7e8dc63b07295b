// Moving a snapshot as a file: export from one catalog, import into a catalog of the other
// kind, restore there on a second machine. A damaged or altered file stores nothing.
import { createHash } from "node:crypto";
import { createWriteStream, readFileSync, writeFileSync } from "node:fs";
import { finished } from "node:stream/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { DatabaseKind } from "../db/client.ts";
import { createTestCatalog, describeEachDatabase, type TestCatalog } from "../testing/databases.ts";
import { canonicalManifestBytes, type CaptureManifest } from "../domain/capture-manifest.ts";
import { StrataError } from "../domain/errors.ts";
import { blobLine, endLine, EXPORT_MAGIC, type ExportHeader } from "../domain/export-format.ts";
import { CHECKOUT_FIXTURES } from "../testing/checkouts.ts";
import { git, removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";
import { localRestorePort, restoreSnapshot } from "../restore/restore-snapshot.ts";
import { exportSnapshot } from "./snapshot-export.ts";
import { importSnapshotFile } from "./snapshot-import.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { publishCheckpointCapture } from "../testing/restore.ts";

afterAll(removeTemporaryDirectories);

const other = (kind: DatabaseKind): DatabaseKind => (kind === "sqlite" ? "postgres" : "sqlite");

async function contentCounts(target: TestCatalog) {
  return {
    blobs: await target.db.blob.count(),
    chunks: await target.db.blobChunk.count(),
    snapshots: await target.db.snapshot.count(),
    layers: await target.db.layer.count(),
  };
}

/** Rebuilds an export file from its parts, as a forger would, with a consistent end line. */
function writeExport(file: string, header: ExportHeader, blobs: Map<string, Buffer>): void {
  const headerLine = JSON.stringify(header);
  const parts: Buffer[] = [Buffer.from(`${EXPORT_MAGIC}\n${headerLine}\n`)];
  for (const { digest, size } of header.blobs) {
    parts.push(Buffer.from(blobLine(digest, size)), blobs.get(digest) ?? Buffer.alloc(0), Buffer.from("\n"));
  }
  parts.push(Buffer.from(endLine(createHash("sha256").update(headerLine).digest("hex"))));
  writeFileSync(file, Buffer.concat(parts));
}

/** Splits an export file into its header and blobs (for the tests that alter one). */
function readExport(file: string): { header: ExportHeader; blobs: Map<string, Buffer> } {
  const bytes = readFileSync(file);
  const first = bytes.indexOf(0x0a);
  const second = bytes.indexOf(0x0a, first + 1);
  const header = JSON.parse(bytes.subarray(first + 1, second).toString("utf8")) as ExportHeader;
  const blobs = new Map<string, Buffer>();
  let at = second + 1;
  for (const { digest, size } of header.blobs) {
    at = bytes.indexOf(0x0a, at) + 1;
    blobs.set(digest, bytes.subarray(at, at + size));
    at += size + 1;
  }
  return { header, blobs };
}

describeEachDatabase("export and import", (catalog, kind) => {
  let target: TestCatalog;
  let exporter: TestAgent;
  let importer: TestAgent;
  let captured: Awaited<ReturnType<(typeof CHECKOUT_FIXTURES)[number]["make"]>>;
  let snapshotId: string;
  let file: string;

  beforeAll(async () => {
    target = await createTestCatalog(other(kind));
    exporter = await makeAgent(catalog().db, "exporter");
    importer = await makeAgent(target.db, "importer");
    // Unpushed commits with dirty files on top: a bundle and a patch travel in the file.
    captured = await CHECKOUT_FIXTURES[2]!.make();
    snapshotId = await publishCheckpointCapture(
      catalog().db,
      exporter.scope,
      {
        repository: { identity: `example.test/acme/${uniqueName("app")}` },
        backendKind: "modal",
        baseImage: "img",
        workContextId: uniqueName("wc"),
        observedHeadId: null,
      },
      captured.manifest,
      captured.blobs,
    );
    file = join(temporaryDirectory("strata-export-"), "snapshot.strata");
    const out = createWriteStream(file);
    await exportSnapshot(catalog().db, { agent: exporter.scope, snapshotId, out });
    out.end();
    await finished(out);
  }, 120_000);
  afterAll(async () => {
    await target?.drop();
  });

  it(`round-trips into a ${other(kind)} catalog and restores there with the same tree id`, async () => {
    const { header } = readExport(file);
    // Each blob once: the manifest, its short form, the patch and the bundle.
    expect(new Set(header.blobs.map((b) => b.digest)).size).toBe(header.blobs.length);
    expect(header.blobs.map((b) => b.digest)).toEqual(
      expect.arrayContaining([captured.manifest.bundle!.digest, ...captured.manifest.patches.map((p) => p.digest)]),
    );

    const imported = await importSnapshotFile(target.db, { agent: importer.scope, file });
    expect(imported).toMatchObject({ snapshotId, exportedId: snapshotId, created: true, state: "ready" });
    expect(imported.blobs.new).toBe(header.blobs.length);

    const machine = temporaryDirectory("strata-machine-");
    const report = await restoreSnapshot(localRestorePort(target.db, importer.scope), {
      snapshotId: imported.snapshotId,
      into: join(machine, "restored"),
      stateDir: join(machine, "state"),
    });
    expect(report.result.status).toBe("restored");
    git(join(machine, "restored"), ["update-index", "-q", "--really-refresh"]);
    expect(git(join(machine, "restored"), ["write-tree"]).trim()).toBe(captured.manifest.tree);

    // The imported checkpoint is its work context's head for the importing agent.
    const row = await target.db.snapshot.findUniqueOrThrow({ where: { id: snapshotId } });
    expect(row).toMatchObject({ agentId: importer.scope.agentId, class: "checkpoint", state: "ready", sequence: 1 });
    expect(await target.db.snapshotHead.count({ where: { snapshotId } })).toBe(header.heads.length);

    // Importing again stores nothing new and records nothing new.
    const before = await contentCounts(target);
    const again = await importSnapshotFile(target.db, { agent: importer.scope, file });
    expect(again).toMatchObject({ snapshotId, created: false, blobs: { new: 0 } });
    expect(await contentCounts(target)).toEqual(before);
  });

  it("refuses a file with one flipped byte in a blob, storing nothing", async () => {
    const fresh = await createTestCatalog(other(kind));
    try {
      const agent = await makeAgent(fresh.db, "importer");
      const bytes = readFileSync(file);
      const { header } = readExport(file);
      const patch = captured.manifest.patches[0]!;
      const damaged = Buffer.from(bytes);
      const at =
        damaged.indexOf(Buffer.from(blobLine(patch.digest, patch.size))) +
        blobLine(patch.digest, patch.size).length +
        10;
      damaged[at] = (damaged[at] ?? 0) ^ 0xff;
      const tampered = join(temporaryDirectory("strata-export-"), "tampered.strata");
      writeFileSync(tampered, damaged);

      const before = await contentCounts(fresh);
      const error = await importSnapshotFile(fresh.db, { agent: agent.scope, file: tampered }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StrataError);
      expect((error as StrataError).code).toBe("BLOB_CORRUPT");
      expect((error as StrataError).data?.digest).toBe(patch.digest);
      expect(await contentCounts(fresh)).toEqual(before);
      expect(header.blobs.length).toBeGreaterThan(1);

      // A truncated file, and an altered header, are refused the same way.
      const truncated = join(temporaryDirectory("strata-export-"), "truncated.strata");
      writeFileSync(truncated, bytes.subarray(0, bytes.length - 80));
      const cut = await importSnapshotFile(fresh.db, { agent: agent.scope, file: truncated }).catch((e: unknown) => e);
      expect((cut as StrataError).code).toBe("INVALID_INPUT");
      const altered = join(temporaryDirectory("strata-export-"), "altered.strata");
      // The first occurrence of the tree id is the header's treeId.
      writeFileSync(
        altered,
        Buffer.from(bytes.toString("latin1").replace(captured.manifest.tree, "f".repeat(40)), "latin1"),
      );
      const changed = await importSnapshotFile(fresh.db, { agent: agent.scope, file: altered }).catch(
        (e: unknown) => e,
      );
      expect((changed as StrataError).code, (changed as Error).message).toBe("INVALID_INPUT");
      expect(await contentCounts(fresh)).toEqual(before);
    } finally {
      await fresh.drop();
    }
  });

  it("refuses a consistent file whose record fails the security checks, storing nothing", async () => {
    const fresh = await createTestCatalog(other(kind));
    try {
      const agent = await makeAgent(fresh.db, "importer");
      const { header, blobs } = readExport(file);
      // A forger rewrites the manifest with a remote helper and fixes every digest and the end line.
      const evil: CaptureManifest = {
        ...captured.manifest,
        remotes: [{ name: "origin", url: "ext::sh -c evil%20payload" }],
      };
      const evilBytes = canonicalManifestBytes(evil);
      const evilDigest = createHash("sha256").update(evilBytes).digest("hex");
      blobs.set(evilDigest, evilBytes);
      const forged: ExportHeader = {
        ...header,
        manifestBlob: evilDigest,
        blobs: [
          ...header.blobs.filter((b) => b.digest !== header.manifestBlob),
          { digest: evilDigest, size: evilBytes.length },
        ],
        layers: header.layers.filter((l) => l.digest !== header.manifestBlob),
        heads: header.heads.filter((h) => header.layers.find((l) => l.uuid === h)?.digest !== header.manifestBlob),
      };
      const forgedFile = join(temporaryDirectory("strata-export-"), "forged.strata");
      writeExport(forgedFile, forged, blobs);

      const before = await contentCounts(fresh);
      const error = await importSnapshotFile(fresh.db, { agent: agent.scope, file: forgedFile }).catch(
        (e: unknown) => e,
      );
      expect((error as StrataError).code).toBe("INVALID_SNAPSHOT");
      expect((error as StrataError).data?.field).toBe("remotes[0].url");
      expect((error as StrataError).message).not.toContain("evil");
      expect(await contentCounts(fresh)).toEqual(before);
    } finally {
      await fresh.drop();
    }
  });
});
