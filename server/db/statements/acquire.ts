// The acquire statement of PostgreSQL: one set-based statement decides and records a batch of
// acquires, instead of a dozen Prisma calls per acquire. server/acquire/acquire-statement.ts
// runs it, coalesced on the pool (sixteen concurrent callers cost one round trip and one
// commit) or alone inside a caller's transaction. It reads every fact the decision needs from
// one snapshot of the catalog, takes the first rung of the ladder, and records the decision
// (lineage, pin, restore row) atomically, each only if its chosen snapshot is still in a state
// the decision allows, re-checked under FOR SHARE so retirement and head moves serialize
// against it. A decision whose world changed is not written and its caller tries again.
//
// The rung is taken in SQL so that reading and writing are one statement, but the ladder's
// definition stays chooseRestore in TypeScript: the caller runs it on the facts the statement
// returns and refuses a plan on which the two disagree (server/acquire/acquire-workspace.ts).
//
// Columns of type TIMESTAMP(3) hold UTC (Prisma's convention): values go in as ISO strings read
// AT TIME ZONE 'UTC', and come out the same way, whatever the session's time zone.
import type { StatementRunner } from "../dialect.ts";

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
  forkedFromId: string | null;
  /** The host of the lineage's unended live hold (null: none), so acquire looks for it only then. */
  heldOn: string | null;
}

/** What the ladder needs to know of a candidate snapshot (the full row is read only for the chosen one). */
interface PgCandidate {
  id: string;
  class: string;
  state: string;
  workContextId: string | null;
}

export interface PgAcquireFacts {
  repositoryId: string;
  lineage: PgLineageFacts | null;
  head: PgCandidate | null;
  baseline: PgCandidate | null;
  hasCheckpoints: boolean;
  /** The checkpoint an authorized fork began the lineage from, while it may still seed it. */
  forkSource: PgCandidate | null;
  /** The original the head names in degraded_from_id, while a partial restore of it is held. */
  heldOriginal: PgCandidate | null;
}

const snake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * A snapshot row as JSON with the given fields (camelCase names of the snapshots columns).
 * int8 and timestamps travel as text, so values beyond 2^53 and time zones stay exact.
 */
function refJson(alias: string, fields: readonly string[]): string {
  const pairs = fields.map((field) => {
    const column = `${alias}.${snake(field)}`;
    if (field === "sizeBytes") return `'${field}', ${column}::text`;
    if (field === "createdAt" || field === "readyAt") return `'${field}', ${column} AT TIME ZONE 'UTC'`;
    return `'${field}', ${column}`;
  });
  // json_build_object takes at most 100 arguments.
  if (pairs.length > 50) throw new Error("a snapshot ref has at most 50 fields");
  return `json_build_object(${pairs.join(", ")})`;
}

/** A candidate's ladder facts as JSON (null when there is no candidate). */
function candidateJson(alias: string): string {
  return (
    `CASE WHEN ${alias}.id IS NULL THEN NULL ELSE json_build_object('id', ${alias}.id, 'class', ${alias}.class, ` +
    `'state', ${alias}.state, 'workContextId', ${alias}.work_context_id) END`
  );
}

