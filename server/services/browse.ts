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

export async function listPins(db: Db, opts: { active?: boolean; limit?: number } = {}) {
  return db.pin.findMany({
    where: opts.active === undefined ? {} : { released: !opts.active },
    orderBy: { createdAt: "desc" },
    take: opts.limit ?? 200,
  });
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

export async function collectionOverview(db: Db) {
  const [runs, layers, retired] = await Promise.all([
    db.collectionRun.findMany({ orderBy: { startedAt: "desc" }, take: 50 }),
    db.layer.groupBy({ by: ["state"], _count: { _all: true }, _sum: { sizeBytes: true } }),
    db.snapshot.aggregate({ where: { state: "retired" }, _count: { _all: true }, _sum: { sizeBytes: true } }),
  ]);
  return {
    runs,
    layersByState: layers.map((l) => ({ state: l.state, count: l._count._all, bytes: l._sum.sizeBytes ?? 0n })),
    retiredSnapshots: retired._count._all,
    retiredBytes: retired._sum.sizeBytes ?? 0n,
  };
}
