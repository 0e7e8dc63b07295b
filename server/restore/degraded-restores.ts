// Degraded-restore notices: the queue of restores that came back degraded or unrestored, each
// with what the worktree holds, what is missing and the next step; and discarding one.
//
// Discarding gives up on restoring the original exactly. The partly restored worktree, as it
// now is, becomes its checkout's restore target: the restore row records that state (the
// newest capture made in that worktree, else what the worker reported it holds) and is marked
// discarded, so later captures there stop naming the original in degradedFrom; the pin that
// kept the original for collection is released; an audit event says who and why. Idempotent.
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { RetryTransaction } from "../db/errors.ts";
import { dialectOf } from "../db/dialect.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { StrataError } from "../domain/errors.ts";
import { describeRestoreResult } from "../domain/restore-notice.ts";
import { ROLES, roleMay, type UserScope } from "../domain/scope.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";
import { recordAuditEvent } from "../audit/record-audit-event.ts";
import { dbNow } from "../db/sql.ts";
import { isPinActive, releasePin } from "../content/pins.ts";
import { clientFields } from "../domain/client-fields.ts";
import { pageDirectionSchema } from "../domain/paging.ts";

/** Outcomes that put a restore in the queue. */
const NOTICE_OUTCOMES = ["degraded", "unrestored"] as const;
type NoticeOutcome = (typeof NOTICE_OUTCOMES)[number];

export const listDegradedRestoresInput = z.strictObject({
  /** open: still in the queue; discarded: already handled. */
  status: z.enum(["open", "discarded"]).default("open"),
  /**
   * The last item of the previous page: its time in the list's order (createdAt for open,
   * discardedAt for discarded) and its id. The answer stays a plain list; a page shorter than
   * `limit` is the last.
   */
  cursor: z.strictObject({ at: z.date(), id: z.string().min(1).max(200) }).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(500).default(200),
});
export type ListDegradedRestoresInput = z.input<typeof listDegradedRestoresInput>;

const restoreSelect = {
  id: true,
  outcome: true,
  agentId: true,
  rung: true,
  workspace: true,
  host: true,
  workContextId: true,
  lineageId: true,
  snapshotId: true,
  pinId: true,
  result: true,
  errorCode: true,
  createdAt: true,
  reportedAt: true,
  discardedAt: true,
  discardedBy: true,
  discardReason: true,
  agent: { select: { name: true } },
  repository: { select: { id: true, name: true } },
  snapshot: {
    select: { id: true, class: true, state: true, sequence: true, canonicalRef: true, workContextId: true },
  },
} satisfies Prisma.RestoreSelect;
type RestoreRow = Prisma.RestoreGetPayload<{ select: typeof restoreSelect }>;

function outcomeOf(row: { outcome: string }): NoticeOutcome {
  return row.outcome === "unrestored" ? "unrestored" : "degraded";
}

export async function listDegradedRestores(db: Db, input: ListDegradedRestoresInput = {}) {
  const opts = listDegradedRestoresInput.parse(input);
  const after = opts.cursor;
  // Open notices oldest first (the queue), discarded ones newest first; ties broken by id.
  const afterCursor: Prisma.RestoreWhereInput = !after
    ? {}
    : opts.status === "open"
      ? { OR: [{ createdAt: { gt: after.at } }, { createdAt: after.at, id: { gt: after.id } }] }
      : { OR: [{ discardedAt: { lt: after.at } }, { discardedAt: after.at, id: { gt: after.id } }] };
  const rows = await db.restore.findMany({
    where: {
      outcome: { in: [...NOTICE_OUTCOMES] },
      discardedAt: opts.status === "open" ? null : { not: null },
      ...afterCursor,
    },
    orderBy: opts.status === "open" ? [{ createdAt: "asc" }, { id: "asc" }] : [{ discardedAt: "desc" }, { id: "asc" }],
    take: opts.limit,
    select: restoreSelect,
  });
  const [pins, users, now] = await Promise.all([
    // A restore's pin is its agent's (pin ids are per agent).
    db.pin.findMany({
      where: {
        OR: rows.flatMap((r) => (r.pinId === null ? [] : [{ agentId: r.agentId, pinId: r.pinId }])),
      },
    }),
    db.user.findMany({
      where: { id: { in: rows.map((r) => r.discardedBy).filter((u): u is string => u !== null) } },
      select: { id: true, email: true },
    }),
    dbNow(db),
  ]);
  const pinByKey = new Map(pins.map((p) => [`${p.agentId} ${p.pinId}`, p]));
  const emailById = new Map(users.map((u) => [u.id, u.email]));
  return rows.map((row) => {
    const pin = row.pinId ? pinByKey.get(`${row.agentId} ${row.pinId}`) : undefined;
    const { result: _result, agentId: _agentId, ...rest } = row;
    return {
      ...rest,
      notice: describeRestoreResult({ outcome: outcomeOf(row), result: row.result, errorCode: row.errorCode }),
      restoreTarget: restoreTargetOf(row.result),
      pin: pin
        ? { pinId: pin.pinId, active: isPinActive(pin, now), expiresAt: pin.expiresAt, releasedAt: pin.releasedAt }
        : null,
      discardedByEmail: row.discardedBy ? (emailById.get(row.discardedBy) ?? row.discardedBy) : null,
    };
  });
}

