// Worker hosts: which host names a worker serves now. Every worker process (`strata worker`, and
// the one inside `strata serve`) registers itself in `workers` before its first claim, is seen
// again every WORKER_SEEN_EVERY_MS on a timer of its own, and is marked stopped when it stops; a
// killed one just stops being seen. A host is live while one of its workers is.
//
// A capture or restore addressed to a host without a live worker waits (its JobView says so:
// waitingForHost). Once it has waited, and the host has been without a worker, for the configured
// time (STRATA_NO_WORKER_SECONDS), failJobsWithoutWorker fails it with NO_WORKER, so a job for a
// host nobody serves (a typo, a laptop that is off) ends instead of staying `created` for ever.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { JOB_KINDS, type JobKind, type JobState, type WaitingForHost } from "../domain/jobs.ts";
import type { AgentScope, UserScope } from "../domain/scope.ts";
import { logger } from "../log/logger.ts";
import type { JobQueue } from "./queue.ts";

/** How often a running worker records that it is alive (worker-process.ts, on its own timer). */
export const WORKER_SEEN_EVERY_MS = 5_000;

/**
 * A worker not seen for this long is not live. Six periods of WORKER_SEEN_EVERY_MS: a beat
 * delayed by a busy event loop, a slow database or a missed statement does not make a served
 * host look unserved, and a killed worker's host stops being live within half a minute.
 */
export const WORKER_LIVENESS_MS = 30_000;

/** STRATA_NO_WORKER_SECONDS's default (server/config/config.ts), for callers given none. */
export const DEFAULT_NO_WORKER_SECONDS = 600;

/** The workers a staff view lists under each host: live ones and those seen this recently… */
const RECENT_WORKER_MS = 24 * 3600_000;
/** …at most this many in all, the most recently seen (a restart loop registers one per start). */
const RECENT_WORKER_LIMIT = 500;

/** Jobs addressed to a host: the ones that wait for its worker. */
const HOST_JOB_KINDS = ["capture", "restore"] as const satisfies readonly JobKind[];
const WAITING_STATES = ["created", "retry"] as const satisfies readonly JobState[];

export interface WorkerRegistration {
  /** The worker id its claims carry (worker-identity.ts formatWorkerId). */
  id: string;
  host: string;
  version: string;
  pid: number;
}

/** Records a worker as started and seen now (database clock); again for a known id: seen now. */
export async function registerWorker(db: Db, worker: WorkerRegistration): Promise<void> {
  const now = await dialectOf(db).now(db);
  await db.worker.upsert({
    where: { id: worker.id },
    create: { ...worker, startedAt: now, lastSeenAt: now },
    // A stopped worker stays stopped: only a new start (a new id) serves the host again.
    update: { lastSeenAt: now },
  });
}

/** Records that a running worker is alive. False when it is unknown or was stopped. */
export async function workerSeen(db: Db, id: string): Promise<boolean> {
  const now = await dialectOf(db).now(db);
  const seen = await db.worker.updateMany({ where: { id, stoppedAt: null }, data: { lastSeenAt: now } });
  return seen.count === 1;
}

/** Records that a worker stopped: its host is no longer served by it, at once. */
export async function workerStopped(db: Db, id: string): Promise<void> {
  const now = await dialectOf(db).now(db);
  await db.worker.updateMany({ where: { id, stoppedAt: null }, data: { stoppedAt: now, lastSeenAt: now } });
}

function liveWorkers(now: Date): Prisma.WorkerWhereInput {
  return { stoppedAt: null, lastSeenAt: { gte: new Date(now.getTime() - WORKER_LIVENESS_MS) } };
}

function isLive(worker: { stoppedAt: Date | null; lastSeenAt: Date }, now: Date): boolean {
  return worker.stoppedAt === null && worker.lastSeenAt.getTime() >= now.getTime() - WORKER_LIVENESS_MS;
}

