// Read models for the dashboard pages. Agents never reach these: they have their own scoped API.
import type { Db } from "../db/client.ts";

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

export async function listRestores(db: Db, opts: { limit?: number } = {}) {
  return db.restore.findMany({
    orderBy: { createdAt: "desc" },
    take: opts.limit ?? 200,
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
}
