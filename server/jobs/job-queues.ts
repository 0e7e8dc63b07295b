// Opens the job queue of a catalog: the jobs table on SQLite, pg-boss on PostgreSQL.
import type { CatalogHandle, Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "../domain/jobs.ts";
import { pgBossDelivery, startPgBoss } from "./pg-boss-delivery.ts";
import { JobQueue, tableDelivery } from "./queue.ts";

export interface OpenJobQueueOptions {
  /**
   * A worker needs pg-boss started (its schema installed, its own pool for maintenance); a
   * process that only enqueues, reads and cancels does not.
   */
  worker?: boolean;
  retry?: Partial<RetryPolicy>;
}

/** A queue over a catalog. On PostgreSQL with `worker`, this installs pg-boss's schema if missing. */
export async function openJobQueue(
  catalog: Pick<CatalogHandle, "db" | "url">,
  opts: OpenJobQueueOptions = {},
): Promise<JobQueue> {
  const defaults = retryDefaults(opts.retry);
  return dialectOf(catalog.db).choose({
    sqlite: async () => new JobQueue(catalog.db, tableDelivery(catalog.db), defaults),
    postgres: async () => {
      const boss = opts.worker ? await startPgBoss(catalog.url) : null;
      return new JobQueue(catalog.db, pgBossDelivery(catalog.db, { boss }), defaults);
    },
  });
}

/** An enqueue/read-only queue, without I/O to create it (for request handlers). */
export function jobQueueFor(db: Db, retry?: Partial<RetryPolicy>): JobQueue {
  const delivery = dialectOf(db).choose({ sqlite: () => tableDelivery(db), postgres: () => pgBossDelivery(db) });
  return new JobQueue(db, delivery, retryDefaults(retry));
}

function retryDefaults(overrides?: Partial<RetryPolicy>): RetryPolicy {
  return { ...DEFAULT_RETRY_POLICY, ...overrides };
}