interface HostState {
  live: boolean;
  /** When any worker of the host was last seen; null: none ever registered. */
  lastSeenAt: Date | null;
}

/** Whether each of `hosts` has a live worker, and when one was last seen. */
async function hostStates(db: Db, hosts: readonly string[], now: Date): Promise<Map<string, HostState>> {
  const [seen, live] = await Promise.all([
    db.worker.groupBy({ by: ["host"], where: { host: { in: [...hosts] } }, _max: { lastSeenAt: true } }),
    db.worker.groupBy({ by: ["host"], where: { host: { in: [...hosts] }, ...liveWorkers(now) } }),
  ]);
  const liveHosts = new Set(live.map((g) => g.host));
  const last = new Map(seen.map((g) => [g.host, g._max.lastSeenAt]));
  return new Map(hosts.map((host) => [host, { live: liveHosts.has(host), lastSeenAt: last.get(host) ?? null }]));
}

/**
 * When a job waiting for a host without a live worker fails: once it has waited `afterSeconds`
 * and the host has had no worker for as long (so a worker restarted behind a long queue does not
 * fail the jobs that waited behind it).
 */
function noWorkerDeadline(waitingSince: Date, lastSeenAt: Date | null, afterSeconds: number): Date {
  const from = lastSeenAt && lastSeenAt > waitingSince ? lastSeenAt : waitingSince;
  return new Date(from.getTime() + afterSeconds * 1000);
}

/** A job as the waits below need it. */
type WaitingJob = { id: string; kind: JobKind; host: string | null; state: JobState; createdAt: Date };

/**
 * For each of `jobs` that waits (created, retry) for a host with no live worker: the host, when
 * a worker of it was last seen, and when the job fails with NO_WORKER. One look at the workers
 * of all the jobs' hosts, however many jobs.
 */
export async function waitsForHosts(
  db: Db,
  jobs: readonly WaitingJob[],
  opts: { afterSeconds: number },
): Promise<Map<string, WaitingForHost>> {
  const waiting = jobs.filter(
    (job): job is WaitingJob & { host: string } =>
      job.host !== null &&
      (HOST_JOB_KINDS as readonly string[]).includes(job.kind) &&
      (WAITING_STATES as readonly string[]).includes(job.state),
  );
  const waits = new Map<string, WaitingForHost>();
  if (waiting.length === 0) return waits;
  const now = await dialectOf(db).now(db);
  const states = await hostStates(db, [...new Set(waiting.map((job) => job.host))], now);
  const unserved = waiting.filter((job) => !states.get(job.host)?.live);
  // A retry job has waited since its last attempt ended, which a JobView does not carry.
  const retrying = unserved.filter((job) => job.state === "retry").map((job) => job.id);
  const movedAt = new Map(
    retrying.length === 0
      ? []
      : (await db.job.findMany({ where: { id: { in: retrying } }, select: { id: true, updatedAt: true } })).map(
          (row) => [row.id, row.updatedAt],
        ),
  );
  for (const job of unserved) {
    const lastSeenAt = states.get(job.host)?.lastSeenAt ?? null;
    const since = job.state === "retry" ? (movedAt.get(job.id) ?? job.createdAt) : job.createdAt;
    waits.set(job.id, { host: job.host, lastSeenAt, failsAt: noWorkerDeadline(since, lastSeenAt, opts.afterSeconds) });
  }
  return waits;
}

/** A job failed because no worker of its host came. */
export interface JobWithoutWorker {
  id: string;
  kind: JobKind;
  host: string;
  lastSeenAt: Date | null;
}

/** How many waiting jobs one check looks at; the next check takes the rest. */
const CHECK_BATCH = 200;

/**
 * Fails with NO_WORKER the captures and restores that waited `afterSeconds` (created: since
 * they were enqueued; retry: since their last attempt ended) for a host that has had no live
 * worker for as long. Each fails through the queue's own move, so a restore job's finalizer
 * settles its restore and pin in the same transaction; a job a worker claims meanwhile is left
 * to it. Run by every worker's housekeeping and by `strata serve --no-worker`; concurrent checks
 * fail each job once. One log line per job failed.
 */
