// Restore outcomes: a worker reports how a restore went; a failure walks down the ladder and
// answers the next plan in the same call (the plan acquire-workspace.ts made is the first).
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { RetryTransaction } from "../db/errors.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { StrataError } from "../domain/errors.ts";
import { carriesState, nextRungAfterFailure } from "../domain/restore-ladder.ts";
import { restoreResultSchema } from "../domain/restore-result.ts";
import type { AgentScope } from "../domain/scope.ts";
import { entityIdSchema, objectIdSchema } from "../domain/snapshot-keys.ts";
import {
  restoreOutcomeSchema,
  rungSchema,
  type ReportRestoreResult,
  type RestorePlan,
  type RestoreView,
} from "../domain/views.ts";
import { clientFields } from "../domain/client-fields.ts";
import { releasePin, type PinnableState } from "../content/pins.ts";
import { findReadyBaseline } from "../lineage/baselines.ts";
import { releaseDegradedHolds } from "../lineage/degraded-targets.ts";
import { snapshotRefSelect, toSnapshotRef } from "../lineage/snapshots.ts";
import { buildPlan, hasOwnCheckpoints, lineageFactsSelect, pinChosen } from "../acquire/restore-plan.ts";
import { dbNow } from "../db/sql.ts";

const restoreIdField = { restoreId: entityIdSchema };

export const reportRestoreInput = z.discriminatedUnion("outcome", [
  z.strictObject({
    ...restoreIdField,
    outcome: z.literal("restored"),
    /** The git tree id the worker verified; must equal the snapshot's recorded tree. */
    treeId: objectIdSchema.optional(),
  }),
  z.strictObject({
    ...restoreIdField,
    outcome: z.literal("degraded"),
    /** What the worktree lacks (paths, layers, "bundle"…); at least one entry. */
    missing: z.array(z.string().trim().min(1).max(1000)).min(1).max(10_000),
    treeId: objectIdSchema.optional(),
    /** The restore's full result (what the worktree holds, what is missing, the next step). */
    detail: restoreResultSchema.optional(),
  }),
  z.strictObject({
    ...restoreIdField,
    outcome: z.literal("failed"),
    error: z.strictObject({
      code: z.string().trim().min(1).max(100),
      message: z.string().trim().max(2000).default(""),
    }),
    /** The restore's full result, when it got as far as deciding that nothing could be restored. */
    detail: restoreResultSchema.optional(),
  }),
]);
export type ReportRestoreInput = z.input<typeof reportRestoreInput>;

const restoreSelect = {
  id: true,
  agentId: true,
  repositoryId: true,
  lineageId: true,
  snapshotId: true,
  backendKind: true,
  baseImage: true,
  canonicalRef: true,
  workContextId: true,
  workspace: true,
  host: true,
  rung: true,
  outcome: true,
  pinId: true,
  previousRestoreId: true,
  result: true,
  createdAt: true,
  reportedAt: true,
  snapshot: { select: { treeId: true } },
  nextRestore: { select: { id: true } },
} satisfies Prisma.RestoreSelect;
type RestoreRow = Prisma.RestoreGetPayload<{ select: typeof restoreSelect }>;

function toRestoreView(row: RestoreRow): RestoreView {
  return {
    id: row.id,
    rung: rungSchema.parse(row.rung),
    outcome: restoreOutcomeSchema.parse(row.outcome),
    snapshotId: row.snapshotId,
    lineageId: row.lineageId,
    workContextId: row.workContextId,
    workspace: row.workspace,
    host: row.host,
    pinId: row.pinId,
    previousRestoreId: row.previousRestoreId,
    result: row.result,
    createdAt: row.createdAt,
    reportedAt: row.reportedAt,
  };
}

/** Rebuilds the plan a recorded restore stands for (a repeated report gets the same answer). */
async function planOfRestore(tx: Db, restoreId: string): Promise<RestorePlan> {
  const row = await tx.restore.findUniqueOrThrow({
    where: { id: restoreId },
    select: {
      ...restoreSelect,
      snapshot: { select: snapshotRefSelect },
      lineage: { select: lineageFactsSelect },
    },
  });
  const rung = rungSchema.parse(row.rung);
  const lineage = row.lineage ?? {
    id: row.lineageId ?? "",
    state: "active",
    workContextId: row.workContextId ?? "",
    originSnapshotId: null,
    retiredReason: null,
    forkedFromId: null,
  };
  const resumed = row.lineage
    ? carriesState({ ...row.lineage, hasCheckpoints: await hasOwnCheckpoints(tx, row.lineage.id) })
    : false;
  return buildPlan({
    restoreId: row.id,
    choice: { rung, snapshotId: row.snapshotId, mustInspectExternalState: resumed && rung !== "checkpoint" },
    snapshot: row.snapshot ? toSnapshotRef(row.snapshot) : null,
    pinId: row.pinId,
    workContextId: row.workContextId ?? lineage.workContextId,
    canonicalRef: row.canonicalRef,
    lineage,
    previousRestoreId: row.previousRestoreId,
  });
}

