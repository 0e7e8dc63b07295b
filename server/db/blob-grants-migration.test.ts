// The blob_grants migration backfills grants from the catalog it finds: rows are written under
// the schema of the migration before it, then the migration runs, on each kind of database.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { insertReadySnapshot, createOwner, storeBytes, type Owner } from "../testing/content.ts";
import { openCatalog, type Db } from "./client.ts";
import { migrate, readMigrations } from "./migrate.ts";
import { createEmptyDatabase, DATABASE_KINDS, type EmptyDatabase } from "../testing/databases.ts";

const GRANTS = "20261201000000_blob_grants";

describe("the blob_grants migration", () => {
  const dropped: EmptyDatabase[] = [];
  afterAll(async () => {
    for (const db of dropped) await db.drop();
  });

  for (const kind of DATABASE_KINDS) {
    it(`grants each agent the content of its snapshots on ${kind}: manifest, reachable layers, listed blobs`, async () => {
      const empty = await createEmptyDatabase(kind);
      dropped.push(empty);
      const before = readMigrations(kind).filter((m) => m.name < GRANTS);
      await migrate(empty.url, { migrations: before });
      const handle = openCatalog(empty.url);
      try {
        const db = handle.db;
        expect(await tableExists(db, kind)).toBe(false);

        const a = await createOwner(db);
        const b = await createOwner(db);
        // Stored for nobody: there is no grant table yet.
        const bytes = async (label: string) => (await storeBytes(db, `${label} ${randomUUID()}`)).digest;
        const d = {
          manifestA: await bytes("A's manifest"),
          p1: await bytes("patch 1"),
          p2: await bytes("patch 2"),
          p3: await bytes("patch 3"),
          listedB: await bytes("listed by B"),
          loose: await bytes("referenced by nobody"),
          neverStored: "e".repeat(64),
        };
        // One chain L1 <- L2 <- L3: A keeps its top, B only its bottom.
        const [l1, l2, l3] = [randomUUID(), randomUUID(), randomUUID()];
        // Raw rows: the layers table of that schema has no agent columns yet.
        for (const [uuid, parent, digest] of [
          [l1, null, d.p1],
          [l2, l1, d.p2],
          [l3, l2, d.p3],
        ] as const) {
          await db.$executeRawUnsafe(
            kind === "postgres"
              ? `INSERT INTO layers (uuid, parent_uuid, digest, size_bytes, kind) VALUES ($1, $2, $3, 1, 'patch')`
              : `INSERT INTO layers (uuid, parent_uuid, digest, size_bytes, kind) VALUES (?, ?, ?, 1, 'patch')`,
            uuid,
            parent,
            digest,
          );
        }
        await readySnapshot(db, a, {
          manifestDigest: d.manifestA,
          heads: [l3],
          metadata: { manifest: { blobDigests: [d.neverStored] } },
        });
        await readySnapshot(db, b, { heads: [l1], metadata: { manifest: { blobDigests: [d.listedB] } } });
        // Metadata that lists nothing, or not as a list, grants nothing (and fails nothing).
        await readySnapshot(db, b, { metadata: { manifest: { blobDigests: "not a list" } } });
        await readySnapshot(db, b, { metadata: { other: true } });

        const upToGrants = readMigrations(kind).filter((m) => m.name <= GRANTS);
        expect((await migrate(empty.url, { migrations: upToGrants })).applied).toEqual([GRANTS]);

        const grants = await db.blobGrant.findMany({ select: { agentId: true, digest: true } });
        const named = Object.fromEntries(Object.entries(d).map(([label, digest]) => [digest, label]));
        const held = (owner: Owner) =>
          grants
            .filter((g) => g.agentId === owner.agentId)
            .map((g) => named[g.digest])
            .sort();
        expect(held(a)).toEqual(["manifestA", "p1", "p2", "p3"]);
        expect(held(b)).toEqual(["listedB", "p1"]);
        expect(grants).toHaveLength(6);
      } finally {
        await handle.close();
      }
    });
  }
});

async function tableExists(db: Db, kind: string): Promise<boolean> {
  const rows = await db.$queryRawUnsafe<unknown[]>(
    kind === "postgres"
      ? `SELECT 1 FROM information_schema.tables WHERE table_name = 'blob_grants'`
      : `SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'blob_grants'`,
  );
  return rows.length > 0;
}

async function readySnapshot(
  db: Db,
  owner: Owner,
  opts: { manifestDigest?: string; heads?: string[]; metadata: object },
): Promise<void> {
  const id = await insertReadySnapshot(db, owner, {
    manifestDigest: opts.manifestDigest ?? null,
    metadata: opts.metadata,
  });
  if (opts.heads)
    await db.snapshotHead.createMany({ data: opts.heads.map((layerUuid) => ({ snapshotId: id, layerUuid })) });
}