export async function failJobsWithoutWorker(
  queue: JobQueue,
  opts: { afterSeconds: number },
): Promise<JobWithoutWorker[]> {
  const db = queue.db;
  const now = await queue.dialect.now(db);
  const waitedEnough = new Date(now.getTime() - opts.afterSeconds * 1000);
  // The served hosts first, so that a long queue of a busy host never hides an unserved one's.
  const served = await db.worker.groupBy({ by: ["host"], where: liveWorkers(now) });
  const candidates = await db.job.findMany({
    where: {
      kind: { in: [...HOST_JOB_KINDS] },
      host: { not: null, notIn: served.map((g) => g.host) },
      OR: [
        { state: "created", createdAt: { lte: waitedEnough } },
        { state: "retry", updatedAt: { lte: waitedEnough } },
      ],
    },
    select: { id: true, kind: true, host: true, state: true, attempts: true, createdAt: true, updatedAt: true },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    take: CHECK_BATCH,
  });
  if (candidates.length === 0) return [];
  const hosts = [...new Set(candidates.flatMap((job) => (job.host ? [job.host] : [])))];
  const states = await hostStates(db, hosts, now);
  const failed: JobWithoutWorker[] = [];
  for (const job of candidates) {
    const host = job.host;
    const state = host ? states.get(host) : undefined;
    if (!host || !state || state.live) continue;
    const since = job.state === "retry" ? job.updatedAt : job.createdAt;
    if (noWorkerDeadline(since, state.lastSeenAt, opts.afterSeconds) > now) continue;
    const ended = await queue.failUnclaimed(
      { id: job.id, state: job.state as JobState, attempts: job.attempts },
      noWorkerError(host, state.lastSeenAt, opts.afterSeconds),
    );
    if (!ended) continue;
    const kind = job.kind as JobKind;
    failed.push({ id: job.id, kind, host, lastSeenAt: state.lastSeenAt });
    logger().warn(
      { jobId: job.id, kind, host, lastSeenAt: state.lastSeenAt, cause: { code: "NO_WORKER" } },
      "job failed: no worker serves its host",
    );
  }
  return failed;
}

function noWorkerError(host: string, lastSeenAt: Date | null, afterSeconds: number) {
  const seen = lastSeenAt ? `a worker of it was last seen at ${lastSeenAt.toISOString()}` : "no worker of it ever ran";
  return {
    code: "NO_WORKER",
    message: `No worker serves host ${host} (${seen}); the job waited ${afterSeconds} s for one.`,
    hint: `Start \`strata worker --host ${host}\` on that machine, or enqueue to a host host.list shows.`,
    retryable: false,
  };
}

// Listing hosts ------------------------------------------------------------------------------

const agentHostSchema = z.object({ name: z.string(), live: z.literal(true), lastSeenAt: z.date() });

const hostWorkerSchema = z.object({
  id: z.string(),
  pid: z.number().int(),
  version: z.string(),
  startedAt: z.date(),
  lastSeenAt: z.date(),
  live: z.boolean(),
  stoppedAt: z.date().nullable(),
});

const hostQueueSchema = z.object({
  kind: z.enum(JOB_KINDS),
  created: z.number().int(),
  retry: z.number().int(),
  active: z.number().int(),
});

const staffHostSchema = z.object({
  name: z.string(),
  live: z.boolean(),
  /** When any worker of the host was last seen; null: none ever registered (jobs wait for it). */
  lastSeenAt: z.date().nullable(),
  /** Its live workers and those seen in the last day, most recently seen first. */
  workers: z.array(hostWorkerSchema),
  /** Its open jobs by kind: only kinds with any. */
  queue: z.array(hostQueueSchema),
  /** The oldest waiting job's wait: created since it was enqueued, retry since its last attempt. */
  oldestWaitingSince: z.date().nullable(),
  oldestWaitingSeconds: z.number().nullable(),
});

