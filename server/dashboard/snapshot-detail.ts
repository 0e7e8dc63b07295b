// One snapshot as an operator inspects it: class and key, the state history its timestamps
// record, the manifest, baseline validation evidence, heads and the layer forest beneath them,
// pins, the restores it seeded, the work contexts forked from it, and how it sits in its
// lineage. Staff only, any agent's.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { catalogContentStore } from "../backends/content-store.ts";
import { backendFor } from "../backends/registry.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { BUNDLE_OMISSIONS, captureManifestSchema, type CaptureManifest } from "../domain/capture-manifest.ts";
import { isBlobDigest } from "../domain/content.ts";
import { isStrataError, StrataError } from "../domain/errors.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";
import { readBlob, statBlob } from "../content/blobs.ts";
import { dbNow } from "../db/sql.ts";
import { isPinActive } from "../content/pins.ts";
import { withHolderNames } from "../audit/holder-names.ts";

export const snapshotDetailInput = z.strictObject({ snapshotId: entityIdSchema });
export type SnapshotDetailInput = z.input<typeof snapshotDetailInput>;

/** Manifests are small; anything larger than this is not one. */
const MANIFEST_MAX_BYTES = 8 * 1024 * 1024;
/** Layers walked beneath the heads before the forest is cut short. */
const FOREST_LIMIT = 2_000;
const OMITTED_SHOWN = 200;

const neighbourSelect = {
  id: true,
  class: true,
  state: true,
  sequence: true,
  workContextId: true,
  canonicalRef: true,
  createdAt: true,
} satisfies Prisma.SnapshotSelect;

const detailSelect = {
  id: true,
  alias: true,
  class: true,
  state: true,
  backendKind: true,
  baseImage: true,
  canonicalRef: true,
  canonicalCommit: true,
  validation: true,
  workContextId: true,
  sequence: true,
  manifestDigest: true,
  headCommit: true,
  treeId: true,
  branch: true,
  sizeBytes: true,
  sourceWorkspace: true,
  sourceHost: true,
  metadata: true,
  retiredReason: true,
  createdAt: true,
  readyAt: true,
  supersededAt: true,
  retiredAt: true,
  failedAt: true,
  deletingAt: true,
  deletedAt: true,
  lastRestoredAt: true,
  artifactKind: true,
  artifactRef: true,
  artifactDeletedAt: true,
  reclaimAttempts: true,
  reclaimError: true,
  repository: { select: { id: true, name: true, identity: true } },
  agent: { select: { id: true, name: true } },
  lineage: {
    select: {
      id: true,
      workContextId: true,
      state: true,
      retiredReason: true,
      retiredAt: true,
      originSnapshotId: true,
      forkedFromId: true,
      forkReason: true,
      _count: { select: { checkpoints: true } },
    },
  },
  predecessor: { select: neighbourSelect },
  successors: { select: neighbourSelect, orderBy: { createdAt: "asc" } },
  degradedFrom: { select: neighbourSelect },
  degradedWork: { select: neighbourSelect, orderBy: { createdAt: "asc" }, take: 50 },
  originOf: { select: { id: true, workContextId: true, state: true }, take: 100 },
  forks: {
    select: {
      id: true,
      workContextId: true,
      state: true,
      forkReason: true,
      forkedBy: true,
      createdAt: true,
      _count: { select: { checkpoints: true } },
    },
    orderBy: [{ createdAt: "desc" }, { id: "asc" }],
    take: 200,
  },
} satisfies Prisma.SnapshotSelect;

export interface StateEvent {
  state: string;
  at: Date;
  note: string | null;
}

/** The lifecycle as the row's timestamps record it, oldest first. */
function stateHistory(row: Prisma.SnapshotGetPayload<{ select: typeof detailSelect }>): StateEvent[] {
  const events: (StateEvent | null)[] = [
    { state: "created", at: row.createdAt, note: row.sourceHost ? `captured on ${row.sourceHost}` : null },
    row.readyAt ? { state: "ready", at: row.readyAt, note: null } : null,
    row.supersededAt
      ? { state: "superseded", at: row.supersededAt, note: "a newer snapshot became the head of its key" }
      : null,
    row.failedAt ? { state: "failed", at: row.failedAt, note: failureNote(row.metadata) } : null,
    row.retiredAt ? { state: "retired", at: row.retiredAt, note: row.retiredReason } : null,
    row.deletingAt ? { state: "deleting", at: row.deletingAt, note: "handed to collection" } : null,
    row.deletedAt ? { state: "deleted", at: row.deletedAt, note: "heads released, content reclaimable" } : null,
    row.lastRestoredAt ? { state: "last restored", at: row.lastRestoredAt, note: null } : null,
  ];
  return events.filter((e): e is StateEvent => e !== null).sort((a, b) => a.at.getTime() - b.at.getTime());
}

function failureNote(metadata: Prisma.JsonValue | null): string | null {
  const failure = (metadata as { failure?: { code?: unknown } } | null)?.failure;
  return typeof failure?.code === "string" ? failure.code : null;
}

