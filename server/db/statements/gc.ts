// The statements of garbage collection (server/gc/): the run's lease lock, the scans for layers
// and blobs nothing needs any more, the locks that arbitrate with publishers, and the collection
// page's reachability counts. Each takes the catalog client or a transaction and plain values;
// what differs between the providers comes from the handle's dialect.
import type { Db } from "../client.ts";
import { dialectOf } from "../dialect.ts";
import { toNumber } from "../sql.ts";

/** Locks the named lease row FOR UPDATE (nothing on SQLite: the transaction holds the database). */
export async function lockLeaseRow(tx: Db, name: string): Promise<void> {
  const sql = dialectOf(tx);
  await tx.$queryRawUnsafe(`SELECT name FROM leases WHERE name = ${sql.p(1)}${sql.lock("update")}`, name);
}

// --- What still references a blob -------------------------------------------------------------

/**
 * The digests among `digests` that a layer not yet deleted has, leaving out the layers
 * `exceptLayers` (by row key).
 */
export async function liveLayerDigests(
  tx: Db,
  digests: readonly string[],
  exceptLayers: readonly string[] = [],
): Promise<string[]> {
  const sql = dialectOf(tx);
  const exclude =
    exceptLayers.length > 0 ? ` AND uuid NOT IN ${sql.list(exceptLayers.length, digests.length + 1)}` : "";
  const rows = await tx.$queryRawUnsafe<{ digest: string }[]>(
    `SELECT DISTINCT digest FROM layers WHERE digest IN ${sql.list(digests.length)} AND state <> 'deleted'${exclude}`,
    ...digests,
    ...exceptLayers,
  );
  return rows.map((r) => r.digest);
}

/** The digests among `digests` that are the manifest of a snapshot not yet deleted. */
export async function liveManifestDigests(tx: Db, digests: readonly string[]): Promise<string[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ digest: string }[]>(
    `SELECT DISTINCT manifest_digest AS digest FROM snapshots WHERE manifest_digest IN ${sql.list(digests.length)} ` +
      `AND state <> 'deleted'`,
    ...digests,
  );
  return rows.map((r) => r.digest);
}

/** The digests among `digests` that a live snapshot's `metadata.manifest.blobDigests` lists. */
export async function listedBlobDigests(tx: Db, digests: readonly string[]): Promise<string[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ digest: string }[]>(
    sql.listedBlobDigests(sql.list(digests.length)),
    ...digests,
  );
  return rows.map((r) => r.digest);
}

/** The digests among `digests` that a dependency cache not yet deleted needs. */
export async function cachedBlobDigests(tx: Db, digests: readonly string[]): Promise<string[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ digest: string }[]>(
    `SELECT DISTINCT d.digest AS digest FROM dependency_cache_blobs d JOIN dependency_caches c ON c.id = d.cache_id ` +
      `WHERE d.digest IN ${sql.list(digests.length)} AND c.state <> 'deleted'`,
    ...digests,
  );
  return rows.map((r) => r.digest);
}

// --- Blobs ------------------------------------------------------------------------------------

/**
 * Locks the stored blobs with the given ids, or with the given digests, FOR UPDATE SKIP LOCKED
 * (rows a publish holds are skipped), in id order; returns the ids it locked.
 */
export async function lockStoredBlobsSkipLocked(
  tx: Db,
  where: { ids: readonly string[] } | { digests: readonly string[] },
): Promise<string[]> {
  const sql = dialectOf(tx);
  const [column, keys] = "ids" in where ? ["id", where.ids] : ["digest", where.digests];
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    `SELECT id FROM blobs WHERE state = 'stored' AND ${column} IN ${sql.list(keys.length)} ` +
      `ORDER BY id${sql.lock("update skip locked")}`,
    ...keys,
  );
  return rows.map((r) => r.id);
}

/** Deletes the agents' grants of those digests of which no blob is stored any more; returns how many. */
export function deleteGrantsOfUnstored(tx: Db, digests: readonly string[]): Promise<number> {
  const sql = dialectOf(tx);
  return tx.$executeRawUnsafe(
    `DELETE FROM blob_grants WHERE digest IN ${sql.list(digests.length)} ` +
      `AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.digest = blob_grants.digest AND b.state = 'stored')`,
    ...digests,
  );
}

/**
 * Up to `limit` stored blobs after `after` (id order), last used at or before `usedBefore`,
 * that no live layer and no live snapshot's manifest names. A cheap pre-filter: the caller
 * re-checks after locking.
 */
