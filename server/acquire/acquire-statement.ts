// PostgreSQL's acquire: the set-based statement of server/db/statements/acquire.ts, run where the
// dialect says. On a catalog client's pool, concurrent acquires are coalesced into one statement
// (server/db/coalesce.ts); inside a caller's transaction, the statement runs alone on it, so the
// decision commits or rolls back with the caller's other writes.
import { coalesce } from "../db/coalesce.ts";
import type { StatementRunner } from "../db/dialect.ts";
import { isRetryableConflict } from "../db/errors.ts";
import {
  runAcquireStatement,
  type AcquireRequest,
  type AcquireStatementRow,
  type PgAcquireFacts,
} from "../db/statements/acquire.ts";
import { snapshotRefSelect, type SnapshotRefRow } from "../lineage/snapshots.ts";
import { measure } from "../log/measures.ts";

/** What the statement answered for one acquire. */
export interface AcquireOutcome {
  /** The facts it decided on; null when the repository is new (nothing was decided). */
  facts: PgAcquireFacts | null;
  /** The rung and snapshot it chose. */
  rung: string | null;
  chosen: SnapshotRefRow | null;
  /** Whether the decision was recorded; false when its world changed (decide again). */
  recorded: boolean;
}

const REF_FIELDS = Object.keys(snapshotRefSelect);

/** The chosen snapshot as Prisma's snapshotRefSelect gives it. */
function toRefRow(json: Record<string, unknown> | null): SnapshotRefRow | null {
  if (!json) return null;
  // Assigned in place rather than spread into a copy: on this hot path a spread copy made V8
  // promote short-lived objects (longer GC pauses).
  const row = json as unknown as SnapshotRefRow;
  row.sizeBytes = BigInt(json.sizeBytes as string);
  row.createdAt = new Date(json.createdAt as string);
  row.readyAt = json.readyAt === null ? null : new Date(json.readyAt as string);
  return row;
}

function toOutcome(row: AcquireStatementRow | undefined): AcquireOutcome {
  if (!row) return { facts: null, rung: null, chosen: null, recorded: false };
  return {
    facts: row.repositoryId
      ? {
          repositoryId: row.repositoryId,
          lineage: row.lineage,
          head: row.head,
          baseline: row.baseline,
          heldOriginal: row.heldOriginal,
          forkSource: row.forkSource,
          hasCheckpoints: row.hasCheckpoints,
        }
      : null,
    rung: row.rung,
    chosen: toRefRow(row.chosen),
    recorded: row.recorded,
  };
}

/** Runs the statement and measures it: its round trip and how many acquires it carried (/metrics). */
async function timedStatement(runner: StatementRunner, requests: AcquireRequest[]): Promise<AcquireStatementRow[]> {
  const started = performance.now();
  let outcome: "ok" | "error" = "error";
  try {
    const rows = await runAcquireStatement(runner, requests, REF_FIELDS);
    outcome = "ok";
    return rows;
  } finally {
    const seconds = (performance.now() - started) / 1000;
    measure({ type: "statement", statement: "acquire", outcome, requests: requests.length, seconds });
  }
}

async function acquireBatch(runner: StatementRunner, requests: AcquireRequest[]): Promise<AcquireOutcome[]> {
  const rows = await timedStatement(runner, requests);
  const byPosition: (AcquireStatementRow | undefined)[] = [];
  for (const row of rows) byPosition[row.i] = row;
  return requests.map((_, i) => toOutcome(byPosition[i]));
}

/**
 * Most acquires per statement, and statements at once, per pool. While one batch runs the next
 * gathers, so a busy pool sends fewer, larger statements: each statement costs PostgreSQL a fixed
 * part besides its acquires, and a second one in flight spends the same cores on more, smaller
 * statements (the variants tried, and their figures: docs/perf/2026-12-acquire-latency.md).
 */
const MAX_BATCH = 32;
const MAX_IN_FLIGHT = 1;

const coalesced = new WeakMap<StatementRunner, (request: AcquireRequest) => Promise<AcquireOutcome>>();

/**
 * Decides and records one acquire. `recorded` is false when nothing was written for it: the
 * repository is new, its chosen snapshot left the allowed states, or a concurrent acquire
 * created the same lineage. The caller decides again.
 */
export async function acquireByStatement(runner: StatementRunner, request: AcquireRequest): Promise<AcquireOutcome> {
  if (runner.on === "transaction") return (await acquireBatch(runner, [request]))[0]!;
  let acquire = coalesced.get(runner);
  if (!acquire) {
    acquire = coalesce((batch: AcquireRequest[]) => acquireBatch(runner, batch), {
      maxBatch: MAX_BATCH,
      maxInFlight: MAX_IN_FLIGHT,
      isBatchError: isRetryableConflict,
    });
    coalesced.set(runner, acquire);
  }
  return acquire(request);
}
