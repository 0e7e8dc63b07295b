// `strata export`: one of the agent's snapshots as a `.strata` file (export-format.ts): its
// catalog record, its layers, and every blob it needs inline, each once. Streamed: one blob
// row at a time, with backpressure, so a large snapshot never sits in memory.
import { createHash } from "node:crypto";
import { once } from "node:events";
import type { Writable } from "node:stream";
import type { Db } from "../db/client.ts";
import { captureManifestSchema, manifestBlobDigests } from "../domain/capture-manifest.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { StrataError } from "../domain/errors.ts";
import {
  blobLine,
  endLine,
  EXPORT_FORMAT_VERSION,
  EXPORT_MAGIC,
  exportHeaderSchema,
  type ExportHeader,
} from "../domain/export-format.ts";
import type { AgentScope } from "../domain/scope.ts";
import { grantedDigests, readBlob, statBlob, type BlobInfo } from "../content/blobs.ts";
import { localRestorePort, loadCaptureManifest } from "../restore/restore-snapshot.ts";
import { getSnapshot } from "../lineage/snapshots.ts";

export interface ExportSummary {
  snapshotId: string;
  blobs: number;
  /** Blob bytes written (the file is slightly larger: header and framing). */
  bytes: number;
}

async function write(out: Writable, data: string | Uint8Array): Promise<void> {
  if (!out.write(data)) await once(out, "drain");
}

/**
 * The snapshot's layers: its heads and every ancestor, parents before children, named by the
 * uuids the agent declared (the catalog's own row keys never leave it).
 */
async function layersOf(db: Db, snapshotId: string): Promise<{ layers: LayerDescriptor[]; heads: string[] }> {
  const heads = (await db.snapshotHead.findMany({ where: { snapshotId }, select: { layerUuid: true } })).map(
    (h) => h.layerUuid,
  );
  const found = new Map<string, LayerDescriptor>();
  const agentUuid = new Map<string, string>();
  let wanted = [...heads];
  while (wanted.length > 0) {
    const rows = await db.layer.findMany({
      where: { uuid: { in: wanted } },
      select: { uuid: true, agentUuid: true, parentUuid: true, digest: true, sizeBytes: true, kind: true, state: true },
    });
    wanted = [];
    for (const row of rows) {
      if (row.state !== "available") {
        throw new StrataError("LAYER_UNAVAILABLE", `Layer ${row.agentUuid} of the snapshot is ${row.state}.`, {
          data: { uuid: row.agentUuid },
        });
      }
      agentUuid.set(row.uuid, row.agentUuid);
      found.set(row.uuid, {
        uuid: row.uuid,
        parentUuid: row.parentUuid,
        digest: row.digest,
        sizeBytes: Number(row.sizeBytes),
        kind: row.kind,
      });
      if (row.parentUuid && !found.has(row.parentUuid)) wanted.push(row.parentUuid);
    }
  }
  const ordered: LayerDescriptor[] = [];
  const placed = new Set<string>();
  const place = (layer: LayerDescriptor) => {
    if (placed.has(layer.uuid)) return;
    const parent = layer.parentUuid ? found.get(layer.parentUuid) : undefined;
    if (parent) place(parent);
    placed.add(layer.uuid);
    ordered.push(layer);
  };
  for (const layer of found.values()) place(layer);
  const named = (uuid: string) => agentUuid.get(uuid)!;
  return {
    layers: ordered.map((l) => ({ ...l, uuid: named(l.uuid), parentUuid: l.parentUuid && named(l.parentUuid) })),
    heads: heads.map(named),
  };
}

/**
 * Writes one of the agent's snapshots to `out`. Refuses (BLOB_MISSING, before writing anything)
 * a snapshot whose content is not all stored: an export is complete or not made.
 */
export async function exportSnapshot(
  db: Db,
  opts: { agent: AgentScope; snapshotId: string; out: Writable; now?: Date },
): Promise<ExportSummary> {
  const snapshot = await getSnapshot(db, { snapshotId: opts.snapshotId, agent: opts.agent, includeRetired: true });
  const port = localRestorePort(db, opts.agent);
  const full = await loadCaptureManifest(port, snapshot);
  const manifest = captureManifestSchema.parse(full.manifest);
  const { layers, heads } = await layersOf(db, snapshot.id);

  const required = [full.digest, ...manifestBlobDigests(manifest), ...layers.map((l) => l.digest)];
  const optional = [snapshot.manifestDigest, ...snapshot.manifest.blobDigests].filter((d): d is string => d !== null);
  const infos = new Map<string, BlobInfo>();
  // Only the agent's own bytes go out: an ungranted digest counts as not stored.
  const granted = await grantedDigests(db, opts.agent.agentId, [...required, ...optional]);
  for (const digest of [...required, ...optional]) {
    if (infos.has(digest)) continue;
    const info = granted.has(digest) ? await statBlob(db, digest) : null;
    if (info) infos.set(digest, info);
    else if (required.includes(digest)) {
      throw new StrataError("BLOB_MISSING", `Blob ${digest} of snapshot ${snapshot.id} is not stored.`, {
        hint: "An export carries all of a snapshot's content; store the blob again first.",
        data: { digest },
      });
    }
  }

  const header: ExportHeader = exportHeaderSchema.parse({
    format: EXPORT_FORMAT_VERSION,
    exportedAt: (opts.now ?? new Date()).toISOString(),
    snapshot: {
      id: snapshot.id,
      class: snapshot.class,
      state: snapshot.state,
      repository: { identity: snapshot.repository.identity, name: snapshot.repository.name },
      backendKind: snapshot.backendKind,
      baseImage: snapshot.baseImage,
      canonicalRef: snapshot.canonicalRef,
      canonicalCommit: snapshot.canonicalCommit,
      validation: snapshot.validation ?? null,
      workContextId: snapshot.workContextId,
      sequence: snapshot.sequence,
      headCommit: snapshot.manifest.head,
      treeId: snapshot.manifest.treeId,
      branch: snapshot.manifest.branch,
      sizeBytes: snapshot.manifest.sizeBytes.toString(),
      manifestDigest: snapshot.manifestDigest,
      blobDigests: snapshot.manifest.blobDigests,
      createdAt: snapshot.createdAt.toISOString(),
    },
    manifestBlob: full.digest,
    layers,
    heads,
    blobs: [...infos.values()].map((i) => ({ digest: i.digest, size: i.sizeBytes })),
  });
  const headerLine = JSON.stringify(header);

  await write(opts.out, `${EXPORT_MAGIC}\n`);
  await write(opts.out, `${headerLine}\n`);
  let bytes = 0;
  for (const info of infos.values()) {
    await write(opts.out, blobLine(info.digest, info.sizeBytes));
    // readBlob checks the digest at its end; a damaged row fails the export.
    for await (const chunk of readBlob(db, info)) {
      await write(opts.out, chunk);
      bytes += chunk.byteLength;
    }
    await write(opts.out, "\n");
  }
  await write(opts.out, endLine(createHash("sha256").update(headerLine, "utf8").digest("hex")));
  return { snapshotId: snapshot.id, blobs: infos.size, bytes };
}
