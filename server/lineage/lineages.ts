// Lineages: one work context's checkpoint chain. Reading them (scoped to their agent) and
// retiring them, which takes every checkpoint of the lineage out of restore eligibility.
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { dialectOf } from "../db/dialect.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { StrataError } from "../domain/errors.ts";
import type { AgentScope, UserScope } from "../domain/scope.ts";
import { entityIdSchema, workContextIdSchema } from "../domain/snapshot-keys.ts";
import {
  lineageRetireReasonSchema,
  type LineageRetireReason,
  type LineageView,
  type RetireLineageResult,
} from "../domain/views.ts";
import { recordAuditEvent, type AuditActor } from "../audit/record-audit-event.ts";
import { decodeCursor, encodeCursor } from "../domain/paging.ts";
import { snapshotRefSelect, toSnapshotRef } from "./snapshots.ts";
import { clientFields } from "../domain/client-fields.ts";
import { pageDirectionSchema } from "../domain/paging.ts";

/** A new work context id, as the server mints them for new work (acquire) and for forks. */
export function mintWorkContextId(): string {
  return `wc_${randomUUID()}`;
}

/**
 * Locks a lineage row until the transaction ends and returns its state (null: no such row).
 * Appends, retirements and the sweeper take it first, so they serialize per lineage on
 * PostgreSQL; SQLite transactions already hold the write lock.
 */
export async function lockLineageRow(tx: Db, lineageId: string): Promise<string | null> {
  const row = await dialectOf(tx).lockRow<{ state: string }>(tx, "lineages", lineageId, "state");
  return row?.state ?? null;
}

export interface LineageKeyColumns {
  agentId: string;
  workContextId: string;
  repositoryId: string;
  backendKind: string;
  baseImage: string;
}

/** The lineage of a key, created (as a cold start unless `originSnapshotId`) on first use. */
export async function findOrCreateLineage(
  tx: Db,
  key: LineageKeyColumns,
  originSnapshotId: string | null = null,
): Promise<{
  id: string;
  state: string;
  originSnapshotId: string | null;
  retiredReason: string | null;
  created: boolean;
}> {
  const select = { id: true, state: true, originSnapshotId: true, retiredReason: true } as const;
  const existing = await tx.lineage.findUnique({
    where: { agentId_workContextId_repositoryId_backendKind_baseImage: key },
    select,
  });
  if (existing) return { ...existing, created: false };
  return { ...(await createLineage(tx, key, originSnapshotId)), created: true };
}

