// A partly restored worktree keeps the original snapshot as its checkout's restore target until
// a later restore of it succeeds fully, support discards the partial restore, or its 30-day pin
// runs out. These are the catalog's rules for that, shared by append and acquire.
import type { Db } from "../db/client.ts";
import { releasePin } from "../content/pins.ts";

/** The active pin of a degraded, undiscarded restore of `snapshotId`, if any. */
async function heldDegradedRestores(db: Db, agentId: string, snapshotId: string, now: Date) {
  const restores = await db.restore.findMany({
    where: { agentId, snapshotId, outcome: "degraded", discardedAt: null, pinId: { not: null } },
    select: { id: true, pinId: true },
  });
  if (restores.length === 0) return [];
  const pins = await db.pin.findMany({
    where: {
      agentId,
      pinId: { in: restores.map((r) => r.pinId!) },
      released: false,
      OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
    },
    select: { pinId: true },
  });
  const active = new Set(pins.map((p) => p.pinId));
  return restores.filter((r) => active.has(r.pinId!));
}

/** Whether `snapshotId` is still the restore target of a partly restored worktree. */
export async function isHeldDegradedOriginal(db: Db, agentId: string, snapshotId: string, now: Date): Promise<boolean> {
  return (await heldDegradedRestores(db, agentId, snapshotId, now)).length > 0;
}

/** A full restore of the original ends the partial restores' holds on it. */
export async function releaseDegradedHolds(db: Db, agentId: string, snapshotId: string, now: Date): Promise<number> {
  const held = await heldDegradedRestores(db, agentId, snapshotId, now);
  for (const restore of held) await releasePin(db, { snapshotId, pinId: restore.pinId!, agentId });
  return held.length;
}