export async function unreferencedStoredBlobs(
  db: Db,
  opts: { after: string; usedBefore: Date; limit: number },
): Promise<{ id: string; sizeBytes: number }[]> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<{ id: string; size_bytes: bigint | number }[]>(
    `SELECT b.id, b.size_bytes FROM blobs b WHERE b.state = 'stored' AND b.id > ${sql.p(1)} ` +
      `AND COALESCE(b.last_reused_at, b.stored_at) <= ${sql.p(2)} ` +
      `AND NOT EXISTS (SELECT 1 FROM layers l WHERE l.digest = b.digest AND l.state <> 'deleted') ` +
      `AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.manifest_digest = b.digest AND s.state <> 'deleted') ` +
      `AND NOT EXISTS (SELECT 1 FROM dependency_cache_blobs d JOIN dependency_caches c ON c.id = d.cache_id ` +
      `WHERE d.digest = b.digest AND c.state <> 'deleted') ` +
      `ORDER BY b.id LIMIT ${sql.p(3)}`,
    opts.after,
    opts.usedBefore,
    opts.limit,
  );
  return rows.map((r) => ({ id: r.id, sizeBytes: toNumber(r.size_bytes) }));
}

/** The ids of up to `limit` uploads begun at or before `startedBefore` and never finished (id order). */
export async function abandonedUploads(db: Db, startedBefore: Date, limit: number): Promise<string[]> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<{ id: string }[]>(
    `SELECT id FROM blobs WHERE state = 'uploading' AND stored_at <= ${sql.p(1)} ORDER BY id LIMIT ${sql.p(2)}`,
    startedBefore,
    limit,
  );
  return rows.map((r) => r.id);
}

// --- Layers -----------------------------------------------------------------------------------

/** Up to `limit` available layers after `cursor` with no head and no available child (uuid order). */
export async function leafLayerCandidates(db: Db, cursor: string, limit: number): Promise<string[]> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<{ uuid: string }[]>(
    `SELECT l.uuid FROM layers l${sql.indexedBy("sqlite_autoindex_layers_1")} ` +
      `WHERE l.state = 'available' AND l.uuid > ${sql.p(1)} ` +
      `AND NOT EXISTS (SELECT 1 FROM snapshot_heads h WHERE h.layer_uuid = l.uuid) ` +
      `AND NOT EXISTS (SELECT 1 FROM layers c${sql.indexedBy("layers_parent_uuid_idx")} ` +
      `WHERE c.parent_uuid = l.uuid AND c.state = 'available') ` +
      `ORDER BY l.uuid LIMIT ${sql.p(2)}`,
    cursor,
    limit,
  );
  return rows.map((r) => r.uuid);
}

/** Locks the available layers among `uuids` FOR UPDATE SKIP LOCKED (uuid order) and reads them. */
export async function lockAvailableLayersSkipLocked(
  tx: Db,
  uuids: readonly string[],
): Promise<{ uuid: string; parentUuid: string | null; sizeBytes: number }[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ uuid: string; parent_uuid: string | null; size_bytes: bigint | number }[]>(
    `SELECT uuid, parent_uuid, size_bytes FROM layers WHERE state = 'available' AND uuid IN ${sql.list(uuids.length)} ` +
      `ORDER BY uuid${sql.lock("update skip locked")}`,
    ...uuids,
  );
  return rows.map((r) => ({ uuid: r.uuid, parentUuid: r.parent_uuid, sizeBytes: toNumber(r.size_bytes) }));
}

/** The layers among `uuids` that are some snapshot's head. */
export async function headedLayers(tx: Db, uuids: readonly string[]): Promise<string[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ layer_uuid: string }[]>(
    `SELECT DISTINCT layer_uuid FROM snapshot_heads WHERE layer_uuid IN ${sql.list(uuids.length)}`,
    ...uuids,
  );
  return rows.map((r) => r.layer_uuid);
}

/** The available layers whose parent is among `parentUuids`. */
export async function availableChildren(
  tx: Db,
  parentUuids: readonly string[],
): Promise<{ uuid: string; parentUuid: string }[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ uuid: string; parent_uuid: string }[]>(
    `SELECT uuid, parent_uuid FROM layers${sql.indexedBy("layers_parent_uuid_idx")} ` +
      `WHERE state = 'available' AND parent_uuid IN ${sql.list(parentUuids.length)}`,
    ...parentUuids,
  );
  return rows.map((r) => ({ uuid: r.uuid, parentUuid: r.parent_uuid }));
}

/** The two steps of a layer's collection: marked (available → deleting), then freed (deleting → deleted). */
type LayerStep = { from: "available"; to: "deleting" } | { from: "deleting"; to: "deleted" };

/**
 * Moves the layers among `uuids` that are in `step.from` to `step.to`, stamping `<to>_at` with
 * `now`; returns how many moved.
 */
