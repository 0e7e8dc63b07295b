// A worker as a process runs it (`strata worker`, or inside `strata serve`): the queue of the
// catalog, the handlers, the loop; the hand-back of jobs held by dead processes of its host (at
// once when it starts, then every second on a timer); and between polls, every housekeeping
// period, the expiry of claims whose lease passed and the offer to schedule maintenance.
//
// The worker claims under its process identity (worker-identity.ts), so several workers of one
// host each have their own, and each can tell a dead sibling's claims from a live one's.
import { objectStoresDirectory } from "../restore/engine/host-object-store.ts";
import { join } from "node:path";
import type { CatalogHandle } from "../db/client.ts";
import type { RetryPolicy } from "../domain/jobs.ts";
import { createJobHandler } from "./handlers.ts";
import { HostAccess } from "../worktrees/host-access.ts";
import { JobQueue } from "./queue.ts";
import { scheduleMaintenance, type MaintenanceSchedule } from "./maintenance.ts";
import { startWorker, type WorkerEvent, type WorkerPort } from "./worker.ts";
import { currentWorkerIdentity, formatWorkerId } from "./worker-identity.ts";
import pkg from "../../package.json" with { type: "json" };
import {
  DEFAULT_NO_WORKER_SECONDS,
  failJobsWithoutWorker,
  registerWorker,
  WORKER_SEEN_EVERY_MS,
  workerSeen,
  workerStopped,
} from "./worker-hosts.ts";
import { measure } from "../log/measures.ts";
import { logger } from "../log/logger.ts";
import { markStart, startPhases } from "../log/start-phases.ts";
import type { ReclaimedJob } from "./queue.ts";

export interface WorkerProcessOptions {
  catalog: Pick<CatalogHandle, "db">;
  host: string;
  dataDir: string;
  /** Directories jobs may use (host-access.ts); with neither this nor agentRoots: the data directory's folders. */
  roots?: readonly string[];
  /** Directories in which each agent owns the folder named after it. */
  agentRoots?: readonly string[];
  schedule: MaintenanceSchedule;
  pollIntervalMs?: number;
  /** How often dead claims are looked for (and maintenance offered). */
  housekeepingMs?: number;
  retry?: Partial<RetryPolicy>;
  onEvent?: (event: WorkerEvent) => void;
  /** Jobs this worker handed back because the process of this host holding them no longer runs. */
  onReclaim?: (jobs: ReclaimedJob[]) => void;
  /** The catalog answered a look for dead workers' jobs (every reclaimMs): an outage is over. */
  onCatalogAnswer?: () => void;
  /** How often the jobs of this host's dead workers are looked for (default 1 s). */
  reclaimMs?: number;
  /** A capture or restore waiting this long for a host with no live worker fails (NO_WORKER). */
  noWorkerSeconds?: number;
  checkpoint?: (point: string) => void;
}

export interface WorkerProcess {
  workerId: string;
  /** Settles once the worker's first poll for a job has ended (claimed, found none, or failed). */
  firstPoll: Promise<void>;
  /** The directories its jobs may use, resolved. */
  roots: { roots: string[]; agentRoots: string[] };
  stop(): Promise<void>;
  done: Promise<void>;
}

/** The worker loop's port onto `queue`: claims for `host` as `workerId`, every update fenced by the queue. */
export function queuePort(queue: JobQueue, host: string, workerId: string): WorkerPort {
  return {
    fetch: () => queue.fetch({ host, workerId }),
    heartbeat: (job, progress) => queue.heartbeat(job, progress),
    remember: (job, memo) => queue.remember(job, memo),
    complete: (job, result) => queue.complete(job, result),
    fail: (job, failure) => queue.fail(job, failure),
  };
}

