// What acquire and the ladder walk (restore/report-restore.ts) share: the plan an agent gets, the
// lineage facts it is built from, and the restore pin taken on the chosen snapshot.
import { RetryTransaction } from "../db/errors.ts";
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { isStrataError } from "../domain/errors.ts";
import type { LiveWorkspace } from "../domain/live-holds.ts";
import type { RestoreChoice, Rung } from "../domain/restore-ladder.ts";
import { lineageRetireReasonSchema, type RestorePlan, type SnapshotRef } from "../domain/views.ts";
import { pinSnapshot, type PinnableState } from "../content/pins.ts";

/** A partly restored worktree keeps its pin at most this long (support may discard it sooner). */
export const RESTORE_PIN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export const lineageFactsSelect = {
  id: true,
  state: true,
  workContextId: true,
  originSnapshotId: true,
  retiredReason: true,
  forkedFromId: true,
} satisfies Prisma.LineageSelect;
export type LineageFactsRow = Prisma.LineageGetPayload<{ select: typeof lineageFactsSelect }>;

/** Pins the chosen snapshot, provided it is still in one of `states` (else the decision is redone). */
export async function pinChosen(
  tx: Db,
  opts: { snapshotId: string; restoreId: string; agentId: string; now: Date; states: readonly PinnableState[] },
): Promise<string> {
  const pinId = `restore:${opts.restoreId}`;
  try {
    // pinSnapshot holds the row FOR SHARE while it checks the state, so retirement cannot pass.
    await pinSnapshot(tx, {
      snapshotId: opts.snapshotId,
      pinId,
      holder: `agent:${opts.agentId}`,
      purpose: "restore",
      expiresAt: new Date(opts.now.getTime() + RESTORE_PIN_TTL_MS),
      agentId: opts.agentId,
      states: opts.states,
    });
  } catch (error) {
    // The chosen snapshot moved on since the decision (nothing was written): decide again.
    if (isStrataError(error, "PIN_REFUSED")) throw new RetryTransaction("chosen snapshot changed state");
    throw error;
  }
  return pinId;
}

export async function hasOwnCheckpoints(tx: Db, lineageId: string): Promise<boolean> {
  const one = await tx.snapshot.findFirst({
    where: { lineageId, class: "checkpoint", failedAt: null },
    select: { id: true },
  });
  return one !== null;
}

function noticeFor(rung: Rung, lineage: LineageFactsRow, mustInspect: boolean): string | null {
  if (lineage.state === "retired") {
    return (
      `This work context's lineage was retired (${lineage.retiredReason ?? "retired"}): its checkpoints are not ` +
      `restorable and it takes no new ones. Restoring the ${rung} rung. Use a new work context id for new work.`
    );
  }
  if (mustInspect && lineage.forkedFromId) {
    return (
      `This work context was forked from checkpoint ${lineage.forkedFromId}, and neither that checkpoint nor one ` +
      `of its own is available; restoring the ${rung} rung instead. Inspect durable external state before ` +
      `repeating writes: a snapshot proves nothing about effects.`
    );
  }
  if (mustInspect) {
    return (
      `This work context's own checkpoint is not available; restoring the ${rung} rung instead. Inspect durable ` +
      `external state before repeating writes: a snapshot proves nothing about effects.`
    );
  }
  return null;
}

export function buildPlan(opts: {
  restoreId: string;
  choice: RestoreChoice;
  snapshot: SnapshotRef | null;
  pinId: string | null;
  workContextId: string;
  canonicalRef: string;
  lineage: LineageFactsRow;
  previousRestoreId: string | null;
  /** The held workspace the work context resumes in (the live rung), when acquire claimed one. */
  live?: LiveWorkspace | null;
}): RestorePlan {
  const { lineage, choice } = opts;
  const live = opts.live ?? null;
  return {
    restoreId: opts.restoreId,
    rung: live ? "live" : choice.rung,
    snapshot: opts.snapshot,
    pinId: opts.pinId,
    workContextId: opts.workContextId,
    canonicalRef: opts.canonicalRef,
    lineage: {
      id: lineage.id,
      state: lineage.state === "retired" ? "retired" : "active",
      retiredReason: lineage.retiredReason ? lineageRetireReasonSchema.parse(lineage.retiredReason) : null,
      originSnapshotId: lineage.originSnapshotId,
      forkedFromId: lineage.forkedFromId,
    },
    previousRestoreId: opts.previousRestoreId,
    mustInspectExternalState: choice.mustInspectExternalState,
    notice: noticeFor(choice.rung, lineage, choice.mustInspectExternalState),
    live,
  };
}
