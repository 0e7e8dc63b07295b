// Read models for the dashboard pages. Agents never reach these: they have their own scoped API.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { decodeCursor, encodeCursor, pageDirectionSchema } from "../domain/paging.ts";
import { StrataError } from "../domain/errors.ts";

export const listRepositoriesInput = z.strictObject({
  /** The nextCursor of the previous page (by name). */
  cursor: z.string().max(1200).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(500).default(100),
});
export type ListRepositoriesInput = z.input<typeof listRepositoriesInput>;

/** A repositories page cursor: the last row's name and id (the list is by name). */
function repositoryCursor(name: string, id: string): string {
  return Buffer.from(JSON.stringify([name, id])).toString("base64url");
}

function decodeRepositoryCursor(cursor: string): { name: string; id: string } {
  try {
    const [name, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown[];
    if (typeof name === "string" && typeof id === "string" && id) return { name, id };
  } catch {
    // Not one of ours: refused below.
  }
  throw new StrataError("INVALID_INPUT", "The cursor is not one this API returned.", {
    hint: "Pass the nextCursor of the previous page, or omit it for the first page.",
  });
}

/** Repositories by name, a page at a time, with their snapshot, lineage and restore counts. */
export async function listRepositories(db: Db, input: ListRepositoriesInput = {}) {
  const opts = listRepositoriesInput.parse(input);
  const after = opts.cursor ? decodeRepositoryCursor(opts.cursor) : null;
  const rows = await db.repository.findMany({
    where: after ? { OR: [{ name: { gt: after.name } }, { name: after.name, id: { gt: after.id } }] } : {},
    orderBy: [{ name: "asc" }, { id: "asc" }],
    take: opts.limit + 1,
    select: {
      id: true,
      name: true,
      identity: true,
      createdAt: true,
      _count: { select: { snapshots: true, lineages: true, restores: true } },
    },
  });
  const repositories = rows.slice(0, opts.limit);
  const ready = await db.snapshot.groupBy({
    by: ["repositoryId", "class"],
    where: { state: "ready", repositoryId: { in: repositories.map((r) => r.id) } },
    _count: { _all: true },
  });
  const last = repositories.at(-1);
  return {
    items: repositories.map((r) => ({
      ...r,
      readyBaselines: ready.find((g) => g.repositoryId === r.id && g.class === "baseline")?._count._all ?? 0,
      readyCheckpoints: ready.find((g) => g.repositoryId === r.id && g.class === "checkpoint")?._count._all ?? 0,
    })),
    nextCursor: rows.length > opts.limit && last ? repositoryCursor(last.name, last.id) : null,
  };
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
