// The job queue's one statement that Prisma cannot express: claiming the next runnable job.
import type { Db } from "../client.ts";
import { CLAIMABLE_STATES } from "../../domain/jobs.ts";
import { dialectOf } from "../dialect.ts";

/** The states a worker may claim from, as SQL literals (constants, never input). */
const CLAIMABLE = CLAIMABLE_STATES.map((state) => `'${state}'`).join(", ");

/** Every column of a job, named as Prisma's model names it (queue.ts's JobRow). */
const JOB_COLUMNS = [
  "id",
  "kind",
  "host",
  `agent_id AS "agentId"`,
  "state",
  "data",
  "progress",
  "memo",
  "result",
  "error",
  `attempt_errors AS "attemptErrors"`,
  "attempts",
  `max_attempts AS "maxAttempts"`,
  `backoff_ms AS "backoffMs"`,
  `backoff_max_ms AS "backoffMaxMs"`,
  `lease_seconds AS "leaseSeconds"`,
  `run_after AS "runAfter"`,
  `claimed_by AS "claimedBy"`,
  `lease_expires_at AS "leaseExpiresAt"`,
  `created_at AS "createdAt"`,
  `started_at AS "startedAt"`,
  `finished_at AS "finishedAt"`,
].join(", ");

/** A job's row as the driver returns it: queue.ts maps it to Prisma's shape. */
export type RawJobRow = Record<string, unknown>;

/**
 * Claims the oldest runnable job addressed to `host`, else the oldest host-less one
 * (maintenance), for `workerId` in one `UPDATE … RETURNING` (graphile-worker's getJob): its next
 * attempt, with a lease of the job's lease_seconds. Null when none is runnable.
 *
 * One statement for both targets, ordered by `host IS NULL`, rather than two tried in turn: an
 * idle worker polls in one round trip, and the runnable rows it sorts are few. On PostgreSQL the
 * row is taken `FOR UPDATE SKIP LOCKED`, so concurrent workers each take a different job without
 * queueing behind one another; SQLite serializes writes, so its select and update are one step.
 *
 * `now` is the queue's injected clock; null takes the database's (what every process agrees on).
 */
export async function claimNextJob(
  db: Db,
  opts: { host: string; workerId: string; now: Date | null },
): Promise<RawJobRow | null> {
  const sql = dialectOf(db);
  const ts = sql.timestamps;
  // Parameters in the order they appear: SQLite's placeholders are positional.
  const args: unknown[] = [];
  const param = (value: unknown) => {
    args.push(value);
    return sql.p(args.length);
  };
  const now = () => (opts.now === null ? ts.now : ts.param(param(opts.now)));
  const text =
    `UPDATE jobs SET state = 'active', attempts = attempts + 1, claimed_by = ${param(opts.workerId)}, ` +
    `lease_expires_at = ${ts.plusSeconds(now(), "lease_seconds")}, started_at = ${now()}, updated_at = ${now()} ` +
    `WHERE id = (SELECT id FROM jobs WHERE state IN (${CLAIMABLE}) AND run_after <= ${now()} ` +
    `AND attempts < max_attempts AND (host = ${param(opts.host)} OR host IS NULL) ` +
    `ORDER BY (host IS NULL), run_after, created_at, id LIMIT 1${sql.lock("update skip locked")}) ` +
    `RETURNING ${JOB_COLUMNS}`;
  const rows = await db.$queryRawUnsafe<RawJobRow[]>(text, ...args);
  return rows[0] ?? null;
}
