// Delete is retire. Deleting a snapshot marks it retired: hidden from get/list, its alias kept
// reserved, no new pins. Its heads (and so its content) stay while any pin is active; only
// releaseRetiredHeads, once no active pin remains, removes them, after which collection may
// reclaim what nothing else reaches. Both take the snapshot row FOR UPDATE, so they are
// serialized with new pins (which hold it FOR SHARE) and with each other.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { inTransaction } from "../db/client.ts";
import { RetryTransaction } from "../db/errors.ts";
import { dialectOf } from "../db/dialect.ts";
import { StrataError } from "../domain/errors.ts";
import { recordAuditEvent, type AuditActor } from "../audit/record-audit-event.ts";
import { dbNow } from "../db/sql.ts";
import { lockSnapshots, snapshotsWithHeadsToRelease } from "../db/statements/lineage.ts";

/** States in which a snapshot's heads are released once no pin protects it. */
export const HEAD_RELEASE_STATES = ["retired", "deleting", "deleted"] as const;
const ALREADY_RETIRED = new Set<string>(HEAD_RELEASE_STATES);

/** Why a person retires something; it goes to the audit log. */
export const retirementReasonSchema = z.string().trim().min(3, "say why in a few words").max(500);

export interface RetireSnapshotOptions {
  snapshotId: string;
  /** When set, the snapshot must belong to this agent (otherwise NOT_FOUND). */
  agentId?: string;
  /** Who retires it, as the audit log names them. */
  actor: AuditActor;
  reason?: string;
}

export interface RetireSnapshotResult {
  snapshotId: string;
  state: string;
  retiredAt: Date | null;
  alreadyRetired: boolean;
  /** Active pins that keep the snapshot's heads (and content) for now. */
  activePins: number;
}

