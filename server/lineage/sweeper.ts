// The lineage sweeper. It retires checkpoint heads that were neither captured nor restored
// within the staleness window (and their lineages), and hands superseded, retired and failed
// snapshots past the retention window to garbage collection by moving them to `deleting`; the
// artifacts of deleted snapshots are then deleted through the backend that minted them.
// The clock and the windows are passed in, so tests (and operators) control them.
//
// A fork (fork-checkpoint.ts) counts as a use of the checkpoint it was forked from: while an
// active fork made within the staleness window has no checkpoint of its own, that checkpoint is
// neither retired as stale nor, once superseded, handed to collection. It is what the fork's
// acquires restore; each acquire's restore pin protects it only from then on.
import { inTransaction, type Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import {
  DEFAULT_SWEEP_SETTINGS,
  RETENTION_CLOCKS,
  retentionCutoff,
  staleCutoff,
  type SweepSettings,
} from "../domain/retention.ts";
import { recordAuditEvent } from "../audit/record-audit-event.ts";
import { errorFields, logger } from "../log/logger.ts";
import { measure } from "../log/measures.ts";
import { lockLineageRow } from "./lineages.ts";
import { reclaimArtifacts, type ReclaimResult } from "./reclaim-artifacts.ts";

export interface SweepOptions {
  now: Date;
  settings?: Partial<SweepSettings>;
  /** Rows handled per transaction. */
  batchSize?: number;
}

export interface SweepResult {
  /** Checkpoint heads retired as stale. */
  staleCheckpointIds: string[];
  /** Lineages retired (reason `stale`) along with their heads. */
  staleLineageIds: string[];
  /** Snapshots moved to `deleting`, by the state they left. */
  movedToDeleting: Record<keyof typeof RETENTION_CLOCKS, number>;
  /** Past retention, but an active pin still protects them; the next sweep looks again. */
  keptForPins: number;
  /** Artifacts of deleted snapshots deleted through the backend that minted them. */
  reclaimed: ReclaimResult;
}

/** No active fork made at or after `since` still waits to start from the snapshot. */
function noForkWaiting(since: Date): Prisma.SnapshotWhereInput {
  return {
    forks: { none: { state: "active", createdAt: { gte: since }, checkpoints: { none: { failedAt: null } } } },
  };
}

function staleHeadWhere(cutoff: Date): Prisma.SnapshotWhereInput {
  return {
    class: "checkpoint",
    state: "ready",
    readyAt: { lt: cutoff },
    OR: [{ lastRestoredAt: null }, { lastRestoredAt: { lt: cutoff } }],
    ...noForkWaiting(cutoff),
  };
}

export async function sweepSnapshots(db: Db, opts: SweepOptions): Promise<SweepResult> {
  const clock = performance.now();
  const took = () => (performance.now() - clock) / 1000;
  try {
    const result = await sweep(db, opts);
    const seconds = took();
    logger().info(
      {
        staleCheckpoints: result.staleCheckpointIds.length,
        staleLineages: result.staleLineageIds.length,
        movedToDeleting: result.movedToDeleting,
        keptForPins: result.keptForPins,
        reclaimed: {
          deleted: result.reclaimed.deleted,
          failed: result.reclaimed.failed.length,
          shared: result.reclaimed.shared,
        },
        durationMs: Math.round(seconds * 10_000) / 10,
      },
      "sweep run",
    );
    measure({ type: "run", run: "sweep", outcome: "finished", seconds });
    return result;
  } catch (error) {
    const seconds = took();
    const err = errorFields(error);
    logger().error({ err, durationMs: Math.round(seconds * 10_000) / 10 }, "sweep run");
    measure({ type: "run", run: "sweep", outcome: err.code, seconds });
    throw error;
  }
}

async function sweep(db: Db, opts: SweepOptions): Promise<SweepResult> {
  const settings = { ...DEFAULT_SWEEP_SETTINGS, ...opts.settings };
  const batchSize = opts.batchSize ?? 100;
  const now = opts.now;
  const result: SweepResult = {
    staleCheckpointIds: [],
    staleLineageIds: [],
    movedToDeleting: { superseded: 0, retired: 0, failed: 0 },
    keptForPins: 0,
    reclaimed: { deleted: 0, failed: [], shared: 0 },
  };

  const stale = staleCutoff(now, settings);
  for (let after: string | undefined; ;) {
    const heads = await db.snapshot.findMany({
      where: { ...staleHeadWhere(stale), ...(after ? { id: { gt: after } } : {}) },
      orderBy: { id: "asc" },
      take: batchSize,
      select: { id: true, lineageId: true },
    });
    for (const head of heads) {
      const retired = await inTransaction(db, (tx) => retireStaleHead(tx, { ...head, now, cutoff: stale }));
      if (retired.headRetired) result.staleCheckpointIds.push(head.id);
      if (retired.lineageRetired && head.lineageId) result.staleLineageIds.push(head.lineageId);
    }
    if (heads.length < batchSize) break;
    after = heads.at(-1)?.id;
  }

  const retention = retentionCutoff(now, settings);
  for (const [state, clock] of Object.entries(RETENTION_CLOCKS) as [keyof typeof RETENTION_CLOCKS, string][]) {
    // A superseded checkpoint still seeds the forks made from it while it was ready.
    const due: Prisma.SnapshotWhereInput = {
      state,
      [clock]: { lt: retention },
      ...(state === "superseded" ? noForkWaiting(stale) : {}),
    };
    for (let after: string | undefined; ;) {
      const rows = await db.snapshot.findMany({
        where: { ...due, ...(after ? { id: { gt: after } } : {}) },
        orderBy: { id: "asc" },
        take: batchSize,
        select: { id: true },
      });
      if (rows.length === 0) break;
      const ids = rows.map((r) => r.id);
      const moved = await inTransaction(db, async (tx) => {
        // Lock first, so a pin cannot slip in between the check and the move.
        for (const id of ids) await dialectOf(tx).lockRow(tx, "snapshots", id, "id");
        const pinned = await tx.pin.findMany({
          // An expired pin protects nothing any more (the same rule the pins service applies).
          where: {
            snapshotId: { in: ids },
            released: false,
            OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
          },
          select: { snapshotId: true },
          distinct: ["snapshotId"],
        });
        const pinnedIds = new Set(pinned.map((p) => p.snapshotId));
        const free = ids.filter((id) => !pinnedIds.has(id));
        const updated = await tx.snapshot.updateMany({
          where: { ...due, id: { in: free } },
          data: { state: "deleting", deletingAt: now },
        });
        return { count: updated.count, kept: pinnedIds.size };
      });
      result.movedToDeleting[state] += moved.count;
      result.keptForPins += moved.kept;
      if (rows.length < batchSize) break;
      after = ids.at(-1);
    }
  }
  result.reclaimed = await reclaimArtifacts(db, { now, batchSize });
  return result;
}

async function retireStaleHead(
  tx: Db,
  head: { id: string; lineageId: string | null; now: Date; cutoff: Date },
): Promise<{ headRetired: boolean; lineageRetired: boolean }> {
  // Lineage first (the order appends and retirements use), then the head, re-checked.
  const lineageState = head.lineageId ? await lockLineageRow(tx, head.lineageId) : null;
  const retired = await tx.snapshot.updateMany({
    where: { id: head.id, ...staleHeadWhere(head.cutoff) },
    data: { state: "retired", retiredAt: head.now, retiredReason: "stale" },
  });
  if (retired.count !== 1) return { headRetired: false, lineageRetired: false };
  let lineageRetired = false;
  if (head.lineageId && lineageState === "active") {
    const ended = await tx.lineage.updateMany({
      where: { id: head.lineageId, state: "active" },
      data: { state: "retired", retiredReason: "stale", retiredAt: head.now },
    });
    lineageRetired = ended.count === 1;
  }
  await recordAuditEvent(tx, {
    actor: { type: "system", id: "sweeper" },
    action: "lineage.retire",
    subjectType: "lineage",
    subjectId: head.lineageId ?? head.id,
    reason: "stale",
    details: { retiredSnapshotIds: [head.id], lineageRetired },
    at: head.now,
  });
  return { headRetired: true, lineageRetired };
}