export async function startWorkerProcess(opts: WorkerProcessOptions): Promise<WorkerProcess> {
  const queue = new JobQueue(opts.catalog.db, opts.retry);
  const identity = await currentWorkerIdentity(opts.host);
  const workerId = formatWorkerId(identity);
  const access = HostAccess.open({
    host: opts.host,
    roots: opts.roots ?? [],
    agentRoots: opts.agentRoots ?? [],
    dataDir: opts.dataDir,
  });
  const handle = createJobHandler({
    db: opts.catalog.db,
    host: opts.host,
    access,
    stateDir: join(opts.dataDir, "restore-state"),
    objectStores: objectStoresDirectory(opts.dataDir),
    ...(opts.checkpoint ? { checkpoint: opts.checkpoint } : {}),
  });
  const housekeepingMs = opts.housekeepingMs ?? 5_000;
  let lastHousekeeping = 0;
  const emit = opts.onEvent ?? (() => undefined);
  // The jobs of this host's dead workers are handed back before the first claim and then every
  // reclaimMs on a timer of their own, also while this worker runs a long job: a sibling of a
  // killed worker takes its job within about a second, whatever it is doing.
  const reclaimDead = async () => {
    try {
      const reclaimed = await queue.reclaim(identity);
      opts.onCatalogAnswer?.();
      if (reclaimed.length === 0) return;
      measure({ type: "claims", event: "reclaimed", host: opts.host, count: reclaimed.length });
      opts.onReclaim?.(reclaimed);
    } catch (error) {
      emit({ type: "error", error });
    }
  };
  // The host is served (host.list, a job's waitingForHost) while this worker is seen: registered
  // before the first claim, then seen every WORKER_SEEN_EVERY_MS on a timer of its own, like the
  // reclaim's, so a long job does not make the host look unserved; registered again if its row went.
  const registration = { id: workerId, host: opts.host, version: pkg.version, pid: process.pid };
  const beSeen = async (first: boolean) => {
    try {
      if (first || !(await workerSeen(opts.catalog.db, workerId))) await registerWorker(opts.catalog.db, registration);
    } catch (error) {
      emit({ type: "error", error });
    }
  };
  // Registered and the dead's jobs handed back at once, not one after the other: both come
  // before the first claim, and neither needs the other.
  await Promise.all([beSeen(true), reclaimDead()]);
  markStart("first-reclaim");
  let beingSeen: Promise<void> | null = null;
  const seenTimer = setInterval(() => {
    beingSeen ??= beSeen(false).finally(() => (beingSeen = null));
  }, WORKER_SEEN_EVERY_MS);
  let reclaiming = false;
  const reclaimTimer = setInterval(() => {
    if (reclaiming) return;
    reclaiming = true;
    void reclaimDead().finally(() => (reclaiming = false));
  }, opts.reclaimMs ?? 1_000);
  // The first poll ends the start: the line it leaves says where the start's time went.
  let polled = false;
  let firstPolled: () => void = () => undefined;
  const firstPoll = new Promise<void>((resolve) => (firstPolled = resolve));
  const port = queuePort(queue, opts.host, workerId);
  const running = startWorker({
    port: {
      ...port,
      fetch: async () => {
        try {
          return await port.fetch();
        } finally {
          if (!polled) {
            polled = true;
            markStart("first-poll");
            logger().debug({ workerId, startMs: startPhases() }, "worker start phases");
            firstPolled();
          }
        }
      },
    },
    handle,
    host: opts.host,
    pollIntervalMs: opts.pollIntervalMs ?? 1_000,
    async idle() {
      // Not before the first poll: a worker that starts claims first (its first claim waits for
      // no other statement), and looks after the queue from its next turn on.
      if (!polled || Date.now() - lastHousekeeping < housekeepingMs) return;
      lastHousekeeping = Date.now();
      try {
        const expired = await queue.expire();
        if (expired > 0) measure({ type: "claims", event: "expired", host: opts.host, count: expired });
        await failJobsWithoutWorker(queue, { afterSeconds: opts.noWorkerSeconds ?? DEFAULT_NO_WORKER_SECONDS });
        await scheduleMaintenance(queue, opts.schedule);
      } catch (error) {
        emit({ type: "error", error });
      }
    },
    onEvent: emit,
  });
  const done = running.done.finally(async () => {
    clearInterval(reclaimTimer);
    clearInterval(seenTimer);
    await beingSeen;
    // The host stops being served by this worker now, not once it is no longer seen.
    await workerStopped(opts.catalog.db, workerId).catch((error: unknown) => emit({ type: "error", error }));
  });
  return {
    workerId,
    firstPoll,
    roots: access.describe(),
    async stop() {
      await running.stop();
      await done;
    },
    done,
  };
}
