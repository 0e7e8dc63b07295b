// The acquire hot path on PostgreSQL: set-based statements on the pg pool instead of a dozen
// Prisma calls per acquire. One statement reads every fact the decision needs, for a batch of
// acquires, from one snapshot of the catalog; another records a batch of decisions (lineage,
// pin, restore row) atomically, each only if its chosen snapshot is still in a state the
// decision allows, re-checked under FOR SHARE so retirement and head moves serialize against
// it. A decision whose world changed is not written and its caller decides again. Concurrent
// acquires are coalesced (server/db/coalesce.ts): sixteen callers cost two round trips and one
// commit, not thirty-two and sixteen. The decision itself is the shared TypeScript in
// workspaces.ts.
//
// Columns of type TIMESTAMP(3) hold UTC (Prisma's convention): values go in as ISO strings read
// AT TIME ZONE 'UTC', and come out the same way, whatever the session's time zone.
import type pg from "pg";
import { coalesce } from "../db/coalesce.ts";
import { isRetryableConflict } from "../db/errors.ts";
import { snapshotRefSelect, type SnapshotRefRow } from "./snapshots.ts";

export interface AcquireKey {
  agentId: string;
  repositoryIdentity: string;
  backendKind: string;
  baseImage: string;
  canonicalRef: string;
  /** Null for new work (no lineage can exist yet). */
  workContextId: string | null;
  /** The caller's clock, for the expiry of partial-restore holds. */
  now: Date;
}

export interface PgLineageFacts {
  id: string;
  state: string;
  workContextId: string;
  originSnapshotId: string | null;
  retiredReason: string | null;
}

export interface PgAcquireFacts {
  repositoryId: string;
  lineage: PgLineageFacts | null;
  head: SnapshotRefRow | null;
  baseline: SnapshotRefRow | null;
  hasCheckpoints: boolean;
  /** The original the head names in degraded_from_id, while a partial restore of it is held. */
  heldOriginal: SnapshotRefRow | null;
}

