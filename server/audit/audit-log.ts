// The audit log as people read it: who (a user's email, an agent's name, or the system), what
// (the action and its subject), when, and why (a person's own words where they gave some);
// newest first, with a stable cursor.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { decodeCursor, encodeCursor } from "../domain/paging.ts";
import { pageDirectionSchema } from "../domain/paging.ts";

export const listAuditEventsInput = z.strictObject({
  cursor: z.string().max(200).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(200).default(50),
  action: z.string().trim().min(1).max(100).optional(),
  actorType: z.enum(["user", "agent", "system"]).optional(),
  subjectType: z.string().trim().min(1).max(50).optional(),
  subjectId: z.string().trim().min(1).max(200).optional(),
});
export type ListAuditEventsInput = z.input<typeof listAuditEventsInput>;

/** Retirement kinds as a sentence, for an event that recorded no words of its own. */
const RETIREMENT_KINDS: Record<string, string> = {
  completed: "the work completed",
  declined: "the work was declined",
  stale: "stale: no checkpoint for the retention period",
  operator: "retired by an operator",
};

/**
 * Why, in the words that belong in the "why" column. A lineage retirement records its kind
 * (completed, declined, stale, operator) as the reason and the person's words as the note: the
 * note is the why, the kind says which sort of retirement it was.
 */
function whyOf(e: { action: string; reason: string | null; details: Prisma.JsonValue }): {
  why: string | null;
  kind: string | null;
} {
  const note =
    e.details && typeof e.details === "object" && !Array.isArray(e.details) && typeof e.details.note === "string"
      ? e.details.note
      : null;
  if (e.action === "lineage.retire") {
    return { why: note ?? (e.reason ? (RETIREMENT_KINDS[e.reason] ?? e.reason) : null), kind: e.reason };
  }
  return { why: e.reason ?? note, kind: null };
}

export async function listAuditEvents(db: Db, input: ListAuditEventsInput = {}) {
  const opts = listAuditEventsInput.parse(input);
  const where: Prisma.AuditEventWhereInput = {
    ...(opts.action ? { action: opts.action } : {}),
    ...(opts.actorType ? { actorType: opts.actorType } : {}),
    ...(opts.subjectType ? { subjectType: opts.subjectType } : {}),
    ...(opts.subjectId ? { subjectId: opts.subjectId } : {}),
  };
  if (opts.cursor) {
    const c = decodeCursor(opts.cursor);
    where.OR = [{ at: { lt: c.createdAt } }, { at: c.createdAt, id: { gt: c.id } }];
  }
  const rows = await db.auditEvent.findMany({
    where,
    orderBy: [{ at: "desc" }, { id: "asc" }],
    take: opts.limit + 1,
  });
  const page = rows.slice(0, opts.limit);
  const ids = (type: string) => [
    ...new Set(page.filter((e) => e.actorType === type && e.actorId).map((e) => e.actorId!)),
  ];
  const subjects = (type: string) => [...new Set(page.filter((e) => e.subjectType === type).map((e) => e.subjectId))];
  const [users, agents, actions, lineages, restores] = await Promise.all([
    db.user.findMany({ where: { id: { in: ids("user") } }, select: { id: true, email: true, role: true } }),
    db.agent.findMany({ where: { id: { in: ids("agent") } }, select: { id: true, name: true } }),
    db.auditEvent.groupBy({ by: ["action"], orderBy: { action: "asc" } }),
    db.lineage.findMany({
      where: { id: { in: subjects("lineage") } },
      select: { id: true, workContextId: true, repository: { select: { id: true, name: true } } },
    }),
    db.restore.findMany({
      where: { id: { in: subjects("restore") } },
      select: { id: true, workContextId: true, repository: { select: { id: true, name: true } } },
    }),
  ]);
  // Where a lineage or restore subject belongs, so a person can tell them apart.
  const context = new Map(
    [...lineages, ...restores].map((r) => [
      r.id,
      { repositoryId: r.repository.id, repositoryName: r.repository.name, workContextId: r.workContextId },
    ]),
  );
  const userById = new Map(users.map((u) => [u.id, u]));
  const agentById = new Map(agents.map((a) => [a.id, a]));
  const last = page.at(-1);
  return {
    items: page.map((e) => {
      const user = e.actorType === "user" && e.actorId ? userById.get(e.actorId) : undefined;
      const agent = e.actorType === "agent" && e.actorId ? agentById.get(e.actorId) : undefined;
      const actor = user
        ? `${user.email} (${user.role})`
        : agent
          ? `agent ${agent.name}`
          : e.actorType === "system"
            ? `system${e.actorId ? ` (${e.actorId})` : ""}`
            : `${e.actorType} ${e.actorId ?? ""}`.trim();
      return { ...e, actor, ...whyOf(e), context: context.get(e.subjectId) ?? null };
    }),
    nextCursor: rows.length > opts.limit && last ? encodeCursor(last.at, last.id) : null,
    actions: actions.map((a) => a.action),
  };
}
