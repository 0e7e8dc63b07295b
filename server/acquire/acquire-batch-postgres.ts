// The acquire hot path on PostgreSQL: one set-based statement per batch of acquires on the pg
// pool, instead of a dozen Prisma calls per acquire. The statement reads every fact the
// decision needs from one snapshot of the catalog, takes the first rung of the ladder, and
// records the decision (lineage, pin, restore row) atomically, each only if its chosen snapshot
// is still in a state the decision allows, re-checked under FOR SHARE so retirement and head
// moves serialize against it. A decision whose world changed is not written and its caller
// tries again. Concurrent acquires are coalesced (server/db/coalesce.ts): sixteen callers cost
// one round trip and one commit, not sixteen transactions of a dozen statements.
//
// The rung is taken in SQL so that reading and writing are one statement, but the ladder's
// definition stays chooseRestore in TypeScript: the caller runs it on the facts the statement
// returns and refuses a plan on which the two disagree (workspaces.ts).
//
// Columns of type TIMESTAMP(3) hold UTC (Prisma's convention): values go in as ISO strings read
// AT TIME ZONE 'UTC', and come out the same way, whatever the session's time zone.
import type pg from "pg";
import { coalesce } from "../db/coalesce.ts";
import { isRetryableConflict } from "../db/errors.ts";
import { snapshotRefSelect, type SnapshotRefRow } from "../lineage/snapshots.ts";

export interface AcquireRequest {
  agentId: string;
  repositoryIdentity: string;
  backendKind: string;
  baseImage: string;
  canonicalRef: string;
  /** The work context the caller named (its lineage is looked up); null for new work. */
  requestedWorkContextId: string | null;
  /** The work context of the restore: the requested one, or the one minted for new work. */
  workContextId: string;
  workspace: string;
  host: string;
  /** The caller's clock: the restore's time, and the expiry of partial-restore holds. */
  now: Date;
  restoreId: string;
  /** The id the lineage gets if this acquire creates it. */
  newLineageId: string;
  /** The pin taken on the chosen snapshot, its holder and expiry. */
  pinId: string;
  holder: string;
  pinExpiresAt: Date;
}

interface PgLineageFacts {
  id: string;
  state: string;
  workContextId: string;
  originSnapshotId: string | null;
  retiredReason: string | null;
}

/** What the ladder needs to know of a candidate snapshot (the full row is read only for the chosen one). */
interface PgCandidate {
  id: string;
  class: string;
  state: string;
  workContextId: string | null;
}

interface PgAcquireFacts {
  repositoryId: string;
  lineage: PgLineageFacts | null;
  head: PgCandidate | null;
  baseline: PgCandidate | null;
  hasCheckpoints: boolean;
  /** The original the head names in degraded_from_id, while a partial restore of it is held. */
  heldOriginal: PgCandidate | null;
}

const snake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A snapshot row as JSON with the fields Prisma's snapshotRefSelect gives. */
function refJson(alias: string): string {
  const fields = Object.keys(snapshotRefSelect).map((field) => {
    const column = `${alias}.${snake(field)}`;
    if (field === "sizeBytes") return `'${field}', ${column}::text`; // int8 beyond 2^53 stays exact
    if (field === "createdAt" || field === "readyAt") return `'${field}', ${column} AT TIME ZONE 'UTC'`;
    return `'${field}', ${column}`;
  });
  // json_build_object takes at most 100 arguments; the ref has 20 fields.
  return `json_build_object(${fields.join(", ")})`;
}

/** A candidate's ladder facts as JSON (null when there is no candidate). */
function candidateJson(alias: string): string {
  return (
    `CASE WHEN ${alias}.id IS NULL THEN NULL ELSE json_build_object('id', ${alias}.id, 'class', ${alias}.class, ` +
    `'state', ${alias}.state, 'workContextId', ${alias}.work_context_id) END`
  );
}

