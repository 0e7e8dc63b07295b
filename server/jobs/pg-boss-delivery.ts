// Delivery through pg-boss on PostgreSQL. Every pg-boss call that changes a job runs on the
// caller's Prisma transaction (pg-boss accepts any `{ executeSql }` as its connection), so the
// jobs row and pg-boss's own row commit or roll back together.
//
// pg-boss queues per name, so a host's jobs go to `strata-host-<host>` and maintenance to
// `strata-maintenance`. pg-boss v10 has no claim renewal and an uncapped backoff; the two SQL
// statements that add them touch only pg-boss's `job` table, by queue name and id.
import PgBoss from "pg-boss";
import { inTransaction, type Db } from "../db/client.ts";
import { StrataError } from "../domain/errors.ts";
import type { JobDelivery } from "./queue.ts";

const PG_BOSS_SCHEMA = "pgboss";
const MAINTENANCE_QUEUE = "strata-maintenance";

function queueName(host: string | null): string {
  return host === null ? MAINTENANCE_QUEUE : `strata-host-${host}`;
}

/** pg-boss's connection interface over a Prisma client or transaction. */
function executor(db: Db): PgBoss.Db {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      const args = values.map((v) =>
        v === undefined
          ? null
          : v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Date)
            ? JSON.stringify(v)
            : v,
      );
      const rows = await db.$queryRawUnsafe<Record<string, unknown>[]>(text, ...args);
      return { rows };
    },
  };
}

function isMissingSchema(error: unknown): boolean {
  return /relation "pgboss\.[a-z_]+" does not exist|schema "pgboss" does not exist/i.test(
    String((error as Error)?.message),
  );
}

function queueUnavailable(error: unknown): StrataError {
  return new StrataError("UNAVAILABLE", "The PostgreSQL job queue (pg-boss) is not installed in this database.", {
    hint: "Start `strata worker` or `strata serve` once against this database; either installs it.",
    cause: error,
  });
}

export interface PgBossDeliveryOptions {
  /** A started PgBoss with its own pool, for maintenance (expire); optional for enqueue-only use. */
  boss?: PgBoss | null;
}

/**
 * Installs pg-boss's schema (idempotent, under pg-boss's own advisory lock) and returns a started
 * instance with its own small pool. Its maintenance runs on our schedule (see expire), not its timer.
 */
export async function startPgBoss(url: string): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: url,
    schema: PG_BOSS_SCHEMA,
    max: 2,
    supervise: false,
    schedule: false,
    application_name: "strata-worker",
  });
  boss.on("error", (error) => process.stderr.write(`strata: pg-boss: ${(error as Error).message}\n`));
  await boss.start();
  return boss;
}

export function pgBossDelivery(db: Db, opts: PgBossDeliveryOptions = {}): JobDelivery {
  // Only the SQL building and argument checks of this instance are used: every call passes a
  // connection, so it never opens one of its own.
  const sender =
    opts.boss ?? new PgBoss({ db: executor(db), schema: PG_BOSS_SCHEMA, supervise: false, schedule: false });
  const knownQueues = new Set<string>();

  async function ensureQueue(tx: Db, name: string): Promise<void> {
    if (knownQueues.has(name)) return;
    const found = await tx.$queryRawUnsafe<unknown[]>(`SELECT 1 FROM ${PG_BOSS_SCHEMA}.queue WHERE name = $1`, name);
    // Remembered only once seen committed: a queue created in a transaction that rolls back is gone.
    if (found.length > 0) {
      knownQueues.add(name);
      return;
    }
    // create_queue inserts ON CONFLICT DO NOTHING: a concurrent creator waits, then does nothing.
    await tx.$executeRawUnsafe(
      `SELECT ${PG_BOSS_SCHEMA}.create_queue($1::text, $2::json)`,
      name,
      JSON.stringify({ policy: "standard" }),
    );
  }

  return {
    async enqueued(tx, row) {
      const name = queueName(row.host);
      try {
        await ensureQueue(tx, name);
        await sender.send(
          name,
          { jobId: row.id, kind: row.kind },
          {
            id: row.id,
            // Retries are decided by the jobs row (capped backoff); pg-boss's count is the guard.
            retryLimit: row.maxAttempts - 1,
            retryDelay: 0,
            retryBackoff: false,
            expireInSeconds: row.leaseSeconds,
            startAfter: row.runAfter,
            db: executor(tx),
          },
        );
      } catch (error) {
        if (isMissingSchema(error)) throw queueUnavailable(error);
        throw error;
      }
    },

    async next(host, claim) {
      for (const name of [queueName(host), MAINTENANCE_QUEUE]) {
        const row = await inTransaction(db, async (tx) => {
          let jobs: PgBoss.Job<{ jobId?: string }>[];
          try {
            jobs = await sender.fetch<{ jobId?: string }>(name, { db: executor(tx) });
          } catch (error) {
            if (isMissingSchema(error)) throw queueUnavailable(error);
            throw error;
          }
          const job = jobs[0];
          if (!job) return null;
          const claimed = await claim(tx, job.id);
          // The row is final (cancelled meanwhile) or gone: close pg-boss's copy too.
          if (!claimed) await sender.cancel(name, job.id, { db: executor(tx) });
          return claimed;
        });
        if (row) return row;
      }
      return null;
    },

    async renewed(tx, row) {
      await tx.$executeRawUnsafe(
        `UPDATE ${PG_BOSS_SCHEMA}.job SET expire_in = (now() - started_on) + make_interval(secs => $3)
         WHERE name = $1 AND id = $2::uuid AND state = 'active'`,
        queueName(row.host),
        row.id,
        row.leaseSeconds,
      );
    },

    async completed(tx, row, result) {
      await sender.complete(queueName(row.host), row.id, result as object, { db: executor(tx) });
    },

    async failed(tx, row, outcome, failure) {
      const name = queueName(row.host);
      if (outcome === "failed") {
        // A failure that must not be retried: no attempts left for pg-boss either.
        await tx.$executeRawUnsafe(
          `UPDATE ${PG_BOSS_SCHEMA}.job SET retry_limit = retry_count WHERE name = $1 AND id = $2::uuid AND state = 'active'`,
          name,
          row.id,
        );
      }
      await sender.fail(name, row.id, { code: failure.code, message: failure.message }, { db: executor(tx) });
      if (outcome === "retry") {
        // Our capped, jittered backoff instead of pg-boss's uncapped one.
        await tx.$executeRawUnsafe(
          `UPDATE ${PG_BOSS_SCHEMA}.job SET start_after = $3::timestamptz WHERE name = $1 AND id = $2::uuid AND state = 'retry'`,
          name,
          row.id,
          row.runAfter.toISOString(),
        );
      }
    },

    async cancelled(tx, row) {
      await sender.cancel(queueName(row.host), row.id, { db: executor(tx) });
    },

    async expire() {
      // pg-boss moves its expired active jobs to retry (or failed) under its advisory lock.
      if (opts.boss) await opts.boss.expire();
    },

    async close() {
      if (opts.boss) await opts.boss.stop({ graceful: false, wait: true, close: true });
    },
  };
}