/** Retires a snapshot (the public delete). Idempotent; never deletes content itself. */
export async function retireSnapshot(db: Db, opts: RetireSnapshotOptions): Promise<RetireSnapshotResult> {
  return inTransaction(db, async (tx) => {
    const found = await dialectOf(tx).lockRow(tx, "snapshots", opts.snapshotId, "id");
    const row = found
      ? await tx.snapshot.findUnique({
          where: { id: opts.snapshotId },
          select: { state: true, agentId: true, retiredAt: true },
        })
      : null;
    if (!row || (opts.agentId && row.agentId !== opts.agentId)) {
      throw new StrataError("NOT_FOUND", `Snapshot ${opts.snapshotId} was not found.`);
    }
    const now = await dbNow(tx);
    const activePins = await tx.pin.count({
      where: { snapshotId: opts.snapshotId, released: false, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
    });
    if (ALREADY_RETIRED.has(row.state)) {
      return {
        snapshotId: opts.snapshotId,
        state: row.state,
        retiredAt: row.retiredAt,
        alreadyRetired: true,
        activePins,
      };
    }
    const reason = opts.reason ?? "deleted";
    const moved = await tx.snapshot.updateMany({
      where: { id: opts.snapshotId, state: row.state },
      data: { state: "retired", retiredAt: now, retiredReason: reason },
    });
    if (moved.count !== 1) throw new RetryTransaction("snapshot changed state during retirement");
    await recordAuditEvent(tx, {
      at: now,
      actor: opts.actor,
      action: "snapshot.retire",
      subjectType: "snapshot",
      subjectId: opts.snapshotId,
      reason,
      details: { from: row.state, activePins },
    });
    return { snapshotId: opts.snapshotId, state: "retired", retiredAt: now, alreadyRetired: false, activePins };
  });
}

export interface HeadReleaseTally {
  /** Snapshots whose heads were removed in this call. */
  snapshotsReleased: number;
  headsReleased: number;
  /** Snapshots left alone because an active pin still protects them. */
  snapshotsKept: number;
  /** `deleting` snapshots moved to `deleted` (their heads released, no pin left). */
  snapshotsDeleted: number;
}

function emptyHeadTally(): HeadReleaseTally {
  return { snapshotsReleased: 0, headsReleased: 0, snapshotsKept: 0, snapshotsDeleted: 0 };
}

/**
 * Snapshot ids with head-release work after `cursor` (in id order): retired or deleted ones
 * that still have heads, and deleting ones (which end as deleted).
 */
export function headReleaseCandidates(db: Db, cursor: string, limit: number): Promise<string[]> {
  return snapshotsWithHeadsToRelease(db, cursor, limit);
}

/**
 * Inside a transaction: releases the heads of each given snapshot that is retired (or
 * deleting/deleted) and has no active pin, after locking its row. Safe to repeat.
 */
export async function releaseHeadsOf(tx: Db, snapshotIds: readonly string[]): Promise<HeadReleaseTally> {
  const tally = emptyHeadTally();
  const ids = [...new Set(snapshotIds)].sort();
  if (ids.length === 0) return tally;
  // A handful of statements whatever the batch size: on SQLite every statement here is time
  // the database write lock is held against publishers.
  await lockSnapshots(tx, ids);
  const now = await dbNow(tx);
  const retired = await tx.snapshot.findMany({
    where: { id: { in: ids }, state: { in: [...HEAD_RELEASE_STATES] } },
    select: { id: true, state: true },
  });
  if (retired.length === 0) return tally;
  const pinned = new Set(
    (
      await tx.pin.findMany({
        where: {
          snapshotId: { in: retired.map((r) => r.id) },
          released: false,
          OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
        },
        select: { snapshotId: true },
      })
    ).map((p) => p.snapshotId),
  );
  tally.snapshotsKept = retired.filter((r) => pinned.has(r.id)).length;
  const free = retired.filter((r) => !pinned.has(r.id));
  if (free.length === 0) return tally;
  const withHeads = await tx.snapshotHead.groupBy({
    by: ["snapshotId"],
    where: { snapshotId: { in: free.map((r) => r.id) } },
    _count: { _all: true },
  });
  if (withHeads.length > 0) {
    const removed = await tx.snapshotHead.deleteMany({
      where: { snapshotId: { in: withHeads.map((h) => h.snapshotId) } },
    });
    tally.snapshotsReleased = withHeads.length;
    tally.headsReleased = removed.count;
  }
  const deleting = free.filter((r) => r.state === "deleting").map((r) => r.id);
  if (deleting.length > 0) {
    const done = await tx.snapshot.updateMany({
      where: { id: { in: deleting }, state: "deleting" },
      data: { state: "deleted", deletedAt: now },
    });
    tally.snapshotsDeleted = done.count;
  }
  return tally;
}

function addHeadTally(into: HeadReleaseTally, more: HeadReleaseTally): void {
  into.snapshotsReleased += more.snapshotsReleased;
  into.headsReleased += more.headsReleased;
  into.snapshotsKept += more.snapshotsKept;
  into.snapshotsDeleted += more.snapshotsDeleted;
}

/**
 * Removes the heads of retired snapshots that no active pin protects, in small transactions.
 * Safely repeatable: a second call finds nothing to do. Collection runs this first.
 */
export async function releaseRetiredHeads(
  db: Db,
  opts: { batchSize?: number; snapshotIds?: readonly string[] } = {},
): Promise<HeadReleaseTally> {
  const batchSize = opts.batchSize ?? 50;
  const tally = emptyHeadTally();
  if (opts.snapshotIds) {
    for (let i = 0; i < opts.snapshotIds.length; i += batchSize) {
      const ids = opts.snapshotIds.slice(i, i + batchSize);
      addHeadTally(tally, await inTransaction(db, (tx) => releaseHeadsOf(tx, ids)));
    }
    return tally;
  }
  let cursor = "";
  for (;;) {
    const ids = await headReleaseCandidates(db, cursor, batchSize);
    if (ids.length === 0) return tally;
    addHeadTally(tally, await inTransaction(db, (tx) => releaseHeadsOf(tx, ids)));
    cursor = ids.at(-1)!;
  }
}
