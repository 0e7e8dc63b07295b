// Test support for the content services: owners, capturing snapshots, stored bytes, a
// readable dump of the content tables, and the catalog's consistency rules as a checker.
// Used by tests only (and by the child process the kill tests spawn).
import { createHash, randomUUID } from "node:crypto";
import type { Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import { putBlob } from "../content/blobs.ts";
import type { LayerDescriptor } from "../domain/content.ts";

export interface Owner {
  agentId: string;
  repositoryId: string;
}

export async function createOwner(db: Db, name = `agent-${randomUUID().slice(0, 8)}`): Promise<Owner> {
  const agent = await db.agent.create({ data: { name } });
  const repository = await db.repository.create({
    data: { identity: `example.test/${name}/${randomUUID()}`, name: "app" },
  });
  return { agentId: agent.id, repositoryId: repository.id };
}

/**
 * A ready baseline-class snapshot row written with SQL, for migration tests on a catalog of an
 * earlier schema (the Prisma client writes every column the current schema has).
 */
export async function insertReadySnapshot(
  db: Db,
  owner: Owner,
  opts: { createdAt?: Date; manifestDigest?: string | null; metadata?: object | null } = {},
): Promise<string> {
  const id = randomUUID();
  const sql = dialectOf(db);
  const params = [
    id,
    owner.agentId,
    owner.repositoryId,
    `refs/heads/t-${randomUUID()}`,
    JSON.stringify({ test: true }),
    opts.manifestDigest ?? null,
    opts.metadata ? JSON.stringify(opts.metadata) : null,
    opts.createdAt ?? new Date(),
    opts.createdAt ?? new Date(),
  ];
  const json = (n: number) => (sql.kind === "postgres" ? `${sql.p(n)}::jsonb` : sql.p(n));
  await db.$executeRawUnsafe(
    `INSERT INTO snapshots (id, class, state, agent_id, repository_id, backend_kind, base_image, canonical_ref, ` +
      `canonical_commit, validation, manifest_digest, metadata, created_at, ready_at) VALUES (${sql.p(1)}, 'baseline', ` +
      `'ready', ${sql.p(2)}, ${sql.p(3)}, 'test', 'test-image', ${sql.p(4)}, '${"a".repeat(40)}', ${json(5)}, ` +
      `${sql.p(6)}, ${json(7)}, ${sql.p(8)}, ${sql.p(9)})`,
    ...params,
  );
  return id;
}

/** A baseline-class snapshot row in `capturing`, with a key of its own (no ready-head clash). */
export async function createCapturingSnapshot(
  db: Db,
  owner: Owner,
  opts: { id?: string; alias?: string } = {},
): Promise<string> {
  const row = await db.snapshot.create({
    data: {
      ...(opts.id ? { id: opts.id } : {}),
      alias: opts.alias ?? null,
      class: "baseline",
      state: "capturing",
      agentId: owner.agentId,
      repositoryId: owner.repositoryId,
      backendKind: "test",
      baseImage: "test-image",
      canonicalRef: `refs/heads/t-${randomUUID()}`,
      canonicalCommit: "a".repeat(40),
      validation: { test: true },
    },
    select: { id: true },
  });
  return row.id;
}

export function sha256(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Who a test stores bytes for: the agent is granted them, as after its own upload. */
export type Grantee = { agentId: string } | null;

/** Stores bytes as an upload of `owner` (granted to it), or for no agent when it is left out. */
export async function storeBytes(
  db: Db,
  content: Uint8Array | string,
  owner: Grantee = null,
): Promise<{ digest: string; sizeBytes: number }> {
  const bytes = typeof content === "string" ? Buffer.from(content) : Buffer.from(content);
  const digest = sha256(bytes);
  await putBlob(db, {
    digest,
    body: (async function* () {
      yield bytes;
    })(),
    grantTo: owner?.agentId ?? null,
  });
  return { digest, sizeBytes: bytes.byteLength };
}

/** A layer descriptor over bytes freshly stored for `owner`. */
export async function storedLayer(
  db: Db,
  opts: { uuid?: string; parentUuid?: string | null; kind?: string; content?: string; owner: Grantee },
): Promise<LayerDescriptor> {
  const uuid = opts.uuid ?? randomUUID();
  const blob = await storeBytes(db, opts.content ?? `layer ${uuid}`, opts.owner);
  return {
    uuid,
    parentUuid: opts.parentUuid ?? null,
    digest: blob.digest,
    sizeBytes: blob.sizeBytes,
    kind: opts.kind ?? "patch",
  };
}

/** Moves stored/reuse times back, so a blob is outside any grace window. */
export async function ageBlobs(db: Db, seconds: number, digests?: string[]): Promise<void> {
  const rows = await db.blob.findMany({
    where: digests ? { digest: { in: digests } } : {},
    select: { id: true, storedAt: true, lastReusedAt: true },
  });
  for (const row of rows) {
    await db.blob.update({
      where: { id: row.id },
      data: {
        storedAt: new Date(row.storedAt.getTime() - seconds * 1000),
        lastReusedAt: row.lastReusedAt ? new Date(row.lastReusedAt.getTime() - seconds * 1000) : null,
      },
    });
  }
}

/**
 * The content tables as sorted plain rows, with ids replaced by the names the test gave them
 * (so an expected table reads like the seed's). Unnamed ids stay as they are.
 */
export async function contentRows(db: Db, names: Record<string, string>) {
  const name = (id: string | null) => (id === null ? null : (names[id] ?? id));
  const snapshots = await db.snapshot.findMany({
    where: { id: { in: Object.keys(names) } },
    select: { id: true, alias: true, state: true, manifestDigest: true },
  });
  // Layers by the uuids their agents declared (the row keys are the catalog's own).
  const layers = (
    await db.layer.findMany({
      select: { agentUuid: true, parent: { select: { agentUuid: true } }, digest: true, state: true },
    })
  ).map((l) => ({ uuid: l.agentUuid, parentUuid: l.parent?.agentUuid ?? null, digest: l.digest, state: l.state }));
  const heads = (
    await db.snapshotHead.findMany({ select: { snapshotId: true, layer: { select: { agentUuid: true } } } })
  ).map((h) => ({ snapshotId: h.snapshotId, layerUuid: h.layer.agentUuid }));
  const pins = await db.pin.findMany({ select: { pinId: true, snapshotId: true, released: true } });
  const blobs = await db.blob.findMany({ select: { digest: true, state: true } });
  const chunks = await db.blobChunk.count();
  const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return {
    snapshots: snapshots
      .map((s) => [name(s.id), s.alias, s.state, name(s.manifestDigest)] as const)
      .sort((a, b) => byText(String(a[0]), String(b[0]))),
    layers: layers
      .map((l) => [name(l.uuid), name(l.parentUuid), name(l.digest), l.state] as const)
      .sort((a, b) => byText(String(a[0]), String(b[0]))),
    heads: heads.map((h) => `${name(h.snapshotId)}->${name(h.layerUuid)}`).sort(),
    pins: pins.map((p) => [name(p.pinId), name(p.snapshotId), p.released] as const).sort(),
    blobs: blobs.map((b) => `${name(b.digest)}:${b.state}`).sort(),
    chunkRows: chunks,
  };
}

/**
 * The rules a consistent catalog keeps, whatever was interrupted: returns every violation.
 * - a head names an available layer; an available layer's parent is available;
 * - an available layer's bytes are a stored blob of its size, whole (chunks add up and hash);
 * - a snapshot that is not deleted keeps its manifest blob;
 * - a stored blob has exactly its chunk rows.
 */
export async function consistencyViolations(db: Db, opts: { hashBlobs?: boolean } = {}): Promise<string[]> {
  const problems: string[] = [];
  const layers = await db.layer.findMany({
    select: { uuid: true, parentUuid: true, digest: true, state: true, sizeBytes: true },
  });
  const byUuid = new Map(layers.map((l) => [l.uuid, l]));
  const heads = await db.snapshotHead.findMany();
  for (const h of heads) {
    const layer = byUuid.get(h.layerUuid);
    if (layer?.state !== "available") problems.push(`head ${h.snapshotId}->${h.layerUuid} is ${layer?.state}`);
  }
  const blobs = await db.blob.findMany({ where: { state: "stored" } });
  const stored = new Map(blobs.map((b) => [b.digest, b]));
  for (const l of layers) {
    if (l.state !== "available") continue;
    if (l.parentUuid && byUuid.get(l.parentUuid)?.state !== "available") {
      problems.push(`available layer ${l.uuid} has parent ${l.parentUuid} ${byUuid.get(l.parentUuid)?.state}`);
    }
    const blob = stored.get(l.digest);
    if (!blob) problems.push(`available layer ${l.uuid} has no stored blob ${l.digest}`);
    else if (blob.sizeBytes !== l.sizeBytes) problems.push(`layer ${l.uuid} size differs from its blob`);
  }
  const manifests = await db.snapshot.findMany({
    where: { state: { not: "deleted" }, manifestDigest: { not: null } },
    select: { id: true, manifestDigest: true },
  });
  for (const s of manifests) {
    if (!stored.has(s.manifestDigest!)) problems.push(`snapshot ${s.id} lost its manifest ${s.manifestDigest}`);
  }
  for (const b of blobs) {
    const agg = await db.blobChunk.aggregate({ where: { blobId: b.id }, _count: { _all: true } });
    if (agg._count._all !== b.chunkCount)
      problems.push(`blob ${b.digest} has ${agg._count._all}/${b.chunkCount} chunks`);
    if (opts.hashBlobs) {
      const chunks = await db.blobChunk.findMany({ where: { blobId: b.id }, orderBy: { seq: "asc" } });
      const hash = createHash("sha256");
      let size = 0;
      for (const c of chunks) {
        hash.update(c.data);
        size += c.data.byteLength;
      }
      if (hash.digest("hex") !== b.digest || BigInt(size) !== b.sizeBytes) problems.push(`blob ${b.digest} is damaged`);
    }
  }
  return problems;
}

/** The layers reachable from any head, walking parent links. */
export async function reachableLayers(db: Db): Promise<Set<string>> {
  const layers = await db.layer.findMany({ select: { uuid: true, parentUuid: true } });
  const parent = new Map(layers.map((l) => [l.uuid, l.parentUuid]));
  const reached = new Set<string>();
  for (const h of await db.snapshotHead.findMany({ select: { layerUuid: true } })) {
    let current: string | null | undefined = h.layerUuid;
    while (current && !reached.has(current)) {
      reached.add(current);
      current = parent.get(current);
    }
  }
  return reached;
}