function resultOf(input: z.output<typeof reportRestoreInput>): Prisma.InputJsonValue {
  if (input.outcome === "restored") return { treeId: input.treeId ?? null };
  if (input.outcome === "degraded") {
    return input.detail
      ? { ...input.detail, treeId: input.treeId ?? null }
      : { missing: input.missing, treeId: input.treeId ?? null };
  }
  return input.detail ? { error: input.error, detail: input.detail } : { error: input.error };
}

/**
 * Records how a restore went. `restored` and `failed` release its pin; `degraded` keeps it
 * (the partly restored worktree still depends on the snapshot). `failed` walks down the
 * ladder and returns the next plan in the same call. Repeating a report is idempotent.
 */
export async function reportRestore(
  db: Db,
  opts: ReportRestoreInput & { agent: AgentScope; now?: Date },
): Promise<ReportRestoreResult> {
  const input = reportRestoreInput.parse(clientFields(opts, "agent", "now"));
  const agentId = opts.agent.agentId;
  return inTransaction(db, async (tx) => {
    const now = opts.now ?? new Date();
    const restore = await tx.restore.findFirst({ where: { id: input.restoreId, agentId }, select: restoreSelect });
    if (!restore) throw new StrataError("NOT_FOUND", `Restore ${input.restoreId} was not found.`);

    if (restore.outcome !== "pending") {
      if (restore.outcome !== input.outcome) {
        throw new StrataError("CONFLICT", `Restore ${restore.id} was already reported ${restore.outcome}.`, {
          hint: "An outcome is reported once; acquire again for a new restore.",
          data: { outcome: restore.outcome },
        });
      }
      const next = restore.nextRestore ? await planOfRestore(tx, restore.nextRestore.id) : null;
      return { restore: toRestoreView(restore), next };
    }

    const recordedTree = restore.snapshot?.treeId ?? null;
    if (input.outcome === "restored" && input.treeId && recordedTree && input.treeId !== recordedTree) {
      throw new StrataError("INVALID_INPUT", "The restored tree differs from the recorded one.", {
        hint: "A restore is `restored` only when its tree id matches; report it `degraded` with what is missing.",
        data: { recordedTreeId: recordedTree, reportedTreeId: input.treeId },
      });
    }
    const reported = await tx.restore.updateMany({
      where: { id: restore.id, outcome: "pending" },
      data: {
        outcome: input.outcome,
        reportedAt: now,
        result: resultOf(input),
        errorCode: input.outcome === "failed" ? input.error.code : null,
      },
    });
    if (reported.count !== 1) throw new RetryTransaction("restore reported concurrently");

    if (restore.snapshotId && restore.pinId && input.outcome !== "degraded") {
      await releasePin(tx, { snapshotId: restore.snapshotId, pinId: restore.pinId, agentId });
    }
    if (restore.snapshotId && input.outcome === "restored") {
      // A full restore of a snapshot ends the holds of earlier partial restores of it.
      await releaseDegradedHolds(tx, agentId, restore.snapshotId, now);
    }
    if (restore.snapshotId && input.outcome !== "failed") {
      // The sweeper's staleness clock: a restored head is in use.
      await tx.snapshot.updateMany({ where: { id: restore.snapshotId }, data: { lastRestoredAt: now } });
    }
    let next: RestorePlan | null = null;
    if (input.outcome === "failed") next = await walkDown(tx, { restore, agentId, now });
    const row = await tx.restore.findUniqueOrThrow({ where: { id: restore.id }, select: restoreSelect });
    return { restore: toRestoreView(row), next };
  });
}

