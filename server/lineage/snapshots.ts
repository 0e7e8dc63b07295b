// Reading one snapshot, scoped to the agent that owns it, and the row <-> view mapping the
// lineage services share.
import { z } from "zod";
import { HIDDEN_STATES } from "./snapshot-list.ts";
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { StrataError } from "../domain/errors.ts";
import { normalizeBlobDigests, type Manifest } from "../domain/manifest.ts";
import type { AgentScope } from "../domain/scope.ts";
import { entityIdSchema, type Artifact } from "../domain/snapshot-keys.ts";
import { backendFor } from "../backends/registry.ts";
import { snapshotClassSchema, snapshotStateSchema, type SnapshotDetail, type SnapshotRef } from "../domain/views.ts";
import { clientFields } from "../domain/client-fields.ts";

export const snapshotRefSelect = {
  id: true,
  class: true,
  state: true,
  repositoryId: true,
  backendKind: true,
  baseImage: true,
  canonicalRef: true,
  canonicalCommit: true,
  workContextId: true,
  lineageId: true,
  sequence: true,
  predecessorId: true,
  manifestDigest: true,
  artifactKind: true,
  artifactRef: true,
  treeId: true,
  headCommit: true,
  branch: true,
  sizeBytes: true,
  metadata: true,
  createdAt: true,
  readyAt: true,
} satisfies Prisma.SnapshotSelect;

export type SnapshotRefRow = Prisma.SnapshotGetPayload<{ select: typeof snapshotRefSelect }>;

/** What a snapshot row keeps beyond its columns (the JSON `metadata`). */
export interface SnapshotMetadata {
  manifest?: { blobDigests?: string[] };
  /** The head a checkpoint's worker observed before capture (recognizes a retried append). */
  observedHeadId?: string | null;
  /** Why a capture never became ready. */
  failure?: { code: string; observedHeadId: string | null; currentHeadId: string | null };
}

/** The columns a new snapshot takes from its manifest and the workspace it was captured in. */
export function manifestColumns(
  manifest: Manifest,
  digest: string,
  source?: { workspace: string; host: string },
  artifact?: Artifact,
) {
  return {
    manifestDigest: digest,
    ...(artifact ? { artifactKind: artifact.kind, artifactRef: artifact.ref } : {}),
    headCommit: manifest.head,
    treeId: manifest.treeId,
    branch: manifest.branch,
    sizeBytes: BigInt(manifest.sizeBytes),
    sourceWorkspace: source?.workspace ?? null,
    sourceHost: source?.host ?? null,
  };
}

/**
 * Checks a capture's artifact before it is recorded: a kind this server has (UNKNOWN_BACKEND
 * otherwise) whose snapshots the catalog restores, and a reference among the content the
 * snapshot keeps (INVALID_INPUT otherwise).
 */
export function checkArtifact(artifact: Artifact | undefined, manifest: Manifest): void {
  if (!artifact) return;
  const backend = backendFor(artifact.kind);
  // Snapshots restore through the git backend in this release; `dir` artifacts are dependency
  // caches (server/caches/).
  if (backend.kind !== "git" || !manifest.blobDigests.includes(artifact.ref)) {
    throw new StrataError(
      "INVALID_INPUT",
      `The ${artifact.kind} artifact ${artifact.ref.slice(0, 80)} is not this snapshot's.`,
      {
        hint: "Name the artifact the capture stored: its reference must be among the manifest's blobs.",
        data: { kind: artifact.kind },
      },
    );
  }
}

export function snapshotMetadata(manifest: Manifest, extra: Omit<SnapshotMetadata, "manifest"> = {}) {
  return { manifest: { blobDigests: normalizeBlobDigests(manifest.blobDigests) }, ...extra };
}

function readMetadata(value: Prisma.JsonValue | null): SnapshotMetadata {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as SnapshotMetadata) : {};
}

export function toSnapshotRef(row: SnapshotRefRow): SnapshotRef {
  const metadata = readMetadata(row.metadata);
  return {
    id: row.id,
    class: snapshotClassSchema.parse(row.class),
    state: snapshotStateSchema.parse(row.state),
    repositoryId: row.repositoryId,
    backendKind: row.backendKind,
    baseImage: row.baseImage,
    canonicalRef: row.canonicalRef,
    canonicalCommit: row.canonicalCommit,
    workContextId: row.workContextId,
    lineageId: row.lineageId,
    sequence: row.sequence,
    predecessorId: row.predecessorId,
    manifestDigest: row.manifestDigest,
    artifact: { kind: row.artifactKind, ref: row.artifactRef },
    manifest: {
      treeId: row.treeId,
      head: row.headCommit,
      branch: row.branch,
      blobDigests: metadata.manifest?.blobDigests ?? [],
      sizeBytes: BigInt(row.sizeBytes),
    },
    createdAt: row.createdAt,
    readyAt: row.readyAt,
  };
}

export function observedHeadOf(row: { metadata: Prisma.JsonValue | null }): string | null {
  return readMetadata(row.metadata).observedHeadId ?? null;
}

const snapshotDetailSelect = {
  ...snapshotRefSelect,
  alias: true,
  agentId: true,
  validation: true,
  retiredReason: true,
  sourceWorkspace: true,
  sourceHost: true,
  supersededAt: true,
  retiredAt: true,
  failedAt: true,
  deletingAt: true,
  deletedAt: true,
  lastRestoredAt: true,
  repository: { select: { id: true, identity: true, name: true } },
} satisfies Prisma.SnapshotSelect;

export const getSnapshotInput = z.strictObject({
  snapshotId: entityIdSchema,
  /** Retired (and deleting/deleted) snapshots are hidden unless asked for, as in snapshot.list. */
  includeRetired: z.boolean().default(false),
});
export type GetSnapshotInput = z.input<typeof getSnapshotInput>;

/**
 * One snapshot of the calling agent. Another agent's snapshot is NOT_FOUND, and so is a retired
 * one unless includeRetired (restores under an established pin still read it).
 */
export async function getSnapshot(db: Db, opts: GetSnapshotInput & { agent: AgentScope }): Promise<SnapshotDetail> {
  const { snapshotId, includeRetired } = getSnapshotInput.parse(clientFields(opts, "agent"));
  const row = await db.snapshot.findFirst({
    where: {
      id: snapshotId,
      agentId: opts.agent.agentId,
      ...(includeRetired ? {} : { state: { notIn: HIDDEN_STATES } }),
    },
    select: snapshotDetailSelect,
  });
  if (!row) throw new StrataError("NOT_FOUND", `Snapshot ${snapshotId} was not found.`);
  return {
    ...toSnapshotRef(row),
    alias: row.alias,
    repository: row.repository,
    validation: row.validation,
    retiredReason: row.retiredReason,
    sourceWorkspace: row.sourceWorkspace,
    sourceHost: row.sourceHost,
    supersededAt: row.supersededAt,
    retiredAt: row.retiredAt,
    failedAt: row.failedAt,
    deletingAt: row.deletingAt,
    deletedAt: row.deletedAt,
    lastRestoredAt: row.lastRestoredAt,
  };
}
