// Appending a work checkpoint. The append is fenced on the head the worker observed before it
// captured: if the lineage's head moved or vanished since, a newer worker owns the lineage, the
// append loses with FENCE_LOST, and its artifact goes straight to reclamation.
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { StrataError } from "../domain/errors.ts";
import { manifestDigest, manifestSchema } from "../domain/manifest.ts";
import type { AgentScope } from "../domain/scope.ts";
import { artifactSchema, entityIdSchema, lineageKeySchema, sourceSchema } from "../domain/snapshot-keys.ts";
import type { AppendCheckpointResult } from "../domain/views.ts";
import { isHeldDegradedOriginal } from "./degraded-targets.ts";
import { findOrCreateLineage, lockLineageRow } from "./lineages.ts";
import { findOrCreateRepository } from "./repositories.ts";
import {
  checkArtifact,
  manifestColumns,
  observedHeadOf,
  snapshotMetadata,
  snapshotRefSelect,
  toSnapshotRef,
} from "./snapshots.ts";
import { clientFields } from "../domain/client-fields.ts";

export const appendCheckpointInput = z.strictObject({
  key: lineageKeySchema,
  /** The lineage head the worker saw before capturing; null when it saw none. */
  observedHeadId: entityIdSchema.nullable(),
  manifest: manifestSchema,
  source: sourceSchema.optional(),
  /** The artifact the capture minted (its backend kind and reference), when the client says. */
  artifact: artifactSchema.optional(),
});
export type AppendCheckpointInput = z.input<typeof appendCheckpointInput>;

type Attempt =
  { won: true; result: AppendCheckpointResult } | { won: false; lostSnapshotId: string; currentHeadId: string | null };

export async function appendCheckpoint(
  db: Db,
  opts: AppendCheckpointInput & { agent: AgentScope; now?: Date },
): Promise<AppendCheckpointResult> {
  const input = appendCheckpointInput.parse(clientFields(opts, "agent", "now"));
  const { key, manifest, observedHeadId } = input;
  const agentId = opts.agent.agentId;
  const digest = manifestDigest(manifest);
  checkArtifact(input.artifact, manifest);

  // The loser's row must outlive the refusal, so the transaction commits and the error is
  // thrown after it. (Inside a caller's transaction the caller decides what survives.)
  const attempt = await inTransaction(db, async (tx): Promise<Attempt> => {
    const now = opts.now ?? new Date();
    const repository = await findOrCreateRepository(tx, key.repository);
    const lineageKey = {
      agentId,
      workContextId: key.workContextId,
      repositoryId: repository.id,
      backendKind: key.backendKind,
      baseImage: key.baseImage,
    };
    const lineage = await findOrCreateLineage(tx, lineageKey);
    const state = await lockLineageRow(tx, lineage.id);
    if (state !== "active") {
      throw new StrataError("SNAPSHOT_RETIRED", `Lineage ${lineage.id} is retired; it takes no more checkpoints.`, {
        hint: "Its work ended. New work needs a new work context id.",
        data: { lineageId: lineage.id },
      });
    }
    const head = await tx.snapshot.findFirst({
      where: { ...lineageKey, lineageId: lineage.id, class: "checkpoint", state: "ready" },
      select: snapshotRefSelect,
    });
    if (head && head.manifestDigest === digest && observedHeadOf(head) === observedHeadId) {
      return {
        won: true,
        result: { outcome: "unchanged", snapshot: toSnapshotRef(head), lineageId: lineage.id, supersededId: null },
      };
    }

    // A capture of a partly restored worktree names the original only while the partial
    // restore is held; afterwards its state is simply the checkout's new state.
    const degradedFrom =
      manifest.degradedFrom && (await isHeldDegradedOriginal(tx, agentId, manifest.degradedFrom, now))
        ? manifest.degradedFrom
        : null;
    const base = {
      class: "checkpoint",
      degradedFromId: degradedFrom,
      agentId,
      repositoryId: repository.id,
      backendKind: key.backendKind,
      baseImage: key.baseImage,
      workContextId: key.workContextId,
      lineageId: lineage.id,
      ...manifestColumns(manifest, digest, input.source, input.artifact),
      createdAt: now,
    } satisfies Partial<Prisma.SnapshotUncheckedCreateInput>;

    if ((head?.id ?? null) !== observedHeadId) {
      // Lost the fence. Record the capture as already handed to reclamation: nothing may
      // ever restore it, and GC frees what only it references.
      const observed = observedHeadId
        ? await tx.snapshot.findFirst({
            where: { id: observedHeadId, lineageId: lineage.id, class: "checkpoint" },
            select: { id: true, sequence: true },
          })
        : null;
      const loser = await tx.snapshot.create({
        data: {
          ...base,
          state: "deleting",
          sequence: observed ? (observed.sequence ?? 0) + 1 : 1,
          predecessorId: observed?.id ?? null,
          failedAt: now,
          deletingAt: now,
          metadata: snapshotMetadata(manifest, {
            observedHeadId,
            failure: { code: "FENCE_LOST", observedHeadId, currentHeadId: head?.id ?? null },
          }),
        },
        select: { id: true },
      });
      return { won: false, lostSnapshotId: loser.id, currentHeadId: head?.id ?? null };
    }

    if (head) {
      const moved = await tx.snapshot.updateMany({
        where: { id: head.id, state: "ready" },
        data: { state: "superseded", supersededAt: now },
      });
      if (moved.count !== 1) throw new RetryTransaction("checkpoint head moved during append");
    }
    // The chain continues from the newest checkpoint the lineage ever had, so sequence only grows.
    const previous =
      head ??
      (await tx.snapshot.findFirst({
        where: { lineageId: lineage.id, class: "checkpoint", failedAt: null },
        orderBy: { sequence: "desc" },
        select: { id: true, sequence: true },
      }));
    try {
      const created = await tx.snapshot.create({
        data: {
          ...base,
          state: "ready",
          sequence: (previous?.sequence ?? 0) + 1,
          predecessorId: previous?.id ?? null,
          readyAt: now,
          metadata: snapshotMetadata(manifest, { observedHeadId }),
        },
        select: snapshotRefSelect,
      });
      return {
        won: true,
        result: {
          outcome: "appended",
          snapshot: toSnapshotRef(created),
          lineageId: lineage.id,
          supersededId: head?.id ?? null,
        },
      };
    } catch (error) {
      if (isUniqueViolation(error)) throw new RetryTransaction("a checkpoint head appeared during append");
      throw error;
    }
  });

  if (!attempt.won) {
    throw new StrataError(
      "FENCE_LOST",
      "The lineage head moved since this worker observed it; the checkpoint was not appended.",
      {
        hint: "A newer worker owns this lineage. Stop writing to it; the capture is released for reclamation.",
        data: { lostSnapshotId: attempt.lostSnapshotId, currentHeadId: attempt.currentHeadId },
      },
    );
  }
  return attempt.result;
}