/** Plans and records the next rung below a failed restore; null when none is left. */
async function walkDown(
  tx: Db,
  opts: { restore: RestoreRow; agentId: string; now: Date },
): Promise<RestorePlan | null> {
  const { restore, agentId, now } = opts;
  const lineage = restore.lineageId
    ? await tx.lineage.findUnique({ where: { id: restore.lineageId }, select: lineageFactsSelect })
    : null;
  const hasCheckpoints = lineage ? await hasOwnCheckpoints(tx, lineage.id) : false;
  const recordedOrigin = lineage?.originSnapshotId
    ? await tx.snapshot.findUnique({ where: { id: lineage.originSnapshotId }, select: snapshotRefSelect })
    : null;
  const currentBaseline = await findReadyBaseline(tx, { ...restore, agentId });
  // The head captured in a partial restore of the snapshot that failed: the next try after it.
  const partialHead =
    lineage?.state === "active" && restore.rung === "checkpoint" && restore.snapshotId
      ? await tx.snapshot.findFirst({
          where: { lineageId: lineage.id, class: "checkpoint", state: "ready", degradedFromId: restore.snapshotId },
          select: snapshotRefSelect,
        })
      : null;
  const choice = nextRungAfterFailure({
    failed: rungSchema.parse(restore.rung),
    failedSnapshotId: restore.snapshotId,
    lineage: lineage
      ? {
          state: lineage.state,
          workContextId: lineage.workContextId,
          hasCheckpoints,
          forkedFromId: lineage.forkedFromId,
        }
      : null,
    partialHead,
    recordedOrigin,
    currentBaseline,
  });
  if (!choice || !lineage) return null;
  const chosen = [partialHead, recordedOrigin, currentBaseline].find((s) => s && s.id === choice.snapshotId) ?? null;

  // Until the lineage has a checkpoint of its own, it began from wherever the ladder landed.
  let origin = lineage.originSnapshotId;
  if (!hasCheckpoints && restore.snapshotId && origin === restore.snapshotId) {
    const moved = await tx.lineage.updateMany({
      where: { id: lineage.id, originSnapshotId: restore.snapshotId },
      data: { originSnapshotId: chosen?.id ?? null },
    });
    if (moved.count === 1) origin = chosen?.id ?? null;
  }

  const restoreId = randomUUID();
  const states: PinnableState[] = chosen?.id === recordedOrigin?.id ? ["ready", "superseded"] : ["ready"];
  const pinId = chosen ? await pinChosen(tx, { snapshotId: chosen.id, restoreId, agentId, now, states }) : null;
  await tx.restore.create({
    data: {
      id: restoreId,
      agentId,
      repositoryId: restore.repositoryId,
      lineageId: lineage.id,
      snapshotId: chosen?.id ?? null,
      backendKind: restore.backendKind,
      baseImage: restore.baseImage,
      canonicalRef: restore.canonicalRef,
      workContextId: restore.workContextId,
      workspace: restore.workspace,
      host: restore.host,
      rung: choice.rung,
      pinId,
      previousRestoreId: restore.id,
      createdAt: now,
    },
    select: { id: true },
  });
  return buildPlan({
    restoreId,
    choice,
    snapshot: chosen ? toSnapshotRef(chosen) : null,
    pinId,
    workContextId: restore.workContextId ?? lineage.workContextId,
    canonicalRef: restore.canonicalRef,
    lineage: { ...lineage, originSnapshotId: origin },
    previousRestoreId: restore.id,
  });
}

/** How far a ladder is followed from its first rung (a ladder has at most a handful of rungs). */
const MAX_LADDER_STEPS = 50;

/**
 * Ends a restore that nothing will restore any more — its job failed for good, was cancelled,
 * or its last claim expired: the pending rung of the ladder that `restoreId` belongs to (this
 * one, or a later rung a failure walked to) is reported failed with `error`, and its pin is
 * released. The ladder is not walked further: no worker is left to restore the next rung.
 * Runs in `db`, which may be the transaction that ends the job, so both commit together.
 * Returns the restore it ended, or null when none was pending (idempotent).
 */
export async function abandonRestore(
  db: Db,
  opts: { restoreId: string; error: { code: string; message: string } },
): Promise<string | null> {
  return inTransaction(db, async (tx) => {
    let id: string | null = opts.restoreId;
    for (let step = 0; id && step < MAX_LADDER_STEPS; step += 1) {
      const restore: {
        id: string;
        agentId: string;
        outcome: string;
        snapshotId: string | null;
        pinId: string | null;
        nextRestore: { id: string } | null;
      } | null = await tx.restore.findUnique({
        where: { id },
        select: {
          id: true,
          agentId: true,
          outcome: true,
          snapshotId: true,
          pinId: true,
          nextRestore: { select: { id: true } },
        },
      });
      if (!restore) return null;
      if (restore.outcome !== "pending") {
        id = restore.outcome === "failed" ? (restore.nextRestore?.id ?? null) : null;
        continue;
      }
      const error = { code: opts.error.code.slice(0, 100), message: opts.error.message.slice(0, 2000) };
      const ended = await tx.restore.updateMany({
        where: { id: restore.id, outcome: "pending" },
        data: { outcome: "failed", reportedAt: await dbNow(tx), result: { error }, errorCode: error.code },
      });
      if (ended.count !== 1) throw new RetryTransaction("restore reported concurrently");
      if (restore.snapshotId && restore.pinId) {
        await releasePin(tx, { snapshotId: restore.snapshotId, pinId: restore.pinId, agentId: restore.agentId });
      }
      return restore.id;
    }
    return null;
  });
}
