// The statements of content (server/content/): blob chunks and grants, the row locks that
// arbitrate publishers with collection, the agent-scoped layer lookups of a publish, and the
// agent's pin list. Each takes the catalog client or a transaction and plain values; what differs
// between the providers comes from the handle's dialect.
import type { Db } from "../client.ts";
import { dialectOf } from "../dialect.ts";
import { toNumber } from "../sql.ts";

// --- Blobs ------------------------------------------------------------------------------------

/** Grants `agentId` the digest at `now` unless it has it; true when the grant is new. */
export async function insertBlobGrant(tx: Db, agentId: string, digest: string, now: Date): Promise<boolean> {
  const sql = dialectOf(tx);
  const added = await tx.$executeRawUnsafe(
    `INSERT INTO blob_grants (agent_id, digest, created_at) VALUES (${sql.p(1)}, ${sql.p(2)}, ${sql.p(3)}) ` +
      `ON CONFLICT DO NOTHING`,
    agentId,
    digest,
    now,
  );
  return added === 1;
}

/** Locks the stored blob of a digest FOR UPDATE and reads it; null when none is stored. */
export async function lockStoredBlob(tx: Db, digest: string): Promise<{ id: string; chunkCount: number } | null> {
  const sql = dialectOf(tx);
  const [row] = await tx.$queryRawUnsafe<{ id: string; chunk_count: number | bigint }[]>(
    `SELECT id, chunk_count FROM blobs WHERE digest = ${sql.p(1)} AND state = 'stored'${sql.lock("update")}`,
    digest,
  );
  return row ? { id: row.id, chunkCount: toNumber(row.chunk_count) } : null;
}

/** Writes one chunk of a blob's bytes (straight to the driver on the client: see Dialect.blobChunks). */
export function insertBlobChunk(db: Db, blobId: string, seq: number, data: Uint8Array): Promise<void> {
  return dialectOf(db).blobChunks.insert(db, blobId, seq, data);
}

/** The bytes of one chunk of a blob; null when there is no such chunk (the blob was collected). */
export function readBlobChunk(db: Db, blobId: string, seq: number): Promise<Buffer | null> {
  return dialectOf(db).blobChunks.read(db, blobId, seq);
}

/**
 * The stored blobs of at most one chunk among `digests` that `agentId` holds a grant of, with
 * the bytes of their chunk (null for an empty blob, or a chunk gone meanwhile): one query.
 */
export async function readSmallGrantedChunks(
  db: Db,
  agentId: string,
  digests: readonly string[],
): Promise<{ digest: string; sizeBytes: number; bytes: Buffer | null }[]> {
  const sql = dialectOf(db);
  const rows = await db.$queryRawUnsafe<{ digest: string; size_bytes: number | bigint; text: string | null }[]>(
    `SELECT b.digest, b.size_bytes, ${sql.chunkText.of("c.data")} AS text FROM blob_grants g ` +
      `JOIN blobs b ON b.digest = g.digest AND b.state = 'stored' AND b.chunk_count <= 1 ` +
      `LEFT JOIN blob_chunks c ON c.blob_id = b.id AND c.seq = 0 ` +
      `WHERE g.agent_id = ${sql.p(1)} AND g.digest IN ${sql.list(digests.length, 2)}`,
    agentId,
    ...digests,
  );
  return rows.map((r) => ({
    digest: r.digest,
    sizeBytes: toNumber(r.size_bytes),
    bytes: r.text === null ? null : sql.chunkText.decode(r.text),
  }));
}

/** Locks the stored blobs among `digests` FOR UPDATE (digest order); returns the digests found. */
export async function lockStoredDigests(tx: Db, digests: readonly string[]): Promise<string[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ digest: string }[]>(
    `SELECT digest FROM blobs WHERE state = 'stored' AND digest IN ${sql.list(digests.length)} ORDER BY digest${sql.lock("update")}`,
    ...digests,
  );
  return rows.map((r) => r.digest);
}

/**
 * Locks the stored blobs among `digests` that nobody holds a grant of FOR UPDATE (digest
 * order); returns their ids.
 */
export async function lockUngrantedStoredBlobs(tx: Db, digests: readonly string[]): Promise<string[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    `SELECT id FROM blobs b WHERE b.state = 'stored' AND b.digest IN ${sql.list(digests.length)} ` +
      `AND NOT EXISTS (SELECT 1 FROM blob_grants g WHERE g.digest = b.digest) ORDER BY b.digest${sql.lock("update")}`,
    ...digests,
  );
  return rows.map((r) => r.id);
}

/**
 * Locks the stored blobs among `digests` granted to `agentId` FOR SHARE (digest order) and
 * reads their sizes. The grant is tested in a subquery, so only the blob rows are locked.
 */
export async function lockGrantedStoredBlobs(
  tx: Db,
  agentId: string,
  digests: readonly string[],
): Promise<{ digest: string; sizeBytes: number }[]> {
  const sql = dialectOf(tx);
  // Placeholders in text order: SQLite binds `?` by position.
  const rows = await tx.$queryRawUnsafe<{ digest: string; size_bytes: bigint | number }[]>(
    `SELECT b.digest, b.size_bytes FROM blobs b WHERE b.state = 'stored' ` +
      `AND EXISTS (SELECT 1 FROM blob_grants g WHERE g.agent_id = ${sql.p(1)} AND g.digest = b.digest) ` +
      `AND b.digest IN ${sql.list(digests.length, 2)} ORDER BY b.digest${sql.lock("share")}`,
    agentId,
    ...digests,
  );
  return rows.map((r) => ({ digest: r.digest, sizeBytes: toNumber(r.size_bytes) }));
}

