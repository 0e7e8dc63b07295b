// An authorized fork: new work contexts that start from a ready checkpoint of another one. The
// owning agent (lineage.fork) or an operator (dashboard.forkCheckpoint) decides it, with a
// reason; each fork is a new lineage of the checkpoint's key (same agent, repository, backend,
// base image; a new work context id) that records the checkpoint, the reason and who decided,
// and one audit event records the decision. The source lineage and its checkpoints are not
// touched. A fork's first acquire restores the checkpoint (server/domain/restore-ladder.ts).
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import { StrataError } from "../domain/errors.ts";
import type { AgentScope, UserScope } from "../domain/scope.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";
import type { ForkCheckpointResult } from "../domain/views.ts";
import { clientFields } from "../domain/client-fields.ts";
import { recordAuditEvent, type AuditActor } from "../audit/record-audit-event.ts";
import { lockLineageRow, mintWorkContextId } from "./lineages.ts";

/** At most this many work contexts per fork. */
const MAX_FORKS = 100;

export const forkCheckpointInput = z.strictObject({
  /** The checkpoint the new work contexts start from; it must be ready. */
  fromCheckpoint: entityIdSchema,
  count: z.number().int().min(1).max(MAX_FORKS),
  /** Why: recorded on each new lineage and in the audit log. */
  reason: z.string().trim().min(3, "say why in a few words").max(500),
});
export type ForkCheckpointInput = z.input<typeof forkCheckpointInput>;

/** Who forks: the agent that owns the checkpoint, or a dashboard user (any agent's checkpoint). */
export type Forker = { kind: "agent"; agent: AgentScope } | { kind: "user"; user: UserScope };

function forkerOf(actor: Forker): { audit: AuditActor; recorded: string } {
  if (actor.kind === "agent") {
    return { audit: { type: "agent", id: actor.agent.agentId }, recorded: `agent:${actor.agent.agentId}` };
  }
  return { audit: { type: "user", id: actor.user.userId }, recorded: `user:${actor.user.userId}` };
}

/** States a checkpoint is in after it left restore eligibility for good. */
const RETIRED_STATES = new Set(["retired", "deleting", "deleted"]);

function refuseState(snapshotId: string, state: string, lineageState: string | null): StrataError {
  if (RETIRED_STATES.has(state) || lineageState !== "active") {
    return new StrataError("SNAPSHOT_RETIRED", `Checkpoint ${snapshotId} is retired; it cannot be forked.`, {
      hint: "Fork a ready checkpoint of an active lineage.",
      data: { state, lineageState },
    });
  }
  return new StrataError(
    "CONFLICT",
    `Checkpoint ${snapshotId} is ${state}, not ready; only a ready checkpoint is forked.`,
    {
      hint: "Fork the lineage's ready head (or the checkpoint the decision is about, while it is ready).",
      data: { state },
    },
  );
}

/**
 * Creates `count` work contexts whose lineages start from a ready checkpoint, in one
 * transaction: the lineages (each with the checkpoint, the reason and who decided) and one
 * audit event. Nothing is stored when it is refused. An agent may fork only its own checkpoints
 * (another agent's id is NOT_FOUND, like any foreign id).
 */
export async function forkCheckpoint(
  db: Db,
  opts: ForkCheckpointInput & { actor: Forker; now?: Date },
): Promise<ForkCheckpointResult> {
  const input = forkCheckpointInput.parse(clientFields(opts, "actor", "now"));
  const { audit, recorded } = forkerOf(opts.actor);
  return inTransaction(db, async (tx) => {
    const now = opts.now ?? new Date();
    const scoped = opts.actor.kind === "agent" ? { agentId: opts.actor.agent.agentId } : {};
    const source = await tx.snapshot.findFirst({
      where: { id: input.fromCheckpoint, ...scoped },
      select: {
        id: true,
        class: true,
        agentId: true,
        repositoryId: true,
        backendKind: true,
        baseImage: true,
        workContextId: true,
        lineageId: true,
      },
    });
    if (!source) throw new StrataError("NOT_FOUND", `Snapshot ${input.fromCheckpoint} was not found.`);
    if (source.class !== "checkpoint" || !source.lineageId) {
      throw new StrataError("INVALID_INPUT", `Snapshot ${source.id} is a baseline; only a checkpoint is forked.`, {
        hint: "New work starts from a baseline by workspace.acquire without a work context id.",
      });
    }
    // The lineage first, then the checkpoint: the order appends, retirements and the sweeper
    // take. A retirement either committed before (the state says so here) or waits for this
    // transaction, and the forks then count as the checkpoint's use (sweeper.ts).
    const lineageState = await lockLineageRow(tx, source.lineageId);
    const locked = await dialectOf(tx).lockRow<{ state: string }>(tx, "snapshots", source.id, "state", "share");
    const state = locked?.state ?? "deleted";
    if (state !== "ready" || lineageState !== "active") throw refuseState(source.id, state, lineageState);

    const forks = Array.from({ length: input.count }, () => ({
      lineageId: randomUUID(),
      workContextId: mintWorkContextId(),
    }));
    await tx.lineage.createMany({
      data: forks.map((fork) => ({
        id: fork.lineageId,
        agentId: source.agentId,
        workContextId: fork.workContextId,
        repositoryId: source.repositoryId,
        backendKind: source.backendKind,
        baseImage: source.baseImage,
        // Until it has a checkpoint of its own, a fork began from the one it was forked from.
        originSnapshotId: source.id,
        forkedFromId: source.id,
        forkReason: input.reason,
        forkedBy: recorded,
        createdAt: now,
      })),
    });
    await recordAuditEvent(tx, {
      actor: audit,
      action: "lineage.fork",
      subjectType: "snapshot",
      subjectId: source.id,
      reason: input.reason,
      details: {
        count: input.count,
        sourceLineageId: source.lineageId,
        sourceWorkContextId: source.workContextId,
        forks,
      },
      at: now,
    });
    return { sourceSnapshotId: source.id, sourceLineageId: source.lineageId, reason: input.reason, forks };
  });
}