export interface AcquireRecord {
  restoreId: string;
  agentId: string;
  repositoryId: string;
  workContextId: string;
  backendKind: string;
  baseImage: string;
  canonicalRef: string;
  workspace: string;
  host: string;
  rung: string;
  createdAt: Date;
  /** The existing lineage, or the id of the one to create (beginning from the chosen snapshot). */
  lineage: { existing: boolean; id: string };
  /** The snapshot to pin, the states it may still be in, and the pin. */
  chosen: { snapshotId: string; states: readonly string[]; pinId: string; holder: string; expiresAt: Date } | null;
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

type JsonRef = Omit<SnapshotRefRow, "sizeBytes" | "createdAt" | "readyAt"> & {
  sizeBytes: string;
  createdAt: string;
  readyAt: string | null;
};

function toRefRow(json: JsonRef | null): SnapshotRefRow | null {
  if (!json) return null;
  return {
    ...json,
    sizeBytes: BigInt(json.sizeBytes),
    createdAt: new Date(json.createdAt),
    readyAt: json.readyAt === null ? null : new Date(json.readyAt),
  };
}

// Every lookup is a LATERAL subquery keyed by the request row, so each one is an index probe
// whatever the batch size (the planner cannot know how many rows jsonb_to_recordset yields and
// would hash-join whole tables); LIMIT 1 keeps it from flattening a subquery into such a join.
const FACTS_SQL = `
SELECT k.i,
  repo.id AS "repositoryId",
  CASE WHEN lin.id IS NULL THEN NULL ELSE json_build_object('id', lin.id, 'state', lin.state,
    'workContextId', lin.work_context_id, 'originSnapshotId', lin.origin_snapshot_id,
    'retiredReason', lin.retired_reason) END AS lineage,
  head.ref AS head,
  base.ref AS baseline,
  orig.ref AS "heldOriginal",
  COALESCE(own.found, false) AS "hasCheckpoints"
FROM jsonb_to_recordset($1::jsonb) AS k(i int, identity text, agent_id text, work_context_id text,
  backend_kind text, base_image text, canonical_ref text, now timestamptz)
LEFT JOIN LATERAL (SELECT r.id FROM repositories r WHERE r.identity = k.identity LIMIT 1) repo ON true
LEFT JOIN LATERAL (
  SELECT l.id, l.state, l.work_context_id, l.origin_snapshot_id, l.retired_reason FROM lineages l
  WHERE l.agent_id = k.agent_id AND l.work_context_id = k.work_context_id AND l.repository_id = repo.id
    AND l.backend_kind = k.backend_kind AND l.base_image = k.base_image
  LIMIT 1
) lin ON true
LEFT JOIN LATERAL (
  -- The key columns let the planner answer from the one-ready-checkpoint index.
  SELECT ${refJson("s")} AS ref, s.id, s.degraded_from_id FROM snapshots s
  WHERE lin.state = 'active' AND s.lineage_id = lin.id AND s.agent_id = k.agent_id
    AND s.work_context_id = k.work_context_id AND s.repository_id = repo.id AND s.backend_kind = k.backend_kind
    AND s.base_image = k.base_image AND s.class = 'checkpoint' AND s.state = 'ready'
  LIMIT 1
) head ON true
LEFT JOIN LATERAL (
  SELECT ${refJson("s")} AS ref FROM snapshots s
  WHERE head.id IS NULL AND s.agent_id = k.agent_id AND s.repository_id = repo.id
    AND s.backend_kind = k.backend_kind AND s.base_image = k.base_image AND s.canonical_ref = k.canonical_ref
    AND s.class = 'baseline' AND s.state = 'ready'
  LIMIT 1
) base ON true
LEFT JOIN LATERAL (
  SELECT ${refJson("o")} AS ref FROM snapshots o
  WHERE o.id = head.degraded_from_id AND o.agent_id = k.agent_id AND o.state IN ('ready', 'superseded')
    AND EXISTS (
      SELECT 1 FROM restores r JOIN pins p ON p.pin_id = r.pin_id
      WHERE r.snapshot_id = o.id AND r.agent_id = k.agent_id AND r.outcome = 'degraded'
        AND r.discarded_at IS NULL AND NOT p.released
        AND (p.expires_at IS NULL OR p.expires_at > (k.now AT TIME ZONE 'UTC')))
) orig ON true
LEFT JOIN LATERAL (
  SELECT true AS found FROM snapshots s
  WHERE s.lineage_id = lin.id AND s.class = 'checkpoint' AND s.failed_at IS NULL
  LIMIT 1
) own ON true`;

interface FactsRow {
  i: number;
  repositoryId: string | null;
  lineage: PgLineageFacts | null;
  head: JsonRef | null;
  baseline: JsonRef | null;
  heldOriginal: JsonRef | null;
  hasCheckpoints: boolean;
}

async function readFactsBatch(pool: pg.Pool, keys: AcquireKey[]): Promise<(PgAcquireFacts | null)[]> {
  const input = keys.map((key, i) => ({
    i,
    identity: key.repositoryIdentity,
    agent_id: key.agentId,
    work_context_id: key.workContextId,
    backend_kind: key.backendKind,
    base_image: key.baseImage,
    canonical_ref: key.canonicalRef,
    now: key.now.toISOString(),
  }));
  // A named statement is parsed and planned once per connection.
  const { rows } = await pool.query<FactsRow>({
    name: "strata_acquire_facts",
    text: FACTS_SQL,
    values: [JSON.stringify(input)],
  });
  const facts: (PgAcquireFacts | null)[] = keys.map(() => null);
  for (const row of rows) {
    if (!row.repositoryId) continue;
    facts[row.i] = {
      repositoryId: row.repositoryId,
      lineage: row.lineage,
      head: toRefRow(row.head),
      baseline: toRefRow(row.baseline),
      heldOriginal: toRefRow(row.heldOriginal),
      hasCheckpoints: row.hasCheckpoints,
    };
  }
  return facts;
}

const RECORD_SQL = `
WITH req AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(restore_id text, agent_id text, repository_id text,
    work_context_id text, backend_kind text, base_image text, canonical_ref text, workspace text, host text,
    rung text, created_at timestamptz, lineage_id text, new_lineage boolean, snapshot_id text, states text[],
    pin_id text, holder text, expires_at timestamptz)
), locked AS (
  SELECT s.id, s.state FROM snapshots s WHERE s.id = ANY($2::text[]) ORDER BY s.id FOR SHARE
), ok AS (
  SELECT req.* FROM req LEFT JOIN locked ON locked.id = req.snapshot_id
  WHERE req.snapshot_id IS NULL OR locked.state = ANY(req.states)
), lin AS (
  INSERT INTO lineages (id, agent_id, work_context_id, repository_id, backend_kind, base_image, origin_snapshot_id)
  SELECT lineage_id, agent_id, work_context_id, repository_id, backend_kind, base_image, snapshot_id
  FROM ok WHERE new_lineage
  ORDER BY agent_id, work_context_id
  ON CONFLICT DO NOTHING
  RETURNING id
), placed AS (
  SELECT ok.* FROM ok WHERE NOT ok.new_lineage OR ok.lineage_id IN (SELECT id FROM lin)
), pin AS (
  INSERT INTO pins (pin_id, snapshot_id, holder, purpose, created_at, expires_at)
  SELECT pin_id, snapshot_id, holder, 'restore', CURRENT_TIMESTAMP AT TIME ZONE 'UTC', expires_at AT TIME ZONE 'UTC'
  FROM placed WHERE snapshot_id IS NOT NULL
), rst AS (
  INSERT INTO restores (id, agent_id, repository_id, lineage_id, snapshot_id, backend_kind, base_image,
    canonical_ref, work_context_id, workspace, host, rung, pin_id, created_at)
  SELECT restore_id, agent_id, repository_id, lineage_id, snapshot_id, backend_kind, base_image, canonical_ref,
    work_context_id, workspace, host, rung, pin_id, created_at AT TIME ZONE 'UTC'
  FROM placed
  RETURNING id
)
SELECT id FROM rst`;

async function recordBatch(pool: pg.Pool, records: AcquireRecord[]): Promise<boolean[]> {
  const input = records.map((r) => ({
    restore_id: r.restoreId,
    agent_id: r.agentId,
    repository_id: r.repositoryId,
    work_context_id: r.workContextId,
    backend_kind: r.backendKind,
    base_image: r.baseImage,
    canonical_ref: r.canonicalRef,
    workspace: r.workspace,
    host: r.host,
    rung: r.rung,
    created_at: r.createdAt.toISOString(),
    lineage_id: r.lineage.id,
    new_lineage: !r.lineage.existing,
    snapshot_id: r.chosen?.snapshotId ?? null,
    states: r.chosen ? [...r.chosen.states] : null,
    pin_id: r.chosen?.pinId ?? null,
    holder: r.chosen?.holder ?? null,
    expires_at: r.chosen?.expiresAt.toISOString() ?? null,
  }));
  const snapshotIds = [...new Set(records.flatMap((r) => (r.chosen ? [r.chosen.snapshotId] : [])))];
  const { rows } = await pool.query<{ id: string }>({
    name: "strata_acquire_record",
    text: RECORD_SQL,
    values: [JSON.stringify(input), snapshotIds],
  });
  const recorded = new Set(rows.map((row) => row.id));
  return records.map((r) => recorded.has(r.restoreId));
}

/**
 * Most acquires per statement, and statements of each kind at once, per pool. While one batch
 * runs the next gathers; on two cores one in flight gave the most acquires per second and the
 * lowest p99 (two and three spent the CPU on more, smaller statements).
 */
const MAX_BATCH = 32;
const MAX_IN_FLIGHT = 1;

interface PoolAcquirer {
  facts(key: AcquireKey): Promise<PgAcquireFacts | null>;
  record(record: AcquireRecord): Promise<boolean>;
}

const acquirers = new WeakMap<pg.Pool, PoolAcquirer>();

function acquirerFor(pool: pg.Pool): PoolAcquirer {
  let acquirer = acquirers.get(pool);
  if (!acquirer) {
    const options = { maxBatch: MAX_BATCH, maxInFlight: MAX_IN_FLIGHT, isBatchError: isRetryableConflict };
    acquirer = {
      facts: coalesce((keys: AcquireKey[]) => readFactsBatch(pool, keys), options),
      record: coalesce((records: AcquireRecord[]) => recordBatch(pool, records), options),
    };
    acquirers.set(pool, acquirer);
  }
  return acquirer;
}

/** Everything the decision needs, from one snapshot of the catalog; null when the repository is new. */
export function readAcquireFactsPg(pool: pg.Pool, key: AcquireKey): Promise<PgAcquireFacts | null> {
  return acquirerFor(pool).facts(key);
}

/**
 * Records an acquire atomically (with the others of its batch). False when nothing was written
 * for it because the chosen snapshot left the allowed states or a concurrent acquire created
 * the same lineage: the caller decides again from fresh facts.
 */
export function recordAcquirePg(pool: pg.Pool, record: AcquireRecord): Promise<boolean> {
  return acquirerFor(pool).record(record);
}

/** Creates the repository row unless a concurrent caller already did. */
export async function createRepositoryPg(pool: pg.Pool, row: { id: string; identity: string; name: string }) {
  await pool.query({
    name: "strata_acquire_repository",
    text: `INSERT INTO repositories (id, identity, name) VALUES ($1, $2, $3) ON CONFLICT (identity) DO NOTHING`,
    values: [row.id, row.identity, row.name],
  });
}