function metadataDigests(metadata: Prisma.JsonValue | null): string[] {
  const digests = (metadata as { manifest?: { blobDigests?: unknown } } | null)?.manifest?.blobDigests;
  return Array.isArray(digests) ? digests.filter((d): d is string => typeof d === "string" && isBlobDigest(d)) : [];
}

async function readCaptureManifest(db: Db, digest: string): Promise<CaptureManifest | null> {
  const info = await statBlob(db, digest);
  if (!info || info.sizeBytes > MANIFEST_MAX_BYTES) return null;
  const parts: Uint8Array[] = [];
  try {
    for await (const chunk of readBlob(db, info)) parts.push(chunk);
    const parsed = captureManifestSchema.safeParse(JSON.parse(Buffer.concat(parts).toString("utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export interface ManifestView {
  /** Where the full record was found; null when only the catalog columns are known. */
  digest: string | null;
  source: "manifest-digest" | "manifest-layer" | "blob-list" | "columns";
  branch: string | null;
  head: string | null;
  tree: string | null;
  full:
    | (Omit<CaptureManifest, "omitted"> & {
        omitted: CaptureManifest["omitted"];
        omittedTotal: number;
        /**
         * Why the bundle of unpushed commits is absent, when capture left it out (an unpushed
         * commit touches a denied path, or the history is too large): the commits and the reason.
         * Empty when there is a bundle, or every commit was pushed. Never cut, unlike `omitted`.
         */
        bundleLeftOut: CaptureManifest["omitted"];
      })
    | null;
}

/**
 * The full capture record, looked for where a capture may have left it: the row's manifest
 * reference, a head layer of kind `manifest`, or the blobs the row lists. Else the columns.
 */
async function manifestOf(
  db: Db,
  row: {
    manifestDigest: string | null;
    metadata: Prisma.JsonValue | null;
    headCommit: string | null;
    treeId: string | null;
    branch: string | null;
  },
  manifestLayers: string[],
): Promise<ManifestView> {
  const candidates: { digest: string; source: ManifestView["source"] }[] = [];
  if (row.manifestDigest && isBlobDigest(row.manifestDigest)) {
    candidates.push({ digest: row.manifestDigest, source: "manifest-digest" });
  }
  for (const digest of manifestLayers) candidates.push({ digest, source: "manifest-layer" });
  for (const digest of metadataDigests(row.metadata).slice(0, 20)) candidates.push({ digest, source: "blob-list" });
  const tried = new Set<string>();
  for (const candidate of candidates) {
    if (tried.has(candidate.digest)) continue;
    tried.add(candidate.digest);
    const manifest = await readCaptureManifest(db, candidate.digest);
    // A blob the row lists is taken as its record only when it describes the same tree.
    if (!manifest || (candidate.source === "blob-list" && row.treeId && manifest.tree !== row.treeId)) continue;
    return {
      digest: candidate.digest,
      source: candidate.source,
      branch: manifest.branch,
      head: manifest.head,
      tree: manifest.tree,
      full: {
        ...manifest,
        omitted: manifest.omitted.slice(0, OMITTED_SHOWN),
        omittedTotal: manifest.omitted.length,
        bundleLeftOut: manifest.omitted.filter((o) => BUNDLE_OMISSIONS.has(o.reason)),
      },
    };
  }
  return { digest: null, source: "columns", branch: row.branch, head: row.headCommit, tree: row.treeId, full: null };
}

export interface ForestLayer {
  uuid: string;
  parentUuid: string | null;
  kind: string;
  digest: string;
  sizeBytes: number;
  state: string;
  createdAt: Date;
  /** Whether this snapshot names it as a head. */
  isHead: boolean;
  /** Other snapshots that name it as a head. */
  sharedWith: number;
}

/**
 * The heads and every layer beneath them (parent links), in batches of one level per query. The
 * walk follows the catalog's row keys; layers are shown by the uuids their agent declared.
 */
async function layerForest(db: Db, snapshotId: string): Promise<{ layers: ForestLayer[]; truncated: boolean }> {
  const heads = await db.snapshotHead.findMany({ where: { snapshotId }, select: { layerUuid: true } });
  const headSet = new Set(heads.map((h) => h.layerUuid));
  const found = new Map<string, Omit<ForestLayer, "isHead" | "sharedWith">>();
  let frontier = [...headSet];
  while (frontier.length > 0 && found.size < FOREST_LIMIT) {
    const rows = await db.layer.findMany({
      where: { uuid: { in: frontier.slice(0, FOREST_LIMIT - found.size) } },
      select: {
        uuid: true,
        agentUuid: true,
        parentUuid: true,
        parent: { select: { agentUuid: true } },
        kind: true,
        digest: true,
        sizeBytes: true,
        state: true,
        createdAt: true,
      },
    });
    for (const { uuid, agentUuid, parent, ...row } of rows) {
      found.set(uuid, {
        ...row,
        uuid: agentUuid,
        parentUuid: parent?.agentUuid ?? null,
        sizeBytes: Number(row.sizeBytes),
      });
    }
    frontier = [...new Set(rows.map((r) => r.parentUuid).filter((p): p is string => p !== null && !found.has(p)))];
  }
  const sharing = await db.snapshotHead.groupBy({
    by: ["layerUuid"],
    where: { layerUuid: { in: [...found.keys()] }, snapshotId: { not: snapshotId } },
    _count: { _all: true },
  });
  const shared = new Map(sharing.map((s) => [s.layerUuid, s._count._all]));
  return {
    layers: [...found].map(([key, l]) => ({
      ...l,
      isHead: headSet.has(key),
      sharedWith: shared.get(key) ?? 0,
    })),
    truncated: frontier.length > 0,
  };
}

/**
 * The snapshot's artifact as the backend that minted it describes it; `described: null` when the
 * kind is one this server does not have or the artifact cannot be read (the row still names it).
 */
async function describeArtifact(
  db: Db,
  row: {
    artifactKind: string;
    artifactRef: string | null;
    artifactDeletedAt: Date | null;
    reclaimAttempts: number;
    reclaimError: string | null;
    agent: { id: string };
  },
) {
  const base = {
    kind: row.artifactKind,
    ref: row.artifactRef,
    deletedAt: row.artifactDeletedAt,
    reclaimAttempts: row.reclaimAttempts,
    reclaimError: row.reclaimError,
  };
  if (!row.artifactRef || row.artifactDeletedAt) return { ...base, described: null };
  try {
    const described = await backendFor(row.artifactKind).describe(row.artifactRef, {
      source: catalogContentStore(db, row.agent.id),
    });
    return {
      ...base,
      described: { exists: described.exists, summary: described.summary, sizeBytes: described.sizeBytes },
    };
  } catch (error) {
    if (isStrataError(error)) return { ...base, described: null, problem: `${error.code}: ${error.message}` };
    throw error;
  }
}

/** The agent's ready dependency cache for the snapshot's envHash (what a restore would add). */
async function readyDependencyCache(
  db: Db,
  row: { agent: { id: string }; repository: { id: string } },
  envHash: string,
) {
  const cache = await db.dependencyCache.findFirst({
    where: { agentId: row.agent.id, repositoryId: row.repository.id, envHash, state: "ready" },
    select: { id: true, paths: true, artifactKind: true, artifactRef: true, sizeBytes: true, createdAt: true },
  });
  return (
    cache && {
      ...cache,
      sizeBytes: Number(cache.sizeBytes),
      paths: Array.isArray(cache.paths) ? cache.paths.map(String) : [],
    }
  );
}

export async function snapshotDetail(db: Db, input: SnapshotDetailInput) {
  const { snapshotId } = snapshotDetailInput.parse(input);
  const row = await db.snapshot.findUnique({ where: { id: snapshotId }, select: detailSelect });
  if (!row) throw new StrataError("NOT_FOUND", `Snapshot ${snapshotId} was not found.`);

  const [forest, pins, restores, audit, now] = await Promise.all([
    layerForest(db, row.id),
    db.pin.findMany({ where: { snapshotId: row.id }, orderBy: [{ createdAt: "desc" }, { pinId: "asc" }], take: 200 }),
    db.restore.findMany({
      where: { snapshotId: row.id },
      orderBy: { createdAt: "desc" },
      take: 100,
      select: {
        id: true,
        rung: true,
        outcome: true,
        workspace: true,
        host: true,
        workContextId: true,
        createdAt: true,
        reportedAt: true,
        discardedAt: true,
        agent: { select: { name: true } },
      },
    }),
    db.auditEvent.findMany({
      where: { subjectType: "snapshot", subjectId: row.id },
      orderBy: { at: "desc" },
      take: 50,
    }),
    dbNow(db),
  ]);
  const manifestLayers = forest.layers.filter((l) => l.isHead && l.kind === "manifest").map((l) => l.digest);
  const manifest = await manifestOf(db, row, manifestLayers);
  const [artifact, dependencyCache] = await Promise.all([
    describeArtifact(db, row),
    manifest.full?.envHash ? readyDependencyCache(db, row, manifest.full.envHash) : null,
  ]);
  const { metadata: _metadata, lineage, forks, ...rest } = row;
  return {
    ...rest,
    artifact,
    dependencyCache,
    sizeBytes: Number(row.sizeBytes),
    lineage: lineage
      ? {
          id: lineage.id,
          workContextId: lineage.workContextId,
          state: lineage.state,
          retiredReason: lineage.retiredReason,
          retiredAt: lineage.retiredAt,
          originSnapshotId: lineage.originSnapshotId,
          forkedFromId: lineage.forkedFromId,
          forkReason: lineage.forkReason,
          checkpointCount: lineage._count.checkpoints,
        }
      : null,
    forks: forks.map(({ _count, ...fork }) => ({ ...fork, checkpointCount: _count.checkpoints })),
    history: stateHistory(row),
    manifest,
    heads: forest.layers.filter((l) => l.isHead).map((l) => l.uuid),
    forest: forest.layers,
    forestTruncated: forest.truncated,
    pins: (await withHolderNames(db, pins)).map((p) => ({ ...p, active: isPinActive(p, now) })),
    restores,
    audit,
  };
}
