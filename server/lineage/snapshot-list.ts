// Snapshot listing with a stable cursor: newest first, ties broken by id ascending.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { decodeCursor, encodeCursor, pageDirectionSchema } from "../domain/paging.ts";

export const snapshotListInput = z.strictObject({
  cursor: z.string().max(200).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(200).default(50),
  repositoryId: z.string().uuid().optional(),
  includeRetired: z.boolean().default(false),
});
export type SnapshotListInput = z.input<typeof snapshotListInput>;

/** States that get and list hide unless asked: a retired snapshot is gone for new work. */
export const HIDDEN_STATES = ["retired", "deleting", "deleted"];

const snapshotSummarySelect = {
  id: true,
  alias: true,
  class: true,
  state: true,
  agentId: true,
  repositoryId: true,
  backendKind: true,
  baseImage: true,
  canonicalRef: true,
  canonicalCommit: true,
  workContextId: true,
  lineageId: true,
  sequence: true,
  predecessorId: true,
  headCommit: true,
  treeId: true,
  branch: true,
  sizeBytes: true,
  createdAt: true,
  retiredAt: true,
  repository: { select: { name: true, identity: true } },
  agent: { select: { name: true } },
} satisfies Prisma.SnapshotSelect;

export type SnapshotSummary = Prisma.SnapshotGetPayload<{ select: typeof snapshotSummarySelect }>;

/** Lists snapshots, optionally only those of one agent (the agent API passes its own id). */
export async function listSnapshots(
  db: Db,
  input: SnapshotListInput,
  scope: { agentId?: string } = {},
): Promise<{ items: SnapshotSummary[]; nextCursor: string | null }> {
  const opts = snapshotListInput.parse(input);
  const where: Prisma.SnapshotWhereInput = {
    ...(scope.agentId ? { agentId: scope.agentId } : {}),
    ...(opts.repositoryId ? { repositoryId: opts.repositoryId } : {}),
    ...(opts.includeRetired ? {} : { state: { notIn: HIDDEN_STATES } }),
  };
  if (opts.cursor) {
    const c = decodeCursor(opts.cursor);
    where.OR = [{ createdAt: { lt: c.createdAt } }, { createdAt: c.createdAt, id: { gt: c.id } }];
  }
  const rows = await db.snapshot.findMany({
    where,
    orderBy: [{ createdAt: "desc" }, { id: "asc" }],
    take: opts.limit + 1,
    select: snapshotSummarySelect,
  });
  const items = rows.slice(0, opts.limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > opts.limit && last ? encodeCursor(last.createdAt, last.id) : null };
}