/** host.list's answer: an agent's view, or staff's. */
export const hostListSchema = z.discriminatedUnion("view", [
  z.object({ view: z.literal("agent"), hosts: z.array(agentHostSchema) }),
  z.object({ view: z.literal("staff"), hosts: z.array(staffHostSchema) }),
]);
export type HostList = z.infer<typeof hostListSchema>;

/** Who asks: an agent sees the hosts it may address, staff every host with its workers and queue. */
export type ListHostsOptions = { agent: AgentScope; user?: never } | { user: UserScope; agent?: never };

/**
 * The hosts a caller may address. An agent: the hosts with a live worker, nothing of other
 * agents' jobs. Staff: every host that ever had a worker or has open jobs, with its recent
 * workers, its queue depth by kind and state, and its oldest waiting job.
 */
export async function listHosts(db: Db, opts: ListHostsOptions): Promise<HostList> {
  const now = await dialectOf(db).now(db);
  if (opts.agent) {
    const live = await db.worker.groupBy({
      by: ["host"],
      where: liveWorkers(now),
      _max: { lastSeenAt: true },
      orderBy: { host: "asc" },
    });
    return {
      view: "agent",
      hosts: live.map((g) => ({ name: g.host, live: true as const, lastSeenAt: g._max.lastSeenAt ?? now })),
    };
  }
  const [seen, workers, open] = await Promise.all([
    db.worker.groupBy({ by: ["host"], _max: { lastSeenAt: true } }),
    db.worker.findMany({
      where: { OR: [liveWorkers(now), { lastSeenAt: { gte: new Date(now.getTime() - RECENT_WORKER_MS) } }] },
      orderBy: [{ lastSeenAt: "desc" }, { id: "asc" }],
      take: RECENT_WORKER_LIMIT,
      select: { id: true, host: true, pid: true, version: true, startedAt: true, lastSeenAt: true, stoppedAt: true },
    }),
    db.job.groupBy({
      by: ["host", "kind", "state"],
      where: { host: { not: null }, state: { in: [...WAITING_STATES, "active"] } },
      _count: { _all: true },
      _min: { createdAt: true, updatedAt: true },
    }),
  ]);
  const names = new Set([...seen.map((g) => g.host), ...open.flatMap((g) => (g.host ? [g.host] : []))]);
  const lastSeen = new Map(seen.map((g) => [g.host, g._max.lastSeenAt]));
  const hosts = [...names].sort().map((name) => {
    const own = workers.filter((w) => w.host === name).map(({ host: _host, ...w }) => ({ ...w, live: isLive(w, now) }));
    const queue = new Map<JobKind, z.infer<typeof hostQueueSchema>>();
    let oldest: Date | null = null;
    for (const group of open.filter((g) => g.host === name)) {
      const kind = group.kind as JobKind;
      const depth = queue.get(kind) ?? { kind, created: 0, retry: 0, active: 0 };
      depth[group.state as "created" | "retry" | "active"] += group._count._all;
      queue.set(kind, depth);
      const since =
        group.state === "created" ? group._min.createdAt : group.state === "retry" ? group._min.updatedAt : null;
      if (since && (!oldest || since < oldest)) oldest = since;
    }
    return {
      name,
      live: own.some((w) => w.live),
      lastSeenAt: lastSeen.get(name) ?? null,
      workers: own,
      queue: [...queue.values()].sort((a, b) => a.kind.localeCompare(b.kind)),
      oldestWaitingSince: oldest,
      oldestWaitingSeconds: oldest ? Math.max(0, Math.round((now.getTime() - oldest.getTime()) / 1000)) : null,
    };
  });
  return { view: "staff", hosts };
}