type JsonRef = Omit<SnapshotRefRow, "sizeBytes" | "createdAt" | "readyAt"> & {
  sizeBytes: string;
  createdAt: string;
  readyAt: string | null;
};

function toRefRow(json: JsonRef | null): SnapshotRefRow | null {
  if (!json) return null;
  // Assigned in place rather than spread into a copy (see acquireWorkspace on spreads here).
  const row = json as unknown as SnapshotRefRow;
  row.sizeBytes = BigInt(json.sizeBytes);
  row.createdAt = new Date(json.createdAt);
  row.readyAt = json.readyAt === null ? null : new Date(json.readyAt);
  return row;
}

// Every lookup is a LATERAL subquery keyed by the request row, so each one is an index probe
// whatever the batch size (the planner cannot know how many rows jsonb_to_recordset yields and
// would hash-join whole tables); LIMIT 1 keeps it from flattening a subquery into such a join.
const ACQUIRE_SQL = `
WITH facts AS (
  SELECT k.*, repo.id AS repository_id,
    lin.id AS lineage_id,
    CASE WHEN lin.id IS NULL THEN NULL ELSE json_build_object('id', lin.id, 'state', lin.state,
      'workContextId', lin.work_context_id, 'originSnapshotId', lin.origin_snapshot_id,
      'retiredReason', lin.retired_reason) END AS lineage,
    head.id AS head_id, ${candidateJson("head")} AS head_json,
    base.id AS base_id, ${candidateJson("base")} AS base_json,
    orig.id AS orig_id, ${candidateJson("orig")} AS orig_json,
    (head.id IS NOT NULL OR COALESCE(own.found, false)) AS has_checkpoints
  FROM jsonb_to_recordset($1::jsonb) AS k(i int, identity text, agent_id text, requested_work_context_id text,
    work_context_id text, backend_kind text, base_image text, canonical_ref text, workspace text, host text,
    now timestamptz, restore_id text, new_lineage_id text, pin_id text, holder text, pin_expires_at timestamptz)
  LEFT JOIN LATERAL (SELECT r.id FROM repositories r WHERE r.identity = k.identity LIMIT 1) repo ON true
  LEFT JOIN LATERAL (
    SELECT l.id, l.state, l.work_context_id, l.origin_snapshot_id, l.retired_reason FROM lineages l
    WHERE l.agent_id = k.agent_id AND l.work_context_id = k.requested_work_context_id
      AND l.repository_id = repo.id AND l.backend_kind = k.backend_kind AND l.base_image = k.base_image
    LIMIT 1
  ) lin ON true
  LEFT JOIN LATERAL (
    -- The key columns let the planner answer from the one-ready-checkpoint index.
    SELECT s.id, s.class, s.state, s.work_context_id, s.degraded_from_id FROM snapshots s
    WHERE lin.state = 'active' AND s.lineage_id = lin.id AND s.agent_id = k.agent_id
      AND s.work_context_id = k.requested_work_context_id AND s.repository_id = repo.id
      AND s.backend_kind = k.backend_kind AND s.base_image = k.base_image
      AND s.class = 'checkpoint' AND s.state = 'ready'
    LIMIT 1
  ) head ON true
  LEFT JOIN LATERAL (
    SELECT s.id, s.class, s.state, s.work_context_id FROM snapshots s
    WHERE head.id IS NULL AND s.agent_id = k.agent_id AND s.repository_id = repo.id
      AND s.backend_kind = k.backend_kind AND s.base_image = k.base_image AND s.canonical_ref = k.canonical_ref
      AND s.class = 'baseline' AND s.state = 'ready'
    LIMIT 1
  ) base ON true
  LEFT JOIN LATERAL (
    SELECT o.id, o.class, o.state, o.work_context_id FROM snapshots o
    WHERE o.id = head.degraded_from_id AND o.agent_id = k.agent_id AND o.state IN ('ready', 'superseded')
      AND EXISTS (
        SELECT 1 FROM restores r JOIN pins p ON p.agent_id = r.agent_id AND p.pin_id = r.pin_id
        WHERE r.snapshot_id = o.id AND r.agent_id = k.agent_id AND r.outcome = 'degraded'
          AND r.discarded_at IS NULL AND NOT p.released
          AND (p.expires_at IS NULL OR p.expires_at > (k.now AT TIME ZONE 'UTC')))
  ) orig ON true
  LEFT JOIN LATERAL (
    SELECT true AS found FROM snapshots s
    WHERE head.id IS NULL AND s.lineage_id = lin.id AND s.class = 'checkpoint' AND s.failed_at IS NULL
    LIMIT 1
  ) own ON true
), decided AS (
  -- The first rung (chooseRestore): the own head (or the original a held partial restore of it
  -- names), else the ready baseline, else cold.
  SELECT f.*,
    CASE WHEN f.head_id IS NOT NULL THEN 'checkpoint' WHEN f.base_id IS NOT NULL THEN 'baseline' ELSE 'cold' END
      AS rung,
    COALESCE(f.orig_id, f.head_id, f.base_id) AS chosen_id,
    f.orig_id IS NOT NULL AS superseded_allowed
  FROM facts f WHERE f.repository_id IS NOT NULL
), locked AS (
  SELECT s.id, s.state, ${refJson("s")} AS ref FROM snapshots s
  WHERE s.id = ANY(ARRAY(SELECT chosen_id FROM decided WHERE chosen_id IS NOT NULL))
  ORDER BY s.id FOR SHARE
), ok AS (
  SELECT d.* FROM decided d LEFT JOIN locked ON locked.id = d.chosen_id
  WHERE d.chosen_id IS NULL OR locked.state = 'ready' OR (d.superseded_allowed AND locked.state = 'superseded')
), new_lineage AS (
  INSERT INTO lineages (id, agent_id, work_context_id, repository_id, backend_kind, base_image, origin_snapshot_id)
  SELECT new_lineage_id, agent_id, work_context_id, repository_id, backend_kind, base_image, chosen_id
  FROM ok WHERE lineage_id IS NULL
  ORDER BY agent_id, work_context_id
  ON CONFLICT DO NOTHING
  RETURNING id
), placed AS (
  SELECT ok.*, COALESCE(ok.lineage_id, ok.new_lineage_id) AS restore_lineage_id FROM ok
  WHERE ok.lineage_id IS NOT NULL OR ok.new_lineage_id IN (SELECT id FROM new_lineage)
), pin AS (
  INSERT INTO pins (agent_id, pin_id, snapshot_id, holder, purpose, created_at, expires_at)
  SELECT agent_id, pin_id, chosen_id, holder, 'restore', CURRENT_TIMESTAMP AT TIME ZONE 'UTC', pin_expires_at AT TIME ZONE 'UTC'
  FROM placed WHERE chosen_id IS NOT NULL
), rst AS (
  INSERT INTO restores (id, agent_id, repository_id, lineage_id, snapshot_id, backend_kind, base_image,
    canonical_ref, work_context_id, workspace, host, rung, pin_id, created_at)
  SELECT restore_id, agent_id, repository_id, restore_lineage_id, chosen_id, backend_kind, base_image, canonical_ref,
    work_context_id, workspace, host, rung, CASE WHEN chosen_id IS NULL THEN NULL ELSE pin_id END,
    now AT TIME ZONE 'UTC'
  FROM placed
  RETURNING id
)
SELECT f.i, f.repository_id AS "repositoryId", f.lineage, f.head_json AS head, f.base_json AS baseline,
  f.orig_json AS "heldOriginal", f.has_checkpoints AS "hasCheckpoints", d.rung, chosen.ref AS chosen,
  EXISTS (SELECT 1 FROM rst WHERE rst.id = f.restore_id) AS recorded
FROM facts f
LEFT JOIN decided d ON d.i = f.i
LEFT JOIN locked chosen ON chosen.id = d.chosen_id`;

