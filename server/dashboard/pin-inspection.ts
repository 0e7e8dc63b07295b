// Pins as operators inspect them: active and closed holds with the snapshot each protects,
// and the question GC staff ask most: which pins keep a retired snapshot's content alive?
// Pins have no foreign key to snapshots (a release may come first), so the join is by hand.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { dbNow } from "../db/sql.ts";
import { decodeCursor, encodeCursor } from "../domain/paging.ts";
import { HEAD_RELEASE_STATES } from "../lineage/retirement.ts";
import { pageDirectionSchema } from "../domain/paging.ts";
import { withHolderNames } from "../audit/holder-names.ts";

export const inspectPinsInput = z.strictObject({
  /** active: protecting now; closed: released or expired. */
  status: z.enum(["all", "active", "closed"]).default("all"),
  /** Only active pins on retired (or deleting) snapshots: what keeps retired content from GC. */
  keepingRetired: z.boolean().default(false),
  snapshotId: z.string().trim().min(1).max(200).optional(),
  /** The nextCursor of the previous page (newest first). */
  cursor: z.string().max(400).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(500).default(100),
});
export type InspectPinsInput = z.input<typeof inspectPinsInput>;

function activeWhere(now: Date): Prisma.PinWhereInput {
  return { released: false, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
}

export async function inspectPins(db: Db, input: InspectPinsInput = {}) {
  const opts = inspectPinsInput.parse(input);
  const now = await dbNow(db);
  const where: Prisma.PinWhereInput[] = [];
  if (opts.snapshotId) where.push({ snapshotId: opts.snapshotId });
  if (opts.status === "active" || opts.keepingRetired) where.push(activeWhere(now));
  if (opts.status === "closed") where.push({ NOT: activeWhere(now) });
  // The totals head the first page only; later pages skip them and, unless they filter by it,
  // the scan for retired snapshots that active pins still hold.
  const firstPage = !opts.cursor;
  const retiredPinned = opts.keepingRetired || firstPage ? await retiredPinnedSnapshots(db, now) : [];
  if (opts.keepingRetired) where.push({ snapshotId: { in: retiredPinned } });
  if (opts.cursor) {
    // Pin ids are per agent: ties on the time are broken by (agent, pin id).
    const after = decodeCursor(opts.cursor);
    const bar = after.id.indexOf("|");
    const agentId = after.id.slice(0, Math.max(bar, 0));
    const pinId = after.id.slice(bar + 1);
    where.push({
      OR: [
        { createdAt: { lt: after.createdAt } },
        { createdAt: after.createdAt, agentId: { gt: agentId } },
        { createdAt: after.createdAt, agentId, pinId: { gt: pinId } },
      ],
    });
  }
  const rows = await db.pin.findMany({
    where: { AND: where },
    orderBy: [{ createdAt: "desc" }, { agentId: "asc" }, { pinId: "asc" }],
    take: opts.limit + 1,
  });
  const pins = rows.slice(0, opts.limit);
  const last = pins.at(-1);
  const nextCursor =
    rows.length > opts.limit && last ? encodeCursor(last.createdAt, `${last.agentId}|${last.pinId}`) : null;
  const snapshots = await db.snapshot.findMany({
    where: { id: { in: [...new Set(pins.map((p) => p.snapshotId))] } },
    select: {
      id: true,
      alias: true,
      class: true,
      state: true,
      workContextId: true,
      canonicalRef: true,
      sizeBytes: true,
      repository: { select: { id: true, name: true } },
      agent: { select: { name: true } },
    },
  });
  const byId = new Map(snapshots.map((s) => [s.id, { ...s, sizeBytes: Number(s.sizeBytes) }]));
  const [activeCount, keepingRetiredCount] = firstPage
    ? await Promise.all([
        db.pin.count({ where: activeWhere(now) }),
        retiredPinned.length === 0
          ? 0
          : db.pin.count({ where: { AND: [activeWhere(now), { snapshotId: { in: retiredPinned } }] } }),
      ])
    : [null, null];
  return {
    now,
    pins: (await withHolderNames(db, pins)).map((p) => {
      const active = !p.released && (p.expiresAt === null || p.expiresAt > now);
      const snapshot = byId.get(p.snapshotId) ?? null;
      return {
        ...p,
        active,
        /** released, expired (no release recorded yet), or active. */
        status: p.released ? "released" : active ? "active" : "expired",
        snapshot,
        keepsRetired:
          active && snapshot !== null && (HEAD_RELEASE_STATES as readonly string[]).includes(snapshot.state),
      };
    }),
    /** Active pins in all (first page only). */
    activeCount,
    /** Active pins on retired snapshots (first page only). */
    keepingRetiredCount,
    nextCursor,
  };
}

/** Retired (or deleting) snapshots that an active pin still protects. */
async function retiredPinnedSnapshots(db: Db, now: Date): Promise<string[]> {
  const pinned = await db.pin.findMany({
    where: activeWhere(now),
    distinct: ["snapshotId"],
    select: { snapshotId: true },
  });
  if (pinned.length === 0) return [];
  const retired = await db.snapshot.findMany({
    where: { id: { in: pinned.map((p) => p.snapshotId) }, state: { in: [...HEAD_RELEASE_STATES] } },
    select: { id: true },
  });
  return retired.map((s) => s.id);
}