/** Creates the lineage of a key; losing a concurrent create retries the whole transaction. */
export async function createLineage(tx: Db, key: LineageKeyColumns, originSnapshotId: string | null) {
  try {
    return await tx.lineage.create({
      data: { ...key, originSnapshotId },
      select: { id: true, state: true, originSnapshotId: true, retiredReason: true },
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new RetryTransaction("lineage created concurrently");
    throw error;
  }
}

const lineageViewSelect = {
  id: true,
  workContextId: true,
  backendKind: true,
  baseImage: true,
  state: true,
  retiredReason: true,
  retiredAt: true,
  createdAt: true,
  originSnapshotId: true,
  forkedFromId: true,
  forkReason: true,
  repository: { select: { id: true, identity: true, name: true } },
  checkpoints: { where: { state: "ready" }, select: snapshotRefSelect, take: 1 },
  // Fence losers never were part of the chain.
  _count: { select: { checkpoints: { where: { failedAt: null } } } },
} satisfies Prisma.LineageSelect;

type LineageViewRow = Prisma.LineageGetPayload<{ select: typeof lineageViewSelect }>;

function toLineageView(row: LineageViewRow): LineageView {
  const head = row.checkpoints[0];
  return {
    id: row.id,
    workContextId: row.workContextId,
    repository: row.repository,
    backendKind: row.backendKind,
    baseImage: row.baseImage,
    state: row.state === "retired" ? "retired" : "active",
    retiredReason: row.retiredReason ? lineageRetireReasonSchema.parse(row.retiredReason) : null,
    retiredAt: row.retiredAt,
    createdAt: row.createdAt,
    originSnapshotId: row.originSnapshotId,
    forkedFromId: row.forkedFromId,
    forkReason: row.forkReason,
    head: head ? toSnapshotRef(head) : null,
    checkpointCount: row._count.checkpoints,
  };
}

function lineageNotFound(lineageId: string): StrataError {
  return new StrataError("NOT_FOUND", `Lineage ${lineageId} was not found.`);
}

export const getLineageInput = z.strictObject({ lineageId: entityIdSchema });
export type GetLineageInput = z.input<typeof getLineageInput>;

/** One lineage of the calling agent with its ready head. Another agent's lineage is NOT_FOUND. */
export async function getLineage(db: Db, opts: GetLineageInput & { agent: AgentScope }): Promise<LineageView> {
  const { lineageId } = getLineageInput.parse(clientFields(opts, "agent"));
  const row = await db.lineage.findFirst({
    where: { id: lineageId, agentId: opts.agent.agentId },
    select: lineageViewSelect,
  });
  if (!row) throw lineageNotFound(lineageId);
  return toLineageView(row);
}

export const listLineagesInput = z.strictObject({
  cursor: z.string().max(200).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(200).default(50),
  repositoryIdentity: z.string().trim().min(1).max(500).optional(),
  workContextId: workContextIdSchema.optional(),
  includeRetired: z.boolean().default(false),
});
export type ListLineagesInput = z.input<typeof listLineagesInput>;

/** The calling agent's lineages, newest first (ties by id), retired ones only when asked. */
export async function listLineages(
  db: Db,
  opts: ListLineagesInput & { agent: AgentScope },
): Promise<{ items: LineageView[]; nextCursor: string | null }> {
  const input = listLineagesInput.parse(clientFields(opts, "agent"));
  const where: Prisma.LineageWhereInput = {
    agentId: opts.agent.agentId,
    ...(input.repositoryIdentity ? { repository: { identity: input.repositoryIdentity } } : {}),
    ...(input.workContextId ? { workContextId: input.workContextId } : {}),
    ...(input.includeRetired ? {} : { state: "active" }),
  };
  if (input.cursor) {
    const c = decodeCursor(input.cursor);
    where.OR = [{ createdAt: { lt: c.createdAt } }, { createdAt: c.createdAt, id: { gt: c.id } }];
  }
  const rows = await db.lineage.findMany({
    where,
    orderBy: [{ createdAt: "desc" }, { id: "asc" }],
    take: input.limit + 1,
    select: lineageViewSelect,
  });
  const items = rows.slice(0, input.limit);
  const last = items.at(-1);
  return {
    items: items.map(toLineageView),
    nextCursor: rows.length > input.limit && last ? encodeCursor(last.createdAt, last.id) : null,
  };
}

export const retireLineageInput = z.strictObject({
  lineageId: entityIdSchema,
  reason: lineageRetireReasonSchema,
  /** A note for the audit log. */
  note: z.string().trim().max(1000).optional(),
});
export type RetireLineageInput = z.input<typeof retireLineageInput>;

/** Who retires a lineage: the scope decides which reasons they may give. */
export type LineageRetirer =
  { kind: "agent"; agent: AgentScope } | { kind: "user"; user: UserScope } | { kind: "system"; name: string };

/** Which reasons each kind of actor may give: agents end their own work, operators anyone's. */
const REASONS_BY_ACTOR: Record<LineageRetirer["kind"], readonly LineageRetireReason[]> = {
  agent: ["completed", "declined"],
  user: ["operator"],
  system: ["stale", "completed", "declined", "operator"],
};

function auditActor(actor: LineageRetirer): AuditActor {
  if (actor.kind === "agent") return { type: "agent", id: actor.agent.agentId };
  if (actor.kind === "user") return { type: "user", id: actor.user.userId };
  return { type: "system", id: actor.name };
}

/**
 * Ends a lineage: marks it retired and retires its ready checkpoint, so nothing restores it
 * again. Idempotent. Its snapshots are reclaimed later, after the retention window.
 */
export async function retireLineage(
  db: Db,
  opts: RetireLineageInput & { actor: LineageRetirer; now?: Date },
): Promise<RetireLineageResult> {
  const input = retireLineageInput.parse(clientFields(opts, "actor", "now"));
  const { actor } = opts;
  if (!REASONS_BY_ACTOR[actor.kind].includes(input.reason)) {
    throw new StrataError("INVALID_INPUT", `A ${actor.kind} cannot retire a lineage as ${input.reason}.`, {
      hint: `Use one of: ${REASONS_BY_ACTOR[actor.kind].join(", ")}.`,
    });
  }
  return inTransaction(db, async (tx) => {
    const now = opts.now ?? new Date();
    const scoped = actor.kind === "agent" ? { agentId: actor.agent.agentId } : {};
    const found = await tx.lineage.findFirst({ where: { id: input.lineageId, ...scoped }, select: { id: true } });
    if (!found) throw lineageNotFound(input.lineageId);
    const state = await lockLineageRow(tx, found.id);
    if (state === "retired") {
      const row = await tx.lineage.findUniqueOrThrow({ where: { id: found.id }, select: lineageViewSelect });
      return { lineage: toLineageView(row), retiredSnapshotIds: [], alreadyRetired: true };
    }
    const ended = await tx.lineage.updateMany({
      where: { id: found.id, state: "active" },
      data: { state: "retired", retiredReason: input.reason, retiredAt: now },
    });
    if (ended.count !== 1) throw new RetryTransaction("lineage changed during retirement");
    const heads = await tx.snapshot.findMany({
      where: { lineageId: found.id, class: "checkpoint", state: { in: ["ready", "capturing"] } },
      select: { id: true },
    });
    const retiredSnapshotIds = heads.map((h) => h.id);
    if (retiredSnapshotIds.length > 0) {
      await tx.snapshot.updateMany({
        where: { id: { in: retiredSnapshotIds }, state: { in: ["ready", "capturing"] } },
        data: { state: "retired", retiredAt: now, retiredReason: input.reason },
      });
    }
    await recordAuditEvent(tx, {
      actor: auditActor(actor),
      action: "lineage.retire",
      subjectType: "lineage",
      subjectId: found.id,
      reason: input.reason,
      details: { retiredSnapshotIds, ...(input.note ? { note: input.note } : {}) },
      at: now,
    });
    const row = await tx.lineage.findUniqueOrThrow({ where: { id: found.id }, select: lineageViewSelect });
    return { lineage: toLineageView(row), retiredSnapshotIds, alreadyRetired: false };
  });
}