/** What the statement answers for one acquire. */
export interface AcquireOutcome {
  /** The facts it decided on; null when the repository is new (nothing was decided). */
  facts: PgAcquireFacts | null;
  /** The rung and snapshot it chose. */
  rung: string | null;
  chosen: SnapshotRefRow | null;
  /** Whether the decision was recorded; false when its world changed (decide again). */
  recorded: boolean;
}

interface OutcomeRow {
  i: number;
  repositoryId: string | null;
  lineage: PgLineageFacts | null;
  head: PgCandidate | null;
  baseline: PgCandidate | null;
  heldOriginal: PgCandidate | null;
  hasCheckpoints: boolean;
  rung: string | null;
  chosen: JsonRef | null;
  recorded: boolean;
}

async function acquireBatch(pool: pg.Pool, requests: AcquireRequest[]): Promise<AcquireOutcome[]> {
  const input = requests.map((r, i) => ({
    i,
    identity: r.repositoryIdentity,
    agent_id: r.agentId,
    requested_work_context_id: r.requestedWorkContextId,
    work_context_id: r.workContextId,
    backend_kind: r.backendKind,
    base_image: r.baseImage,
    canonical_ref: r.canonicalRef,
    workspace: r.workspace,
    host: r.host,
    now: r.now.toISOString(),
    restore_id: r.restoreId,
    new_lineage_id: r.newLineageId,
    pin_id: r.pinId,
    holder: r.holder,
    pin_expires_at: r.pinExpiresAt.toISOString(),
  }));
  // A named statement is parsed and planned once per connection.
  const { rows } = await pool.query<OutcomeRow>({
    name: "strata_acquire",
    text: ACQUIRE_SQL,
    values: [JSON.stringify(input)],
  });
  const outcomes: AcquireOutcome[] = requests.map(() => ({ facts: null, rung: null, chosen: null, recorded: false }));
  for (const row of rows) {
    outcomes[row.i] = {
      facts: row.repositoryId
        ? {
            repositoryId: row.repositoryId,
            lineage: row.lineage,
            head: row.head,
            baseline: row.baseline,
            heldOriginal: row.heldOriginal,
            hasCheckpoints: row.hasCheckpoints,
          }
        : null,
      rung: row.rung,
      chosen: toRefRow(row.chosen),
      recorded: row.recorded,
    };
  }
  return outcomes;
}