export function moveLayers(tx: Db, uuids: readonly string[], step: LayerStep, now: Date): Promise<number> {
  const sql = dialectOf(tx);
  return tx.$executeRawUnsafe(
    `UPDATE layers SET state = '${step.to}', ${step.to}_at = ${sql.p(1)} WHERE state = '${step.from}' AND uuid IN ${sql.list(uuids.length, 2)}`,
    now,
    ...uuids,
  );
}

/**
 * Locks the deleting layers among `uuids` FOR UPDATE (waiting for a lock rather than skipping
 * it), in uuid order, and reads their digests.
 */
export async function lockDeletingLayers(
  tx: Db,
  uuids: readonly string[],
): Promise<{ uuid: string; digest: string; sizeBytes: number }[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ uuid: string; digest: string; size_bytes: bigint | number }[]>(
    `SELECT uuid, digest, size_bytes FROM layers WHERE state = 'deleting' AND uuid IN ${sql.list(uuids.length)} ` +
      `ORDER BY uuid${sql.lock("update")}`,
    ...uuids,
  );
  return rows.map((r) => ({ uuid: r.uuid, digest: r.digest, sizeBytes: toNumber(r.size_bytes) }));
}

/** Up to `limit` deleting layers after `cursor` (uuid order): what an interrupted run left. */
export async function deletingLayersAfter(
  db: Db,
  cursor: string,
  limit: number,
): Promise<{ uuid: string; sizeBytes: number }[]> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<{ uuid: string; size_bytes: bigint | number }[]>(
    `SELECT uuid, size_bytes FROM layers WHERE state = 'deleting' AND uuid > ${sql.p(1)} ORDER BY uuid LIMIT ${sql.p(2)}`,
    cursor,
    limit,
  );
  return rows.map((r) => ({ uuid: r.uuid, sizeBytes: toNumber(r.size_bytes) }));
}

// --- The collection page ----------------------------------------------------------------------

// Every layer some head reaches, by parent links (the same on SQLite and PostgreSQL).
const REACHABLE = `WITH RECURSIVE reach(uuid) AS (
    SELECT layer_uuid FROM snapshot_heads
    UNION
    SELECT l.parent_uuid FROM layers l JOIN reach r ON l.uuid = r.uuid WHERE l.parent_uuid IS NOT NULL
  )`;

/** Raw timestamps: Date on PostgreSQL; text or epoch milliseconds on SQLite. */
function toDate(value: Date | string | number | bigint): Date {
  if (value instanceof Date) return value;
  return new Date(typeof value === "bigint" ? Number(value) : value);
}

/** How many available layers no head reaches, and their bytes (collected by the next run). */
export async function unreachableLayerTotals(db: Db): Promise<{ count: number; bytes: number }> {
  const [row] = await db.$queryRawUnsafe<{ count: bigint | number; bytes: bigint | number | null }[]>(
    `${REACHABLE} SELECT COUNT(*) AS count, SUM(size_bytes) AS bytes FROM layers
        WHERE state = 'available' AND uuid NOT IN (SELECT uuid FROM reach)`,
  );
  return { count: toNumber(row?.count), bytes: toNumber(row?.bytes) };
}

/**
 * Up to `limit` layers pending deletion, deleting ones first, then available ones no head
 * reaches, oldest first. Each is named by the uuid its agent declared (the row key is the
 * catalog's own).
 */
export async function layersPendingDeletion(
  db: Db,
  limit: number,
): Promise<
  {
    uuid: string;
    kind: string;
    digest: string;
    sizeBytes: number;
    state: string;
    createdAt: Date;
    deletingAt: Date | null;
  }[]
> {
  const rows = await db.$queryRawUnsafe<
    {
      uuid: string;
      kind: string;
      digest: string;
      size_bytes: bigint | number;
      state: string;
      created_at: Date | string | number | bigint;
      deleting_at: Date | string | number | bigint | null;
    }[]
  >(
    `${REACHABLE} SELECT l.agent_uuid AS uuid, l.kind, l.digest, l.size_bytes, l.state, l.created_at, l.deleting_at
        FROM layers l WHERE l.state = 'deleting' OR (l.state = 'available' AND l.uuid NOT IN (SELECT uuid FROM reach))
        ORDER BY l.state DESC, l.created_at ASC, l.uuid ASC LIMIT ${Math.trunc(limit)}`,
  );
  return rows.map((p) => ({
    uuid: p.uuid,
    kind: p.kind,
    digest: p.digest,
    sizeBytes: toNumber(p.size_bytes),
    state: p.state,
    createdAt: toDate(p.created_at),
    deletingAt: p.deleting_at === null ? null : toDate(p.deleting_at),
  }));
}
