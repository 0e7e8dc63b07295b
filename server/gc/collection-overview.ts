// The garbage-collection page: the worker's schedule, the run log (dry and real runs), layers
// pending deletion (marked by a run, or no longer reachable from any head and so taken by the
// next run), and the space retired snapshots hold (kept by pins, or released at the next
// collection). Admins preview a run (a dry run) and then run it.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { decodeCursor, encodeCursor, pageDirectionSchema } from "../domain/paging.ts";
import type { UserScope } from "../domain/scope.ts";
import { dbNow, toNumber } from "../db/sql.ts";
import { layersPendingDeletion, unreachableLayerTotals } from "../db/statements/gc.ts";
import { collectAndAudit } from "./audited-collection.ts";
import { listCollectionRuns, SCHEDULED_INTERVAL_SHARE, type CollectResult } from "./collect-garbage.ts";
import { HEAD_RELEASE_STATES } from "../lineage/retirement.ts";

const PENDING_SHOWN = 50;

export async function collectionOverview(db: Db, opts: { configuredIntervalSeconds: number }) {
  const now = await dbNow(db);
  const [byState, unreachable, pending, retired, pinned] = await Promise.all([
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
  return {
    now,
    schedule: await collectionSchedule(db, { now, configuredIntervalSeconds: opts.configuredIntervalSeconds }),
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

// --- The worker's schedule --------------------------------------------------------------------

/**
 * When the next scheduled run will happen. Workers offer one collection job per interval slot
 * (server/jobs/maintenance.ts); its run skips when the last real run finished less than
 * SCHEDULED_INTERVAL_SHARE of the interval before, and the next slot runs it then.
 */
export async function collectionSchedule(db: Db, opts: { now: Date; configuredIntervalSeconds: number }) {
  const [job, lastReal] = await Promise.all([
    db.job.findFirst({
      where: { kind: "gc" },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      select: { data: true, state: true, createdAt: true, startedAt: true, finishedAt: true, claimedBy: true },
    }),
    db.collectionRun.findFirst({
      where: { dryRun: false, status: { in: ["finished", "failed"] }, finishedAt: { not: null } },
      orderBy: { finishedAt: "desc" },
      select: { finishedAt: true },
    }),
  ]);
  const offered = (job?.data as { intervalSeconds?: unknown } | null)?.intervalSeconds;
  const intervalSeconds = typeof offered === "number" ? offered : opts.configuredIntervalSeconds;
  const lastScheduled = job
    ? { offeredAt: job.createdAt, state: job.state, finishedAt: job.finishedAt, worker: job.claimedBy }
    : null;
  if (intervalSeconds <= 0)
    return { intervalSeconds: 0, source: "configuration" as const, lastScheduled, nextRunAt: null };
  const slotMs = intervalSeconds * 1000;
  let next = (Math.floor(opts.now.getTime() / slotMs) + 1) * slotMs;
  const due = lastReal?.finishedAt
    ? lastReal.finishedAt.getTime() + Math.floor(intervalSeconds * SCHEDULED_INTERVAL_SHARE) * 1000
    : 0;
  while (next < due) next += slotMs;
  return {
    intervalSeconds,
    /** worker: what the workers last offered; configuration: this server's setting (no worker has offered yet). */
    source: job ? ("worker" as const) : ("configuration" as const),
    lastScheduled,
    /** The start of the slot whose job will run (a worker must be running then). */
    nextRunAt: new Date(next),
  };
}

// --- The run log ------------------------------------------------------------------------------

export const collectionRunsInput = z.strictObject({
  cursor: z.string().max(400).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(200).default(25),
});
export type CollectionRunsInput = z.input<typeof collectionRunsInput>;

/** Who started a run, as its host column records it. */
function trigger(host: string | null): { kind: "scheduled" | "dashboard" | "api" | "cli" | "process"; ref: string } {
  const [prefix, ...rest] = (host ?? "").split(":");
  const ref = rest.join(":");
  if (prefix === "worker") return { kind: "scheduled", ref };
  if (prefix === "dashboard") return { kind: "dashboard", ref };
  if (prefix === "admin") return { kind: "api", ref };
  if (prefix === "cli") return { kind: "cli", ref };
  return { kind: "process", ref: host ?? "" };
}

/** The per-run log, dry and real runs, newest first: when, who, what it deleted and freed, how long. */
export async function collectionRunLog(db: Db, input: CollectionRunsInput = {}) {
  const opts = collectionRunsInput.parse(input);
  const after = opts.cursor ? decodeCursor(opts.cursor) : null;
  const rows = await listCollectionRuns(db, {
    limit: opts.limit + 1,
    ...(after ? { before: { startedAt: after.createdAt, id: after.id } } : {}),
  });
  const page = rows.slice(0, opts.limit);
  const userIds = page
    .map((r) => trigger(r.host))
    .filter((t) => t.kind === "dashboard" || t.kind === "api")
    .map((t) => t.ref);
  const emails = new Map(
    (await db.user.findMany({ where: { id: { in: [...new Set(userIds)] } }, select: { id: true, email: true } })).map(
      (u) => [u.id, u.email],
    ),
  );
  const last = page.at(-1);
  return {
    runs: page.map((r) => {
      const t = trigger(r.host);
      const startedBy =
        t.kind === "scheduled"
          ? `worker ${t.ref}`
          : t.kind === "dashboard" || t.kind === "api"
            ? (emails.get(t.ref) ?? t.ref)
            : t.kind === "cli"
              ? `${t.ref} (CLI)`
              : t.ref || "—";
      return {
        ...r,
        trigger: t.kind,
        startedBy,
        durationMs: r.finishedAt ? r.finishedAt.getTime() - r.startedAt.getTime() : null,
      };
    }),
    nextCursor: rows.length > opts.limit && last ? encodeCursor(last.startedAt, last.id) : null,
  };
}

/**
 * An admin's "collect now": a forced run (never beside a running one), in the audit log; with
 * `dryRun`, what it would delete and free, in the run log only.
 */
export async function runCollectionNow(db: Db, opts: { user: UserScope; dryRun?: boolean }): Promise<CollectResult> {
  return collectAndAudit(db, {
    force: true,
    dryRun: Boolean(opts.dryRun),
    host: `dashboard:${opts.user.userId}`,
    actor: { type: "user", id: opts.user.userId },
    reason: "run from the dashboard",
  });
}