// --- Layers -----------------------------------------------------------------------------------

/** A layer of one agent: its row key, its own and its parent's agent uuids, and what it holds. */
export interface AgentLayerRow {
  uuid: string;
  agentUuid: string;
  parentAgentUuid: string | null;
  digest: string;
  sizeBytes: bigint;
  kind: string;
  state: string;
}

/** The agent's layers among `agentUuids` (agent uuids). Another agent's are simply not found. */
export async function selectLayersOfAgent(
  tx: Db,
  agentId: string,
  agentUuids: readonly string[],
): Promise<AgentLayerRow[]> {
  const sql = dialectOf(tx);
  const rows = await tx.$queryRawUnsafe<
    {
      uuid: string;
      agent_uuid: string;
      parent_agent_uuid: string | null;
      digest: string;
      size_bytes: bigint | number;
      kind: string;
      state: string;
    }[]
  >(
    `SELECT l.uuid, l.agent_uuid, p.agent_uuid AS parent_agent_uuid, l.digest, l.size_bytes, l.kind, l.state ` +
      `FROM layers l LEFT JOIN layers p ON p.uuid = l.parent_uuid ` +
      `WHERE l.agent_id = ${sql.p(1)} AND l.agent_uuid IN ${sql.list(agentUuids.length, 2)}`,
    agentId,
    ...agentUuids,
  );
  return rows.map((r) => ({
    uuid: r.uuid,
    agentUuid: r.agent_uuid,
    parentAgentUuid: r.parent_agent_uuid,
    digest: r.digest,
    sizeBytes: BigInt(r.size_bytes),
    kind: r.kind,
    state: r.state,
  }));
}

/** Locks layer rows (by row key) FOR SHARE, in uuid order, and reads their states. */
export function lockLayerStates(tx: Db, uuids: readonly string[]): Promise<{ uuid: string; state: string }[]> {
  const sql = dialectOf(tx);
  return tx.$queryRawUnsafe<{ uuid: string; state: string }[]>(
    `SELECT uuid, state FROM layers WHERE uuid IN ${sql.list(uuids.length)} ORDER BY uuid${sql.lock("share")}`,
    ...uuids,
  );
}

/** Locks a snapshot row FOR UPDATE and reads what a publish checks, in one statement; null when missing. */
export async function lockSnapshotForPublish(
  tx: Db,
  snapshotId: string,
): Promise<{ state: string; agentId: string; manifestDigest: string | null } | null> {
  const sql = dialectOf(tx);
  const [row] = await tx.$queryRawUnsafe<{ state: string; agent_id: string; manifest_digest: string | null }[]>(
    `SELECT state, agent_id, manifest_digest FROM snapshots WHERE id = ${sql.p(1)}${sql.lock("update")}`,
    snapshotId,
  );
  return row ? { state: row.state, agentId: row.agent_id, manifestDigest: row.manifest_digest } : null;
}

// --- Pins -------------------------------------------------------------------------------------

/**
 * Holds the agent's own snapshot row FOR SHARE and reads its state, in one statement; null when
 * there is no such snapshot of this agent, whether it is missing or another agent's.
 */
export async function shareOwnSnapshot(tx: Db, snapshotId: string, agentId: string): Promise<{ state: string } | null> {
  const sql = dialectOf(tx);
  const [row] = await tx.$queryRawUnsafe<{ state: string }[]>(
    `SELECT state FROM snapshots WHERE id = ${sql.p(1)} AND agent_id = ${sql.p(2)}${sql.lock("share")}`,
    snapshotId,
    agentId,
  );
  return row ?? null;
}

/**
 * The ids of up to `limit` of the agent's pins on its own snapshots, newest first: of one
 * snapshot when `snapshotId` is given, and only those that protect at `active.at` (or only those
 * that do not) when `active` is given.
 */
export async function agentPinIds(
  db: Db,
  opts: { agentId: string; snapshotId?: string; active?: { protecting: boolean; at: Date }; limit: number },
): Promise<string[]> {
  const sql = dialectOf(db);
  const params: unknown[] = [opts.agentId];
  let where = `p.agent_id = ${sql.p(1)}`;
  if (opts.snapshotId) {
    params.push(opts.snapshotId);
    where += ` AND p.snapshot_id = ${sql.p(params.length)}`;
  }
  if (opts.active) {
    params.push(opts.active.at);
    const activeSql = `(p.released = false AND (p.expires_at IS NULL OR p.expires_at > ${sql.p(params.length)}))`;
    where += opts.active.protecting ? ` AND ${activeSql}` : ` AND NOT ${activeSql}`;
  }
  params.push(opts.limit);
  const rows = await db.$queryRawUnsafe<{ pin_id: string }[]>(
    `SELECT p.pin_id FROM pins p JOIN snapshots s ON s.id = p.snapshot_id AND s.agent_id = p.agent_id WHERE ${where} ` +
      `ORDER BY p.created_at DESC, p.pin_id ASC LIMIT ${sql.p(params.length)}`,
    ...params,
  );
  return rows.map((r) => r.pin_id);
}
