// planResume: what a task resumes, read-only. For a work context, every checkout it recorded:
// the ready head of each of its active lineages (one per repository, backend and base image),
// with the directory and host that head was captured in; for one snapshot named by id, that
// snapshot. Nothing is written or pinned: the host decides per checkout whether it continues in
// place or restores (and pins) it. A checkout whose snapshot a paused work context still holds
// live says where (`live`): resume continues there, then ends the hold.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { clientFields } from "../domain/client-fields.ts";
import { StrataError } from "../domain/errors.ts";
import type { LiveWorkspace } from "../domain/live-holds.ts";
import type { ResumeCheckout, ResumePlan } from "../domain/resume-plan.ts";
import type { AgentScope } from "../domain/scope.ts";
import { entityIdSchema, workContextIdSchema } from "../domain/snapshot-keys.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { snapshotRefSelect, toSnapshotRef } from "../lineage/snapshots.ts";

export const planResumeInput = z
  .strictObject({
    /** Resume every checkout this work context recorded. */
    workContextId: workContextIdSchema.optional(),
    /** Or resume one snapshot. */
    snapshotId: entityIdSchema.optional(),
  })
  .refine((v) => (v.workContextId === undefined) !== (v.snapshotId === undefined), {
    message: "give either workContextId or snapshotId",
  });
export type PlanResumeInput = z.input<typeof planResumeInput>;

const headSelect = {
  ...snapshotRefSelect,
  sourceWorkspace: true,
  sourceHost: true,
  repository: { select: { id: true, identity: true, name: true } },
} satisfies Prisma.SnapshotSelect;

type HeadRow = Prisma.SnapshotGetPayload<{ select: typeof headSelect }>;

function checkoutOf(row: HeadRow, live: LiveWorkspace | null): ResumeCheckout {
  return {
    snapshot: toSnapshotRef(row),
    repository: row.repository,
    recorded: { workspace: row.sourceWorkspace, host: row.sourceHost },
    live,
  };
}

/** The lasting live holds of these snapshots, by snapshot (server/lineage/hold-workspace.ts). */
async function liveHoldsOf(db: Db, agentId: string, snapshotIds: string[]): Promise<Map<string, LiveWorkspace>> {
  const now = new Date();
  const holds = await db.liveHold.findMany({
    where: { agentId, snapshotId: { in: snapshotIds }, endedAt: null, expiresAt: { gt: now } },
    select: { id: true, snapshotId: true, workspace: true, host: true, expiresAt: true },
  });
  return new Map(
    holds.map((h) => [h.snapshotId, { holdId: h.id, workspace: h.workspace, host: h.host, expiresAt: h.expiresAt }]),
  );
}

export async function planResume(db: Db, opts: PlanResumeInput & { agent: AgentScope }): Promise<ResumePlan> {
  const input = planResumeInput.parse(clientFields(opts, "agent"));
  const agentId = opts.agent.agentId;
  if (input.snapshotId !== undefined) {
    // Any of the agent's snapshots, as a restore by id reads it (retired ones too).
    const row = await db.snapshot.findFirst({ where: { id: input.snapshotId, agentId }, select: headSelect });
    if (!row) throw new StrataError("NOT_FOUND", `Snapshot ${input.snapshotId} was not found.`);
    const live = await liveHoldsOf(db, agentId, [row.id]);
    return { workContextId: row.workContextId, checkouts: [checkoutOf(row, live.get(row.id) ?? null)] };
  }
  const workContextId = input.workContextId ?? "";
  const heads = await db.snapshot.findMany({
    where: { agentId, workContextId, class: "checkpoint", state: "ready", lineage: { state: "active" } },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: headSelect,
  });
  if (heads.length === 0) {
    throw new StrataError("NOT_FOUND", `Work context ${workContextId} has no checkpoint to resume.`, {
      hint: "Capture a checkpoint of the work context first (strata capture --context ID).",
    });
  }
  const live = await liveHoldsOf(
    db,
    agentId,
    heads.map((h) => h.id),
  );
  return { workContextId, checkouts: heads.map((h) => checkoutOf(h, live.get(h.id) ?? null)) };
}