/** The state a discard made the checkout's restore target (kept on the restore's result). */
export interface RestoreTarget {
  workspace: string;
  host: string;
  /** The newest capture of the partly restored worktree, when one was recorded. */
  snapshotId: string | null;
  head: string | null;
  tree: string | null;
  stage: string | null;
  basis: string | null;
  recordedAt: string;
}

function restoreTargetOf(result: Prisma.JsonValue | null): RestoreTarget | null {
  const target = (result as { restoreTarget?: RestoreTarget } | null)?.restoreTarget;
  return target && typeof target === "object" ? target : null;
}

export const discardDegradedInput = z.strictObject({
  restoreId: entityIdSchema,
  reason: z.string().trim().min(3, "say why in a few words").max(1000),
});
export type DiscardDegradedInput = z.input<typeof discardDegradedInput>;

export interface DiscardDegradedResult {
  restoreId: string;
  alreadyDiscarded: boolean;
  discardedAt: Date;
  /** The pin that protected the original snapshot, now released (null when there was none). */
  releasedPinId: string | null;
  restoreTarget: RestoreTarget | null;
}

async function lockRestoreRow(tx: Db, restoreId: string): Promise<void> {
  await dialectOf(tx).lockRow(tx, "restores", restoreId, "id");
}

function asObject(value: Prisma.JsonValue | null): Record<string, Prisma.JsonValue> {
  if (value && typeof value === "object" && !Array.isArray(value)) return value as Record<string, Prisma.JsonValue>;
  return value === null ? {} : { reported: value };
}

/** restore.discardDegraded: support (or admin) gives up on a degraded or unrestored restore. */
export async function discardDegraded(
  db: Db,
  opts: DiscardDegradedInput & { user: UserScope },
): Promise<DiscardDegradedResult> {
  const input = discardDegradedInput.parse(clientFields(opts, "user"));
  if (!roleMay(opts.user.role, "discard")) {
    throw new StrataError("FORBIDDEN", `Discarding a degraded restore needs the ${ROLES.discard.join(" or ")} role.`);
  }
  return inTransaction(db, async (tx) => {
    await lockRestoreRow(tx, input.restoreId);
    const row: RestoreRow | null = await tx.restore.findUnique({
      where: { id: input.restoreId },
      select: restoreSelect,
    });
    if (!row) throw new StrataError("NOT_FOUND", `Restore ${input.restoreId} was not found.`);
    if (!(NOTICE_OUTCOMES as readonly string[]).includes(row.outcome)) {
      throw new StrataError(
        "CONFLICT",
        `Restore ${row.id} is ${row.outcome}; only degraded or unrestored restores are discarded.`,
        {
          data: { outcome: row.outcome },
        },
      );
    }
    if (row.discardedAt) {
      return {
        restoreId: row.id,
        alreadyDiscarded: true,
        discardedAt: row.discardedAt,
        releasedPinId: row.pinId,
        restoreTarget: restoreTargetOf(row.result),
      };
    }
    const now = await dbNow(tx);
    const notice = describeRestoreResult({ outcome: outcomeOf(row), result: row.result, errorCode: row.errorCode });
    // What the worktree holds now: its newest capture since the partial restore, if any.
    const latest = row.snapshotId
      ? await tx.snapshot.findFirst({
          where: {
            degradedFromId: row.snapshotId,
            sourceWorkspace: row.workspace,
            failedAt: null,
            ...(row.lineageId ? { lineageId: row.lineageId } : {}),
          },
          orderBy: [{ createdAt: "desc" }, { id: "asc" }],
          select: { id: true, headCommit: true, treeId: true },
        })
      : null;
    const restoreTarget: RestoreTarget = {
      workspace: row.workspace,
      host: row.host,
      snapshotId: latest?.id ?? null,
      head: latest?.headCommit ?? notice.holds.head,
      tree: latest?.treeId ?? notice.holds.tree,
      stage: notice.holds.stage,
      basis: notice.holds.basis,
      recordedAt: now.toISOString(),
    };
    const marked = await tx.restore.updateMany({
      where: { id: row.id, discardedAt: null },
      data: {
        discardedAt: now,
        discardedBy: opts.user.userId,
        discardReason: input.reason,
        result: { ...asObject(row.result), restoreTarget: { ...restoreTarget } },
      },
    });
    if (marked.count !== 1) throw new RetryTransaction("restore discarded concurrently");
    if (row.pinId && row.snapshotId) {
      await releasePin(tx, { snapshotId: row.snapshotId, pinId: row.pinId, agentId: row.agentId });
    }
    await recordAuditEvent(tx, {
      actor: { type: "user", id: opts.user.userId },
      action: "restore.discardDegraded",
      subjectType: "restore",
      subjectId: row.id,
      reason: input.reason,
      details: {
        outcome: row.outcome,
        snapshotId: row.snapshotId,
        releasedPinId: row.pinId,
        restoreTarget: { ...restoreTarget },
      },
      at: now,
    });
    return { restoreId: row.id, alreadyDiscarded: false, discardedAt: now, releasedPinId: row.pinId, restoreTarget };
  });
}
