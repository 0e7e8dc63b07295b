// The garbage-collection page: recent runs, layers pending deletion (marked by a run, or no
// longer reachable from any head and so taken by the next run), and the space retired
// snapshots hold (kept by pins, or released at the next collection). Admins run one now.
import type { Db } from "../db/client.ts";
import type { UserScope } from "../domain/scope.ts";
import { recordAuditEvent } from "../audit/record-audit-event.ts";
import { dbNow, toNumber } from "../db/sql.ts";
import { collectGarbage, listCollectionRuns, type CollectResult } from "./collect-garbage.ts";
import { HEAD_RELEASE_STATES } from "../lineage/retirement.ts";

const PENDING_SHOWN = 50;

// Every layer some head reaches, by parent links (the same on SQLite and PostgreSQL).
const REACHABLE = `WITH RECURSIVE reach(uuid) AS (
    SELECT layer_uuid FROM snapshot_heads
    UNION
    SELECT l.parent_uuid FROM layers l JOIN reach r ON l.uuid = r.uuid WHERE l.parent_uuid IS NOT NULL
  )`;

interface PendingRow {
  uuid: string;
  kind: string;
  digest: string;
  size_bytes: bigint | number;
  state: string;
  created_at: Date | string | number | bigint;
  deleting_at: Date | string | number | bigint | null;
}

/** Raw timestamps: Date on PostgreSQL; text or epoch milliseconds on SQLite. */
function toDate(value: Date | string | number | bigint): Date {
  if (value instanceof Date) return value;
  return new Date(typeof value === "bigint" ? Number(value) : value);
}

export async function collectionOverview(db: Db) {
  const now = await dbNow(db);
  const [runs, byState, unreachable, pending, retired, pinned] = await Promise.all([
    listCollectionRuns(db, { limit: 50 }),
    db.layer.groupBy({ by: ["state"], _count: { _all: true }, _sum: { sizeBytes: true } }),
    db.$queryRawUnsafe<{ count: bigint | number; bytes: bigint | number | null }[]>(
      `${REACHABLE} SELECT COUNT(*) AS count, SUM(size_bytes) AS bytes FROM layers
        WHERE state = 'available' AND uuid NOT IN (SELECT uuid FROM reach)`,
    ),
    db.$queryRawUnsafe<PendingRow[]>(
      // Shown by the uuid its agent declared (the row key is the catalog's own).
      `${REACHABLE} SELECT l.agent_uuid AS uuid, l.kind, l.digest, l.size_bytes, l.state, l.created_at, l.deleting_at
        FROM layers l WHERE l.state = 'deleting' OR (l.state = 'available' AND l.uuid NOT IN (SELECT uuid FROM reach))
        ORDER BY l.state DESC, l.created_at ASC, l.uuid ASC LIMIT ${PENDING_SHOWN}`,
    ),
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
      unreachable: toNumber(unreachable[0]?.count),
      unreachableBytes: toNumber(unreachable[0]?.bytes),
      layers: pending.map((p) => ({
        uuid: p.uuid,
        kind: p.kind,
        digest: p.digest,
        sizeBytes: toNumber(p.size_bytes),
        state: p.state,
        createdAt: toDate(p.created_at),
        deletingAt: p.deleting_at === null ? null : toDate(p.deleting_at),
      })),
    },
    retiredHeld: held,
  };
}

/** An admin's "collect now": a forced run (never beside a running one), in the audit log. */
export async function runCollectionNow(db: Db, opts: { user: UserScope }): Promise<CollectResult> {
  const result = await collectGarbage(db, { force: true, host: `dashboard:${opts.user.userId}` });
  await recordAuditEvent(db, {
    actor: { type: "user", id: opts.user.userId },
    action: "gc.collect",
    subjectType: "collection",
    subjectId: result.status === "skipped" ? "skipped" : result.runId,
    reason: "run from the dashboard",
    details:
      result.status === "skipped"
        ? { status: result.status, reason: result.reason }
        : { status: result.status, errorCode: result.errorCode, ...result.tally },
  });
  return result;
}
