// Read models for the dashboard pages. Agents never reach these: they have their own scoped API.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { decodeCursor, encodeCursor, pageDirectionSchema } from "../domain/paging.ts";

export async function listRepositories(db: Db) {
  const repositories = await db.repository.findMany({
    orderBy: { name: "asc" },
    select: {
      id: true,
      name: true,
      identity: true,
      createdAt: true,
      _count: { select: { snapshots: true, lineages: true, restores: true } },
    },
  });
  const ready = await db.snapshot.groupBy({
    by: ["repositoryId", "class"],
    where: { state: "ready" },
    _count: { _all: true },
  });
  return repositories.map((r) => ({
    ...r,
    readyBaselines: ready.find((g) => g.repositoryId === r.id && g.class === "baseline")?._count._all ?? 0,
    readyCheckpoints: ready.find((g) => g.repositoryId === r.id && g.class === "checkpoint")?._count._all ?? 0,
  }));
}

export const listRestoresInput = z.strictObject({
  /** The nextCursor of the previous page (newest first). */
  cursor: z.string().max(400).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(500).default(100),
});
export type ListRestoresInput = z.input<typeof listRestoresInput>;

/** Restores newest first, a page at a time (ties on the time broken by id). */
export async function listRestores(db: Db, input: ListRestoresInput = {}) {
  const opts = listRestoresInput.parse(input);
  const after = opts.cursor ? decodeCursor(opts.cursor) : null;
  const rows = await db.restore.findMany({
    where: after
      ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { gt: after.id } }] }
      : {},
    orderBy: [{ createdAt: "desc" }, { id: "asc" }],
    take: opts.limit + 1,
    select: {
      id: true,
      rung: true,
      outcome: true,
      workspace: true,
      host: true,
      snapshotId: true,
      workContextId: true,
      createdAt: true,
      reportedAt: true,
      discardedAt: true,
      repository: { select: { name: true } },
      agent: { select: { name: true } },
    },
  });
  const items = rows.slice(0, opts.limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > opts.limit && last ? encodeCursor(last.createdAt, last.id) : null };
}
