// A worker as a process runs it (`strata worker`, or inside `strata serve`): the queue of the
// catalog, the handlers, the loop, and between polls the expiry of dead claims and the offer
// to schedule maintenance.
import { objectStoresDirectory } from "../git/host-object-store.ts";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { CatalogHandle } from "../db/client.ts";
import type { RetryPolicy } from "../domain/jobs.ts";
import { createJobHandler } from "./handlers.ts";
import { JobQueue } from "./queue.ts";
import { scheduleMaintenance, type MaintenanceSchedule } from "./maintenance.ts";
import { startWorker, type WorkerEvent } from "./worker.ts";

export interface WorkerProcessOptions {
  catalog: Pick<CatalogHandle, "db">;
  host: string;
  dataDir: string;
  schedule: MaintenanceSchedule;
  pollIntervalMs?: number;
  /** How often dead claims are looked for (and maintenance offered). */
  housekeepingMs?: number;
  retry?: Partial<RetryPolicy>;
  onEvent?: (event: WorkerEvent) => void;
  checkpoint?: (point: string) => void;
}

export interface WorkerProcess {
  workerId: string;
  stop(): Promise<void>;
  done: Promise<void>;
}

export async function startWorkerProcess(opts: WorkerProcessOptions): Promise<WorkerProcess> {
  const queue = new JobQueue(opts.catalog.db, opts.retry);
  const workerId = `${opts.host}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const handle = createJobHandler({
    db: opts.catalog.db,
    host: opts.host,
    stateDir: join(opts.dataDir, "restore-state"),
    objectStores: objectStoresDirectory(opts.dataDir),
    ...(opts.checkpoint ? { checkpoint: opts.checkpoint } : {}),
  });
  const housekeepingMs = opts.housekeepingMs ?? 5_000;
  let lastHousekeeping = 0;
  const emit = opts.onEvent ?? (() => undefined);
  const running = startWorker({
    port: {
      fetch: () => queue.fetch({ host: opts.host, workerId }),
      heartbeat: (job, progress) => queue.heartbeat(job, progress),
      remember: (job, memo) => queue.remember(job, memo),
      complete: (job, result) => queue.complete(job, result),
      fail: (job, failure) => queue.fail(job, failure),
    },
    handle,
    pollIntervalMs: opts.pollIntervalMs ?? 1_000,
    async idle() {
      if (Date.now() - lastHousekeeping < housekeepingMs) return;
      lastHousekeeping = Date.now();
      try {
        await queue.expire();
        await scheduleMaintenance(queue, opts.schedule);
      } catch (error) {
        emit({ type: "error", error });
      }
    },
    onEvent: emit,
  });
  const done = running.done;
  return {
    workerId,
    async stop() {
      await running.stop();
      await done;
    },
    done,
  };
}
