// Live holds: a paused work context keeps its live workspace. After the pause's checkpoint was
// appended (the hold comes second: it is never the only copy), the agent holds the directory the
// work lives in on its host, 14 days when the lineage's provider is idle-persistent and one hour
// otherwise (server/backends/providers.ts). While the hold lasts:
// - acquire on that host offers the held workspace first, nothing restored, as long as the
//   checkpoint is still the lineage's head (server/acquire/claim-live-hold.ts);
// - the checkpoint is pinned (`hold:<id>`, same expiry), so neither the sweeper nor collection
//   takes it, whatever becomes of the lineage meanwhile.
// A hold ends when it is released, when the work context resumes in it, when a newer hold of
// the lineage replaces it, or when it expires; then acquire restores the checkpoint as usual.
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import type { LiveHold } from "../db/generated/postgres/client.ts";
import { clientFields } from "../domain/client-fields.ts";
import { StrataError } from "../domain/errors.ts";
import { hostPathSchema } from "../domain/jobs.ts";
import { liveHoldStatus, type LiveHoldEndReason, type LiveHoldView } from "../domain/live-holds.ts";
import type { AgentScope } from "../domain/scope.ts";
import { entityIdSchema, sourceSchema, workContextIdSchema } from "../domain/snapshot-keys.ts";
import { pinSnapshot, releasePin } from "../content/pins.ts";
import { liveHoldDurationMs, providerCapabilities, type ProviderSettings } from "../backends/providers.ts";
import { lockLineageRow } from "./lineages.ts";

/** An absolute directory with no `.` or `..` segment: the workspace as its host names it. */
const heldPathSchema = hostPathSchema.refine(
  (p) => !p.split(/[\\/]+/).some((segment) => segment === "." || segment === ".."),
  "must not contain . or .. segments",
);

export const holdWorkspaceInput = z.strictObject({
  workContextId: workContextIdSchema,
  /** The checkpoint the pause appended: its lineage's ready head. */
  snapshotId: entityIdSchema,
  /** The live workspace's directory on `host` (on a Strata host: its pooled worktree). */
  workspace: heldPathSchema,
  host: sourceSchema.shape.host,
});
export type HoldWorkspaceInput = z.input<typeof holdWorkspaceInput>;

export function toLiveHoldView(row: LiveHold, now: Date): LiveHoldView {
  return {
    id: row.id,
    workContextId: row.workContextId,
    lineageId: row.lineageId,
    snapshotId: row.snapshotId,
    host: row.host,
    workspace: row.workspace,
    provider: row.provider,
    idlePersistent: row.idlePersistent,
    pinId: row.pinId,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    endedAt: row.endedAt,
    endReason: row.endReason as LiveHoldEndReason | null,
    status: liveHoldStatus(row, now),
  };
}

/**
 * Ends an unended hold and releases its pin: `expired` holds are stamped with their expiry, the
 * others with `now`. False when it had ended already (nothing changed).
 */
export async function endLiveHold(tx: Db, hold: LiveHold, reason: LiveHoldEndReason, now: Date): Promise<boolean> {
  const endedAt = reason === "expired" ? hold.expiresAt : now;
  const ended = await tx.liveHold.updateMany({
    where: { id: hold.id, endedAt: null },
    data: { endedAt, endReason: reason },
  });
  if (ended.count !== 1) return false;
  await releasePin(tx, { agentId: hold.agentId, snapshotId: hold.snapshotId, pinId: hold.pinId });
  return true;
}

function refused(snapshotId: string, state: string, lineageState: string | null): StrataError {
  return new StrataError(
    "HOLD_REFUSED",
    lineageState === "active"
      ? `Checkpoint ${snapshotId} is ${state}, not its lineage's head; only the pause's checkpoint is held.`
      : `Checkpoint ${snapshotId} belongs to a retired lineage; a retired lineage holds nothing.`,
    {
      hint: "Append the pause's checkpoint first (strata capture --context ID), then hold the workspace it was captured in.",
      data: { state, lineageState },
    },
  );
}

/**
 * Holds the live workspace of a paused work context: the checkpoint must be the agent's own,
 * of that work context, and its lineage's ready head (an active lineage). Any earlier unended
 * hold of the lineage ends (`replaced`, or `expired` when its time ran out); asking again for
 * the same checkpoint, host and directory while the hold lasts answers the same hold. Nothing
 * is stored when it is refused.
 */
export async function holdWorkspace(
  db: Db,
  opts: HoldWorkspaceInput & { agent: AgentScope; providers: ProviderSettings; now?: Date },
): Promise<LiveHoldView> {
  const input = holdWorkspaceInput.parse(clientFields(opts, "agent", "providers", "now"));
  const agentId = opts.agent.agentId;
  return inTransaction(db, async (tx) => {
    const now = opts.now ?? new Date();
    const snapshot = await tx.snapshot.findFirst({
      where: { id: input.snapshotId, agentId },
      select: { id: true, class: true, workContextId: true, lineageId: true, backendKind: true },
    });
    // Another agent's snapshot is answered exactly like a missing one.
    if (!snapshot) throw new StrataError("NOT_FOUND", `Snapshot ${input.snapshotId} was not found.`);
    if (snapshot.class !== "checkpoint" || !snapshot.lineageId) {
      throw new StrataError("INVALID_INPUT", `Snapshot ${snapshot.id} is a baseline; a hold keeps a checkpoint.`, {
        hint: "Name the checkpoint the pause appended.",
      });
    }
    if (snapshot.workContextId !== input.workContextId) {
      throw new StrataError(
        "INVALID_INPUT",
        `Checkpoint ${snapshot.id} is not a checkpoint of work context ${input.workContextId}.`,
        { hint: "Name the work context the checkpoint was appended to." },
      );
    }
    // The lineage first, as appends and retirements lock it: the head cannot move meanwhile.
    const lineageState = await lockLineageRow(tx, snapshot.lineageId);
    const { state } = await tx.snapshot.findUniqueOrThrow({ where: { id: snapshot.id }, select: { state: true } });
    if (lineageState !== "active" || state !== "ready") throw refused(snapshot.id, state, lineageState);

    const previous = await tx.liveHold.findFirst({ where: { lineageId: snapshot.lineageId, endedAt: null } });
    if (previous) {
      const active = liveHoldStatus(previous, now) === "active";
      const same =
        previous.snapshotId === snapshot.id && previous.host === input.host && previous.workspace === input.workspace;
      if (active && same) return toLiveHoldView(previous, now);
      await endLiveHold(tx, previous, active ? "replaced" : "expired", now);
    }

    const capabilities = providerCapabilities(opts.providers, snapshot.backendKind);
    const id = randomUUID();
    const pinId = `hold:${id}`;
    const expiresAt = new Date(now.getTime() + liveHoldDurationMs(capabilities));
    // Held FOR SHARE while ready: a retirement that comes later waits for, then keeps, this pin.
    await pinSnapshot(tx, {
      snapshotId: snapshot.id,
      pinId,
      holder: `agent:${agentId}`,
      purpose: "live-hold",
      expiresAt,
      agentId,
      states: ["ready"],
    });
    const row = await tx.liveHold.create({
      data: {
        id,
        agentId,
        workContextId: input.workContextId,
        lineageId: snapshot.lineageId,
        snapshotId: snapshot.id,
        host: input.host,
        workspace: input.workspace,
        provider: snapshot.backendKind,
        idlePersistent: capabilities.idlePersistentHolds,
        pinId,
        createdAt: now,
        expiresAt,
      },
    });
    return toLiveHoldView(row, now);
  });
}
