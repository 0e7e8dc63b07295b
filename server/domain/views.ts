// The plain-data shapes the agent API returns. Services build them; routers validate their
// output against them, so a field never leaks out by accident.
import { z } from "zod";
import { liveWorkspaceSchema } from "./live-holds.ts";

const SNAPSHOT_STATES = ["capturing", "ready", "superseded", "retired", "failed", "deleting", "deleted"] as const;
export const snapshotStateSchema = z.enum(SNAPSHOT_STATES);
export const snapshotClassSchema = z.enum(["baseline", "checkpoint"]);
export const rungSchema = z.enum(["checkpoint", "baseline", "cold"]);
const LINEAGE_RETIRE_REASONS = ["completed", "declined", "stale", "operator"] as const;
export const lineageRetireReasonSchema = z.enum(LINEAGE_RETIRE_REASONS);
export type LineageRetireReason = z.infer<typeof lineageRetireReasonSchema>;

const manifestViewSchema = z.object({
  treeId: z.string().nullable(),
  head: z.string().nullable(),
  branch: z.string().nullable(),
  blobDigests: z.array(z.string()),
  sizeBytes: z.bigint(),
});

/** Enough of a snapshot to restore it and to place it in its key and chain. */
export const snapshotRefSchema = z.object({
  id: z.string(),
  class: snapshotClassSchema,
  state: snapshotStateSchema,
  repositoryId: z.string(),
  backendKind: z.string(),
  baseImage: z.string(),
  canonicalRef: z.string().nullable(),
  canonicalCommit: z.string().nullable(),
  workContextId: z.string().nullable(),
  lineageId: z.string().nullable(),
  sequence: z.number().int().nullable(),
  predecessorId: z.string().nullable(),
  manifestDigest: z.string().nullable(),
  /** The backend that minted the snapshot's artifact, and its reference (null: recorded before). */
  artifact: z.object({ kind: z.string(), ref: z.string().nullable() }),
  manifest: manifestViewSchema,
  createdAt: z.date(),
  readyAt: z.date().nullable(),
});
export type SnapshotRef = z.infer<typeof snapshotRefSchema>;

export const snapshotDetailSchema = snapshotRefSchema.extend({
  alias: z.string().nullable(),
  repository: z.object({ id: z.string(), identity: z.string(), name: z.string() }),
  validation: z.unknown().nullable(),
  retiredReason: z.string().nullable(),
  sourceWorkspace: z.string().nullable(),
  sourceHost: z.string().nullable(),
  supersededAt: z.date().nullable(),
  retiredAt: z.date().nullable(),
  failedAt: z.date().nullable(),
  deletingAt: z.date().nullable(),
  deletedAt: z.date().nullable(),
  lastRestoredAt: z.date().nullable(),
});
export type SnapshotDetail = z.infer<typeof snapshotDetailSchema>;

/** One row of snapshot.list (the shared listing's shape; class and state as stored). */
const snapshotSummarySchema = z.object({
  id: z.string(),
  alias: z.string().nullable(),
  class: z.string(),
  state: z.string(),
  agentId: z.string(),
  repositoryId: z.string(),
  backendKind: z.string(),
  baseImage: z.string(),
  canonicalRef: z.string().nullable(),
  canonicalCommit: z.string().nullable(),
  workContextId: z.string().nullable(),
  lineageId: z.string().nullable(),
  sequence: z.number().int().nullable(),
  predecessorId: z.string().nullable(),
  headCommit: z.string().nullable(),
  treeId: z.string().nullable(),
  branch: z.string().nullable(),
  sizeBytes: z.bigint(),
  createdAt: z.date(),
  retiredAt: z.date().nullable(),
  repository: z.object({ name: z.string(), identity: z.string() }),
  agent: z.object({ name: z.string() }),
});

export const snapshotPageSchema = z.object({
  items: z.array(snapshotSummarySchema),
  nextCursor: z.string().nullable(),
});

export const lineageViewSchema = z.object({
  id: z.string(),
  workContextId: z.string(),
  repository: z.object({ id: z.string(), identity: z.string(), name: z.string() }),
  backendKind: z.string(),
  baseImage: z.string(),
  state: z.enum(["active", "retired"]),
  retiredReason: lineageRetireReasonSchema.nullable(),
  retiredAt: z.date().nullable(),
  createdAt: z.date(),
  /** The baseline or checkpoint the lineage began from; null for a cold start. */
  originSnapshotId: z.string().nullable(),
  /** The checkpoint an authorized fork began it from, and why; null when it is not a fork. */
  forkedFromId: z.string().nullable(),
  forkReason: z.string().nullable(),
  head: snapshotRefSchema.nullable(),
  checkpointCount: z.number().int(),
});
export type LineageView = z.infer<typeof lineageViewSchema>;