// Every lookup is a LATERAL subquery keyed by the request row, so each one is an index probe
// whatever the batch size (the planner cannot know how many rows jsonb_to_recordset yields and
// would hash-join whole tables); LIMIT 1 keeps it from flattening a subquery into such a join,
// so every one has it, even a lookup by primary key (without it, on a catalog of 10k snapshots
// the fork lookup became a sequential scan of all checkpoints: 4.7 ms of PostgreSQL's CPU per
// acquire instead of 0.6).
const acquireSql = (refFields: readonly string[]) => `
WITH facts AS (
  SELECT k.*, repo.id AS repository_id,
    lin.id AS lineage_id,
    CASE WHEN lin.id IS NULL THEN NULL ELSE json_build_object('id', lin.id, 'state', lin.state,
      'workContextId', lin.work_context_id, 'originSnapshotId', lin.origin_snapshot_id,
      'retiredReason', lin.retired_reason, 'forkedFromId', lin.forked_from_id,
      -- The host of the lineage's unended live hold, if any (its partial unique index answers).
      'heldOn', (SELECT h.host FROM live_holds h WHERE h.lineage_id = lin.id AND h.ended_at IS NULL LIMIT 1))
      END AS lineage,
    head.id AS head_id, ${candidateJson("head")} AS head_json,
    base.id AS base_id, ${candidateJson("base")} AS base_json,
    orig.id AS orig_id, ${candidateJson("orig")} AS orig_json,
    fork.id AS fork_id, ${candidateJson("fork")} AS fork_json,
    (head.id IS NOT NULL OR COALESCE(own.found, false)) AS has_checkpoints
  FROM jsonb_to_recordset($1::jsonb) AS k(i int, identity text, agent_id text, requested_work_context_id text,
    work_context_id text, backend_kind text, base_image text, canonical_ref text, workspace text, host text,
    now timestamptz, restore_id text, new_lineage_id text, pin_id text, holder text, pin_expires_at timestamptz)
  LEFT JOIN LATERAL (SELECT r.id FROM repositories r WHERE r.identity = k.identity LIMIT 1) repo ON true
  LEFT JOIN LATERAL (
    SELECT l.id, l.state, l.work_context_id, l.origin_snapshot_id, l.retired_reason, l.forked_from_id FROM lineages l
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
    LIMIT 1
  ) orig ON true
  LEFT JOIN LATERAL (
    SELECT true AS found FROM snapshots s
    WHERE head.id IS NULL AND s.lineage_id = lin.id AND s.class = 'checkpoint' AND s.failed_at IS NULL
    LIMIT 1
  ) own ON true
  LEFT JOIN LATERAL (
    -- A forked lineage with no checkpoint of its own: the checkpoint it was forked from, while
    -- ready or superseded (FORK_RESTORABLE).
    SELECT s.id, s.class, s.state, s.work_context_id FROM snapshots s
    WHERE head.id IS NULL AND NOT COALESCE(own.found, false) AND lin.state = 'active'
      AND s.id = lin.forked_from_id AND s.agent_id = k.agent_id
      AND s.class = 'checkpoint' AND s.state IN ('ready', 'superseded')
    LIMIT 1
  ) fork ON true
), decided AS (
  -- The first rung (chooseRestore): the own head (or the original a held partial restore of it
  -- names), else the checkpoint a fork began from, else the ready baseline, else cold.
  SELECT f.*,
    CASE WHEN f.head_id IS NOT NULL OR f.fork_id IS NOT NULL THEN 'checkpoint'
      WHEN f.base_id IS NOT NULL THEN 'baseline' ELSE 'cold' END AS rung,
    COALESCE(f.orig_id, f.head_id, f.fork_id, f.base_id) AS chosen_id,
    (f.orig_id IS NOT NULL OR (f.head_id IS NULL AND f.fork_id IS NOT NULL)) AS superseded_allowed
  FROM facts f WHERE f.repository_id IS NOT NULL
), locked AS (
  SELECT s.id, s.state, ${refJson("s", refFields)} AS ref FROM snapshots s
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
  f.orig_json AS "heldOriginal", f.fork_json AS "forkSource", f.has_checkpoints AS "hasCheckpoints", d.rung,
  chosen.ref AS chosen,
  EXISTS (SELECT 1 FROM rst WHERE rst.id = f.restore_id) AS recorded
FROM facts f
LEFT JOIN decided d ON d.i = f.i
LEFT JOIN locked chosen ON chosen.id = d.chosen_id`;

/** What the statement answers for one acquire, by its position `i` in the batch. */
export interface AcquireStatementRow {
  i: number;
  /** Null when the repository does not exist yet (nothing was decided). */
  repositoryId: string | null;
  lineage: PgLineageFacts | null;
  head: PgCandidate | null;
  baseline: PgCandidate | null;
  heldOriginal: PgCandidate | null;
  forkSource: PgCandidate | null;
  hasCheckpoints: boolean;
  rung: string | null;
  /** The chosen snapshot with `refFields`; sizeBytes, createdAt and readyAt as text. */
  chosen: Record<string, unknown> | null;
  /** Whether the decision was recorded; false when its world changed (decide again). */
  recorded: boolean;
}

/** The statement's text and its name on a connection, per list of ref fields. */
const statements = new Map<string, { name: string; text: string }>();

/**
 * Decides and records a batch of acquires in one statement; the chosen snapshots come back
 * with `refFields`. On the pool the statement is named, so each connection plans it once.
 */
export async function runAcquireStatement(
  runner: StatementRunner,
  requests: readonly AcquireRequest[],
  refFields: readonly string[],
): Promise<AcquireStatementRow[]> {
  const cacheKey = refFields.join(",");
  let statement = statements.get(cacheKey);
  if (!statement) {
    statement = { name: `strata_acquire_${statements.size + 1}`, text: acquireSql(refFields) };
    statements.set(cacheKey, statement);
  }
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
  return runner.query<AcquireStatementRow>(statement.name, statement.text, [JSON.stringify(input)]);
}

/** Creates the repository row unless a concurrent caller already did. */
export async function insertRepositoryIfAbsent(
  runner: StatementRunner,
  row: { id: string; identity: string; name: string },
): Promise<void> {
  await runner.query(
    "strata_acquire_repository",
    `INSERT INTO repositories (id, identity, name) VALUES ($1, $2, $3) ON CONFLICT (identity) DO NOTHING`,
    [row.id, row.identity, row.name],
  );
}
