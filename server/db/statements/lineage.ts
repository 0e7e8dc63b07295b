// The statements of lineages and retirement (server/lineage/): the scan for retired snapshots
// whose heads wait to be released, and the row locks that serialize head release with new pins.
// Each takes the catalog client or a transaction and plain values; what differs between the
// providers comes from the handle's dialect.
import type { Db } from "../client.ts";
import { dialectOf } from "../dialect.ts";

/**
 * Up to `limit` snapshot ids after `cursor` (id order) with head-release work: retired or
 * deleted ones that still have heads, and deleting ones.
 */
export async function snapshotsWithHeadsToRelease(db: Db, cursor: string, limit: number): Promise<string[]> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<{ id: string }[]>(
    `SELECT s.id FROM snapshots s WHERE s.state IN ('retired', 'deleting', 'deleted') AND s.id > ${sql.p(1)} ` +
      `AND (s.state = 'deleting' OR EXISTS (SELECT 1 FROM snapshot_heads h WHERE h.snapshot_id = s.id)) ` +
      `ORDER BY s.id LIMIT ${sql.p(2)}`,
    cursor,
    limit,
  );
  return rows.map((r) => r.id);
}

/** Locks the snapshot rows of `ids` FOR UPDATE, in id order, in one statement. */
export async function lockSnapshots(tx: Db, ids: readonly string[]): Promise<void> {
  const sql = dialectOf(tx);
  await tx.$queryRawUnsafe(
    `SELECT id FROM snapshots WHERE id IN ${sql.list(ids.length)} ORDER BY id${sql.lock("update")}`,
    ...ids,
  );
}
