// The job queue's one statement that Prisma cannot express: taking the next runnable job.
import type { Db } from "../client.ts";
import { CLAIMABLE_STATES } from "../../domain/jobs.ts";
import { dialectOf } from "../dialect.ts";

/** The states a worker may claim from, as SQL literals (constants, never input). */
const CLAIMABLE = CLAIMABLE_STATES.map((state) => `'${state}'`).join(", ");

/**
 * The id of the oldest runnable job addressed to `host` (null: host-less maintenance), locked
 * for the calling transaction. On PostgreSQL the row is taken `FOR UPDATE SKIP LOCKED`: a job
 * another worker is claiming is passed over, not waited on, so concurrent workers each take a
 * different job without queueing behind one another. On SQLite the transaction holds the
 * database's write lock, which serializes claims on its own.
 */
export async function nextRunnableJobId(tx: Db, host: string | null, now: Date): Promise<string | null> {
  const sql = dialectOf(tx);
  const hostMatch = host === null ? "host IS NULL" : `host = ${sql.p(2)}`;
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    // Parameters in the order they appear: SQLite's placeholders are positional.
    `SELECT id FROM jobs WHERE state IN (${CLAIMABLE}) AND run_after <= ${sql.p(1)} AND ${hostMatch} ` +
      `ORDER BY run_after, created_at, id LIMIT 1${sql.lock("update skip locked")}`,
    ...(host === null ? [now] : [now, host]),
  );
  return rows[0]?.id ?? null;
}
