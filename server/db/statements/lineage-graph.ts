// The statements of the dashboard's lineage graph (server/dashboard/lineage-graph.ts): every
// snapshot of a repository in one pass, and the per-snapshot facts its badges need (active
// pins, degraded restores). Raw rows, because a 50,000-snapshot repository is read on every
// graph request and Prisma's row mapping alone would take seconds there.
import type { Db } from "../client.ts";
import { dialectOf } from "../dialect.ts";

export interface GraphSnapshotRow {
  id: string;
  class: string;
  state: string;
  agentId: string;
  backendKind: string;
  baseImage: string;
  canonicalRef: string | null;
  lineageId: string | null;
  workContextId: string | null;
  sequence: number | null;
  predecessorId: string | null;
  headCommit: string | null;
  branch: string | null;
  alias: string | null;
  degradedFromId: string | null;
  /** Milliseconds since the epoch. */
  createdAt: number;
  lastRestoredAt: number | null;
}

/** A timestamp as the driver returns it (text or epoch ms on SQLite, a Date on PostgreSQL), in ms. */
function ms(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "bigint") return Number(value);
  return new Date(value as string | number | Date).getTime();
}

function int(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

/** Every snapshot of the repository, oldest first. */
export async function graphSnapshotRows(db: Db, repositoryId: string): Promise<GraphSnapshotRow[]> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<Record<string, unknown>[]>(
    `SELECT id, class, state, agent_id, backend_kind, base_image, canonical_ref, lineage_id, work_context_id, ` +
      `sequence, predecessor_id, head_commit, branch, alias, degraded_from_id, created_at, last_restored_at ` +
      `FROM snapshots WHERE repository_id = ${sql.p(1)} ORDER BY created_at ASC, id DESC`,
    repositoryId,
  );
  return rows.map((r) => ({
    id: r.id as string,
    class: r.class as string,
    state: r.state as string,
    agentId: r.agent_id as string,
    backendKind: r.backend_kind as string,
    baseImage: r.base_image as string,
    canonicalRef: (r.canonical_ref as string | null) ?? null,
    lineageId: (r.lineage_id as string | null) ?? null,
    workContextId: (r.work_context_id as string | null) ?? null,
    sequence: int(r.sequence),
    predecessorId: (r.predecessor_id as string | null) ?? null,
    headCommit: (r.head_commit as string | null) ?? null,
    branch: (r.branch as string | null) ?? null,
    alias: (r.alias as string | null) ?? null,
    degradedFromId: (r.degraded_from_id as string | null) ?? null,
    createdAt: ms(r.created_at) ?? 0,
    lastRestoredAt: ms(r.last_restored_at),
  }));
}

/** How many active pins (unreleased, unexpired at `now`) each of the repository's snapshots has. */
export async function graphActivePinCounts(db: Db, repositoryId: string, now: Date): Promise<Map<string, number>> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<{ snapshot_id: string; pins: unknown }[]>(
    `SELECT p.snapshot_id, COUNT(*) AS pins FROM pins p JOIN snapshots s ON s.id = p.snapshot_id ` +
      `WHERE s.repository_id = ${sql.p(1)} AND p.released = false ` +
      `AND (p.expires_at IS NULL OR p.expires_at > ${sql.p(2)}) GROUP BY p.snapshot_id`,
    repositoryId,
    now,
  );
  return new Map(rows.map((r) => [r.snapshot_id, Number(r.pins)]));
}

/** The restores of the repository that seeded a lineage or were degraded, oldest first. */
export async function graphRestoreRows(
  db: Db,
  repositoryId: string,
): Promise<{ snapshotId: string; lineageId: string | null; outcome: string; discarded: boolean; createdAt: number }[]> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<Record<string, unknown>[]>(
    `SELECT snapshot_id, lineage_id, outcome, discarded_at, created_at FROM restores ` +
      `WHERE repository_id = ${sql.p(1)} AND snapshot_id IS NOT NULL ORDER BY created_at ASC`,
    repositoryId,
  );
  return rows.map((r) => ({
    snapshotId: r.snapshot_id as string,
    lineageId: (r.lineage_id as string | null) ?? null,
    outcome: r.outcome as string,
    discarded: r.discarded_at !== null && r.discarded_at !== undefined,
    createdAt: ms(r.created_at) ?? 0,
  }));
}

/**
 * A value that changes whenever the repository's graph (less its pins) does: every snapshot
 * transition stamps a column of its own (ready_at, superseded_at, retired_at, …) and none is
 * ever cleared, so counting the stamped ones sees each one; lineages and restores likewise.
 * One aggregate statement, milliseconds where reading the graph takes seconds.
 */
export async function graphFingerprint(db: Db, repositoryId: string): Promise<string> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<Record<string, unknown>[]>(
    `SELECT ` +
      `(SELECT COUNT(*) FROM snapshots WHERE repository_id = ${sql.p(1)}) AS s, ` +
      `(SELECT COUNT(ready_at) + 7 * COUNT(superseded_at) + 53 * COUNT(retired_at) + 389 * COUNT(failed_at) ` +
      `+ 2851 * COUNT(deleting_at) + 20897 * COUNT(deleted_at) + 153137 * COUNT(last_restored_at) ` +
      `+ 1122337 * COUNT(alias) + 8224663 * COUNT(degraded_from_id) FROM snapshots WHERE repository_id = ${sql.p(2)}) AS t, ` +
      `(SELECT MAX(last_restored_at) FROM snapshots WHERE repository_id = ${sql.p(3)}) AS r, ` +
      `(SELECT COUNT(*) + 1000003 * COUNT(retired_at) FROM lineages WHERE repository_id = ${sql.p(4)}) AS l, ` +
      `(SELECT COUNT(*) + 1000003 * COUNT(reported_at) + 7 * COUNT(discarded_at) FROM restores ` +
      `WHERE repository_id = ${sql.p(5)}) AS x`,
    ...Array<string>(5).fill(repositoryId),
  );
  const row = rows[0] ?? {};
  return [row.s, row.t, ms(row.r), row.l, row.x].map((v) => String(v ?? "")).join(":");
}
