// Test support for restore: puts a real capture into a catalog the two ways a snapshot can
// name its manifest (as a checkpoint in the short catalog form that lists the full manifest,
// the way captures are published, or directly by manifestDigest), with its content as layers.
import { createHash, randomUUID } from "node:crypto";
import type { Db } from "../db/client.ts";
import { canonicalManifestBytes, manifestBlobDigests, type CaptureManifest } from "../domain/capture-manifest.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { normalizeBlobDigests, type Manifest } from "../domain/manifest.ts";
import type { AgentScope } from "../domain/scope.ts";
import { appendCheckpoint } from "../lineage/checkpoints.ts";
import { publishSnapshot } from "../content/layers.ts";
import { storeBytes } from "./content.ts";
import { findOrCreateRepository } from "../lineage/repositories.ts";

export interface CatalogCoordinates {
  repository: { identity: string };
  backendKind: string;
  baseImage: string;
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The layers of a capture: patch chain, bundle and manifest, with their heads. */
function layersOf(manifest: CaptureManifest, manifestDigest: string, manifestSize: number) {
  const layers: LayerDescriptor[] = manifest.patches.map((p) => ({
    uuid: p.uuid,
    parentUuid: p.parent,
    digest: p.digest,
    sizeBytes: p.size,
    kind: "patch",
  }));
  const heads: string[] = [];
  const top = manifest.patches.at(-1);
  if (top) heads.push(top.uuid);
  if (manifest.bundle) {
    const uuid = (manifest.bundle as { uuid?: string }).uuid ?? randomUUID();
    layers.push({
      uuid,
      parentUuid: null,
      digest: manifest.bundle.digest,
      sizeBytes: manifest.bundle.size,
      kind: "bundle",
    });
    heads.push(uuid);
  }
  const uuid = randomUUID();
  layers.push({ uuid, parentUuid: null, digest: manifestDigest, sizeBytes: manifestSize, kind: "manifest" });
  heads.push(uuid);
  return { layers, heads };
}

/** Stores every blob a capture produced that the manifest needs, as the agent's uploads. */
async function storeContent(
  db: Db,
  agent: AgentScope,
  manifest: CaptureManifest,
  blobs: ReadonlyMap<string, Uint8Array>,
) {
  for (const digest of manifestBlobDigests(manifest)) {
    const bytes = blobs.get(digest);
    if (bytes) await storeBytes(db, bytes, agent);
  }
  const full = canonicalManifestBytes(manifest);
  await storeBytes(db, full, agent);
  return { digest: sha256(full), size: full.length };
}

/**
 * Publishes a capture as the next checkpoint of a work context's lineage: the row keeps the
 * short manifest, whose stored form lists the full manifest's digest.
 */
export async function publishCheckpointCapture(
  db: Db,
  agent: AgentScope,
  at: CatalogCoordinates & { workContextId: string; observedHeadId: string | null },
  manifest: CaptureManifest,
  blobs: ReadonlyMap<string, Uint8Array>,
): Promise<string> {
  if (!manifest.head) throw new Error("a checkpoint needs a commit");
  const full = await storeContent(db, agent, manifest, blobs);
  const short: Manifest = {
    treeId: manifest.tree,
    head: manifest.head,
    branch: manifest.branch,
    blobDigests: [...manifestBlobDigests(manifest), full.digest],
    sizeBytes: 1,
  };
  const shortBytes = Buffer.from(
    JSON.stringify([short.treeId, short.head, short.branch, normalizeBlobDigests(short.blobDigests), short.sizeBytes]),
  );
  await storeBytes(db, shortBytes, agent);
  const appended = await appendCheckpoint(db, {
    agent,
    key: {
      repository: at.repository,
      backendKind: at.backendKind,
      baseImage: at.baseImage,
      workContextId: at.workContextId,
    },
    observedHeadId: at.observedHeadId,
    manifest: short,
  });
  await publishSnapshot(db, {
    snapshotId: appended.snapshot.id,
    agentId: agent.agentId,
    ...layersOf(manifest, full.digest, full.size),
  });
  return appended.snapshot.id;
}

/** Publishes a capture as a snapshot whose manifestDigest names the full manifest itself. */
export async function publishCaptureDirectly(
  db: Db,
  agent: AgentScope,
  at: CatalogCoordinates,
  manifest: CaptureManifest,
  blobs: ReadonlyMap<string, Uint8Array>,
): Promise<string> {
  const full = await storeContent(db, agent, manifest, blobs);
  const repository = await findOrCreateRepository(db, at.repository);
  const row = await db.snapshot.create({
    data: {
      class: "baseline",
      state: "capturing",
      agentId: agent.agentId,
      repositoryId: repository.id,
      backendKind: at.backendKind,
      baseImage: at.baseImage,
      canonicalRef: `refs/heads/restore-test-${randomUUID()}`,
      // A test row: an unborn branch has no commit, the column wants one.
      canonicalCommit: manifest.head ?? "0".repeat(40),
      validation: { test: true },
      treeId: manifest.tree,
      headCommit: manifest.head,
      branch: manifest.branch,
    },
    select: { id: true },
  });
  await publishSnapshot(db, {
    snapshotId: row.id,
    manifestDigest: full.digest,
    ...layersOf(manifest, full.digest, full.size),
  });
  return row.id;
}