export const lineagePageSchema = z.object({
  items: z.array(lineageViewSchema),
  nextCursor: z.string().nullable(),
});

export const restoreOutcomeSchema = z.enum(["pending", "restored", "degraded", "unrestored", "failed"]);

const restoreViewSchema = z.object({
  id: z.string(),
  rung: rungSchema,
  outcome: restoreOutcomeSchema,
  snapshotId: z.string().nullable(),
  lineageId: z.string().nullable(),
  workContextId: z.string().nullable(),
  workspace: z.string(),
  host: z.string(),
  pinId: z.string().nullable(),
  previousRestoreId: z.string().nullable(),
  result: z.unknown().nullable(),
  createdAt: z.date(),
  reportedAt: z.date().nullable(),
});
export type RestoreView = z.infer<typeof restoreViewSchema>;

/** What an acquire (or a ladder step) tells the worker to do. */
export const restorePlanSchema = z.object({
  restoreId: z.string(),
  /** `live`: continue in the held workspace (`live`), nothing restored; else restore `snapshot`. */
  rung: z.enum(["live", ...rungSchema.options]),
  /** The snapshot to restore; null on the cold rung (a fresh checkout). */
  snapshot: snapshotRefSchema.nullable(),
  /** The pin protecting that snapshot until the outcome is reported. */
  pinId: z.string().nullable(),
  workContextId: z.string(),
  canonicalRef: z.string(),
  lineage: z.object({
    id: z.string(),
    state: z.enum(["active", "retired"]),
    retiredReason: lineageRetireReasonSchema.nullable(),
    originSnapshotId: z.string().nullable(),
    /** Set on a forked work context: the checkpoint it restores until it has one of its own. */
    forkedFromId: z.string().nullable(),
  }),
  /** Present when the ladder was walked: the restore whose failure led here. */
  previousRestoreId: z.string().nullable(),
  mustInspectExternalState: z.boolean(),
  /** A sentence for the agent when the plan is not the obvious one. */
  notice: z.string().nullable(),
  /**
   * On the live rung, the held workspace (the paused work context's hold ended: it resumed).
   * The restore recorded is the checkpoint's, `snapshot`: report it restored once the workspace
   * is found to be that checkpoint, else restore the snapshot as on the checkpoint rung.
   */
  live: liveWorkspaceSchema.nullable(),
});
export type RestorePlan = z.infer<typeof restorePlanSchema>;

export const publishBaselineResultSchema = z.object({
  /** `unchanged`: this commit already was the ready baseline (a repeated publish). */
  outcome: z.enum(["published", "unchanged"]),
  snapshot: snapshotRefSchema,
  supersededId: z.string().nullable(),
});
export type PublishBaselineResult = z.infer<typeof publishBaselineResultSchema>;

export const appendCheckpointResultSchema = z.object({
  /** `unchanged`: this exact append already happened (a retried call). */
  outcome: z.enum(["appended", "unchanged"]),
  snapshot: snapshotRefSchema,
  lineageId: z.string(),
  supersededId: z.string().nullable(),
});
export type AppendCheckpointResult = z.infer<typeof appendCheckpointResultSchema>;

export const reportRestoreResultSchema = z.object({
  restore: restoreViewSchema,
  /** After a failure: the next rung's plan, or null when the ladder is exhausted. */
  next: restorePlanSchema.nullable(),
});
export type ReportRestoreResult = z.infer<typeof reportRestoreResultSchema>;

/** What lineage.fork and dashboard.forkCheckpoint return: the new work contexts, one per fork. */
export const forkCheckpointResultSchema = z.object({
  sourceSnapshotId: z.string(),
  sourceLineageId: z.string(),
  reason: z.string(),
  forks: z.array(z.object({ lineageId: z.string(), workContextId: z.string() })),
});
export type ForkCheckpointResult = z.infer<typeof forkCheckpointResultSchema>;

export const retireLineageResultSchema = z.object({
  lineage: lineageViewSchema,
  /** The checkpoints this call retired (empty when the lineage already was retired). */
  retiredSnapshotIds: z.array(z.string()),
  alreadyRetired: z.boolean(),
});
export type RetireLineageResult = z.infer<typeof retireLineageResultSchema>;