/**
 * Most acquires per statement, and statements at once, per pool. While one batch runs the next
 * gathers; on two cores one in flight gave the most acquires per second and the lowest p99
 * (more spent the CPU on more, smaller statements).
 */
const MAX_BATCH = 32;
const MAX_IN_FLIGHT = 1;

const acquirers = new WeakMap<pg.Pool, (request: AcquireRequest) => Promise<AcquireOutcome>>();

/**
 * Decides and records one acquire (with the others of its batch). `recorded` is false when
 * nothing was written for it: the repository is new, its chosen snapshot left the allowed
 * states, or a concurrent acquire created the same lineage. The caller tries again.
 */
export function acquireOnPool(pool: pg.Pool, request: AcquireRequest): Promise<AcquireOutcome> {
  let acquire = acquirers.get(pool);
  if (!acquire) {
    acquire = coalesce((batch: AcquireRequest[]) => acquireBatch(pool, batch), {
      maxBatch: MAX_BATCH,
      maxInFlight: MAX_IN_FLIGHT,
      isBatchError: isRetryableConflict,
    });
    acquirers.set(pool, acquire);
  }
  return acquire(request);
}

/** Creates the repository row unless a concurrent caller already did. */
export async function createRepositoryPg(pool: pg.Pool, row: { id: string; identity: string; name: string }) {
  await pool.query({
    name: "strata_acquire_repository",
    text: `INSERT INTO repositories (id, identity, name) VALUES ($1, $2, $3) ON CONFLICT (identity) DO NOTHING`,
    values: [row.id, row.identity, row.name],
  });
}
