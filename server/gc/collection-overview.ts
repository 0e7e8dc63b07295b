// The garbage-collection page: recent runs, layers pending deletion (marked by a run, or no
// longer reachable from any head and so taken by the next run), and the space retired
// snapshots hold (kept by pins, or released at the next collection). Admins run one now.
import type { Db } from "../db/client.ts";
import type { UserScope } from "../domain/scope.ts";
import { dbNow, toNumber } from "../db/sql.ts";
import { layersPendingDeletion, unreachableLayerTotals } from "../db/statements/gc.ts";
import { collectAndAudit } from "./audited-collection.ts";
import { listCollectionRuns, type CollectResult } from "./collect-garbage.ts";
import { HEAD_RELEASE_STATES } from "../lineage/retirement.ts";

const PENDING_SHOWN = 50;

export async function collectionOverview(db: Db) {
  const now = await dbNow(db);
  const [runs, byState, unreachable, pending, retired, pinned] = await Promise.all([
    listCollectionRuns(db, { limit: 50 }),
    db.layer.groupBy({ by: ["state"], _count: { _all: true }, _sum: { sizeBytes: true } }),
    unreachableLayerTotals(db),
    // Shown by the uuid its agent declared (the row key is the catalog's own).
    layersPendingDeletion(db, PENDING_SHOWN),
    db.snapshot.findMany({
      where: { state: { in: [...HEAD_RELEASE_STATES] } },
      select: { id: true, state: true, sizeBytes: true },
    }),
    db.pin.findMany({
      where: { released: false, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
      distinct: ["snapshotId"],
      select: { snapshotId: true },
    }),
  ]);
  const live = retired.filter((s) => s.state !== "deleted").map((s) => s.id);
  const withHeads =
    live.length === 0
      ? []
      : await db.snapshotHead.findMany({
          where: { snapshotId: { in: live } },
          distinct: ["snapshotId"],
          select: { snapshotId: true },
        });
  const pinnedIds = new Set(pinned.map((p) => p.snapshotId));
  const headIds = new Set(withHeads.map((h) => h.snapshotId));
  const tally = () => ({ snapshots: 0, bytes: 0 });
  const held = { keptByPins: tally(), releasedNextRun: tally(), alreadyReleased: tally() };
  for (const s of retired) {
    if (s.state === "deleted") continue;
    const bucket = !headIds.has(s.id)
      ? held.alreadyReleased
      : pinnedIds.has(s.id)
        ? held.keptByPins
        : held.releasedNextRun;
    bucket.snapshots += 1;
    bucket.bytes += Number(s.sizeBytes);
  }
  // Runs started from the dashboard name their user; show who that is.
  const starters = runs.map((r) => r.host?.match(/^dashboard:(.+)$/)?.[1]).filter((u): u is string => Boolean(u));
  const emails = new Map(
    (await db.user.findMany({ where: { id: { in: starters } }, select: { id: true, email: true } })).map((u) => [
      u.id,
      u.email,
    ]),
  );
  return {
    now,
    runs: runs.map((r) => {
      const userId = r.host?.match(/^dashboard:(.+)$/)?.[1];
      return { ...r, startedBy: userId ? `${emails.get(userId) ?? userId} (dashboard)` : (r.host ?? null) };
    }),
    layersByState: byState.map((l) => ({ state: l.state, count: l._count._all, bytes: toNumber(l._sum.sizeBytes) })),
    pendingDeletion: {
      marked: byState.find((l) => l.state === "deleting")?._count._all ?? 0,
      unreachable: unreachable.count,
      unreachableBytes: unreachable.bytes,
      layers: pending,
    },
    retiredHeld: held,
  };
}

/** An admin's "collect now": a forced run (never beside a running one), in the audit log. */
export async function runCollectionNow(db: Db, opts: { user: UserScope }): Promise<CollectResult> {
  return collectAndAudit(db, {
    force: true,
    host: `dashboard:${opts.user.userId}`,
    actor: { type: "user", id: opts.user.userId },
    reason: "run from the dashboard",
  });
}
