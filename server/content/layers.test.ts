import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { beforeAll, expect, it } from "vitest";
import { inTransaction, type Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { isStrataError } from "../domain/errors.ts";
import { publishLayers, publishSnapshot } from "./layers.ts";
import { retireSnapshot } from "../lineage/retirement.ts";
import { createCapturingSnapshot, createOwner, storeBytes, storedLayer, type Owner } from "../testing/content.ts";

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

async function tableCounts(db: Db) {
  return {
    layers: await db.layer.count(),
    heads: await db.snapshotHead.count(),
    snapshots: await db.snapshot.count(),
    pins: await db.pin.count(),
    blobs: await db.blob.count(),
  };
}

/** Row counters of the current connection: per table on PostgreSQL, in total on SQLite. */
async function writesInTransaction(tx: Db): Promise<Record<string, number> | number> {
  if (dialectOf(tx).kind === "postgres") {
    const rows = await tx.$queryRawUnsafe<{ t: string; ins: bigint; upd: bigint; del: bigint }[]>(
      `SELECT relname::text AS t, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del FROM pg_stat_xact_user_tables ` +
        `WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY relname`,
    );
    const out: Record<string, number> = {};
    for (const r of rows) {
      if (r.ins) out[`${r.t}.inserted`] = Number(r.ins);
      if (r.upd) out[`${r.t}.updated`] = Number(r.upd);
      if (r.del) out[`${r.t}.deleted`] = Number(r.del);
    }
    return out;
  }
  const [row] = await tx.$queryRawUnsafe<{ n: bigint }[]>(`SELECT total_changes() AS n`);
  return Number(row!.n);
}

describeEachDatabase("layers and publish", (catalog, kind) => {
  let owner: Owner;
  let manifest: string;

  async function capturing(): Promise<string> {
    return createCapturingSnapshot(catalog().db, owner);
  }

  beforeAll(async () => {
    owner = await createOwner(catalog().db);
    manifest = (await storeBytes(catalog().db, "manifest of the layer tests", owner)).digest;
  });

  it("publishes a snapshot's layers, heads and manifest at once (capturing → ready)", async () => {
    const db = catalog().db;
    const s0 = await capturing();
    const a = await storedLayer(db, { owner });
    const b = await storedLayer(db, { owner, parentUuid: a.uuid });
    const m = await storedLayer(db, { owner, kind: "memory" });
    const result = await publishSnapshot(db, {
      snapshotId: s0,
      manifestDigest: manifest,
      layers: [b, a, m],
      heads: [b.uuid, m.uuid],
      agentId: owner.agentId,
    });
    expect(result).toMatchObject({ layersWritten: 3, layersReused: 0, headsWritten: 2, alreadyPublished: false });
    const snapshot = await db.snapshot.findUniqueOrThrow({ where: { id: s0 } });
    expect(snapshot.state).toBe("ready");
    expect(snapshot.manifestDigest).toBe(manifest);
    expect(snapshot.readyAt).not.toBeNull();
    const heads = await db.snapshotHead.findMany({ where: { snapshotId: s0 }, include: { layer: true } });
    expect(heads.map((h) => h.layer.agentUuid).sort()).toEqual([b.uuid, m.uuid].sort());
    const rows = await db.layer.findMany({
      where: { agentUuid: { in: [a.uuid, b.uuid, m.uuid] } },
      include: { parent: { select: { agentUuid: true } } },
    });
    expect(rows.every((r) => r.state === "available" && r.agentId === owner.agentId)).toBe(true);
    expect(rows.find((r) => r.agentUuid === b.uuid)!.parent?.agentUuid).toBe(a.uuid);

    // The same publish again changes nothing.
    const before = await tableCounts(db);
    const again = await publishSnapshot(db, {
      snapshotId: s0,
      manifestDigest: manifest,
      layers: [a, b, m],
      heads: [m.uuid, b.uuid],
    });
    expect(again).toMatchObject({ alreadyPublished: true, layersWritten: 0, headsWritten: 0 });
    expect(await tableCounts(db)).toEqual(before);

    // Something else is refused: a published snapshot is immutable.
    const other = await errorOf(
      publishSnapshot(db, { snapshotId: s0, manifestDigest: manifest, layers: [a], heads: [a.uuid] }),
    );
    expect(isStrataError(other, "CONFLICT")).toBe(true);
  });

  it("registers the content of a snapshot made ready elsewhere, once", async () => {
    const db = catalog().db;
    const s = await capturing();
    // As baseline.publish / checkpoint.append leave it: ready, a manifest reference, no heads.
    await db.snapshot.update({ where: { id: s }, data: { state: "ready", manifestDigest: "f".repeat(64) } });
    const a = await storedLayer(db, { owner });
    const b = await storedLayer(db, { owner, parentUuid: a.uuid });
    const wrongManifest = await errorOf(
      publishSnapshot(db, { snapshotId: s, manifestDigest: manifest, layers: [a, b], heads: [b.uuid] }),
    );
    expect(isStrataError(wrongManifest, "CONFLICT")).toBe(true);
    const attached = await publishSnapshot(db, { snapshotId: s, layers: [a, b], heads: [b.uuid] });
    expect(attached).toMatchObject({
      alreadyPublished: false,
      layersWritten: 2,
      headsWritten: 1,
      manifestDigest: "f".repeat(64),
    });
    const again = await publishSnapshot(db, {
      snapshotId: s,
      manifestDigest: "f".repeat(64),
      layers: [a, b],
      heads: [b.uuid],
    });
    expect(again).toMatchObject({ alreadyPublished: true, layersWritten: 0 });
    const other = await storedLayer(db, { owner });
    const changed = await errorOf(publishSnapshot(db, { snapshotId: s, layers: [other], heads: [other.uuid] }));
    expect(isStrataError(changed, "CONFLICT")).toBe(true);
    // Also once superseded (a newer capture replaced it before its layers were registered).
    const later = await capturing();
    await db.snapshot.update({ where: { id: later }, data: { state: "superseded", manifestDigest: "e".repeat(64) } });
    const c = await storedLayer(db, { owner, parentUuid: b.uuid });
    expect(await publishSnapshot(db, { snapshotId: later, layers: [b, c], heads: [c.uuid] })).toMatchObject({
      state: "superseded",
      layersWritten: 1,
      headsWritten: 1,
    });
    // A capturing snapshot cannot become ready without a manifest.
    const bare = await errorOf(publishSnapshot(db, { snapshotId: await capturing(), layers: [], heads: [] }));
    expect(isStrataError(bare, "INVALID_INPUT")).toBe(true);
  });

  it("reuses an existing prefix, checking the declared ancestors against their rows", async () => {
    const db = catalog().db;
    const a = await storedLayer(db, { owner });
    const b = await storedLayer(db, { owner, parentUuid: a.uuid });
    await publishSnapshot(db, {
      snapshotId: await capturing(),
      manifestDigest: manifest,
      layers: [a, b],
      heads: [b.uuid],
    });
    const c = await storedLayer(db, { owner, parentUuid: b.uuid });
    const before = await tableCounts(db);
    const result = await publishSnapshot(db, {
      snapshotId: await capturing(),
      manifestDigest: manifest,
      layers: [a, b, c],
      heads: [c.uuid],
    });
    expect(result).toMatchObject({ layersWritten: 1, layersReused: 2, headsWritten: 1 });
    const after = await tableCounts(db);
    expect(after.layers - before.layers).toBe(1);
    expect(after.heads - before.heads).toBe(1);
    // A head may also be an existing layer, declared or not.
    const s = await capturing();
    const reuse = await publishSnapshot(db, { snapshotId: s, manifestDigest: manifest, layers: [], heads: [b.uuid] });
    expect(reuse).toMatchObject({ layersWritten: 0, headsWritten: 1 });
  });

  it("refuses to rebind an existing uuid to another parent, digest, size or kind (LAYER_CONFLICT)", async () => {
    const db = catalog().db;
    const a = await storedLayer(db, { owner });
    const b = await storedLayer(db, { owner, parentUuid: a.uuid });
    await publishSnapshot(db, {
      snapshotId: await capturing(),
      manifestDigest: manifest,
      layers: [a, b],
      heads: [b.uuid],
    });
    const other = await storedLayer(db, { owner, content: "other bytes" });
    const variants: [string, LayerDescriptor][] = [
      ["parentUuid", { ...b, parentUuid: null }],
      ["digest", { ...b, digest: other.digest, sizeBytes: other.sizeBytes }],
      ["sizeBytes", { ...b, sizeBytes: b.sizeBytes + 1 }],
      ["kind", { ...b, kind: "bundle" }],
    ];
    for (const [field, rebound] of variants) {
      const s = await capturing();
      const c = await storedLayer(db, { owner, parentUuid: b.uuid });
      const before = await tableCounts(db);
      const error = await errorOf(
        publishSnapshot(db, { snapshotId: s, manifestDigest: manifest, layers: [rebound, c], heads: [c.uuid] }),
      );
      expect(isStrataError(error, "LAYER_CONFLICT"), field).toBe(true);
      expect((error as { data: { conflicts: { fields: string[] }[] } }).data.conflicts[0]!.fields).toContain(field);
      expect(await tableCounts(db)).toEqual(before);
      expect((await db.snapshot.findUniqueOrThrow({ where: { id: s } })).state).toBe("capturing");
    }
    // The row itself is immutable in the database too.
    await expect(db.layer.update({ where: { uuid: b.uuid }, data: { parentUuid: null } })).rejects.toThrow();
    await expect(db.layer.update({ where: { uuid: b.uuid }, data: { digest: other.digest } })).rejects.toThrow();
  });

  it("refuses unknown parents and heads, cycles, and new layers no head reaches (INVALID_INPUT)", async () => {
    const db = catalog().db;
    const s = await capturing();
    const before = await tableCounts(db);
    const orphanParent = await storedLayer(db, { owner, parentUuid: randomUUID() });
    const x = randomUUID();
    const y = randomUUID();
    const loopX = await storedLayer(db, { owner, uuid: x, parentUuid: y });
    const loopY = await storedLayer(db, { owner, uuid: y, parentUuid: x });
    const top = await storedLayer(db, { owner });
    const stray = await storedLayer(db, { owner });
    const cases: [string, LayerDescriptor[], string[]][] = [
      ["unknown parent", [orphanParent], [orphanParent.uuid]],
      ["unknown head", [top], [top.uuid, randomUUID()]],
      ["cycle", [loopX, loopY], [x]],
      ["self parent", [{ ...top, parentUuid: top.uuid }], [top.uuid]],
      ["under no head", [top, stray], [top.uuid]],
      ["declared twice", [top, top], [top.uuid]],
    ];
    const blobsNow = await db.blob.count();
    for (const [name, layers, heads] of cases) {
      const error = await errorOf(publishSnapshot(db, { snapshotId: s, manifestDigest: manifest, layers, heads }));
      expect(isStrataError(error, "INVALID_INPUT"), name).toBe(true);
    }
    expect({ ...(await tableCounts(db)), blobs: blobsNow }).toEqual({ ...before, blobs: blobsNow });
  });

  it("needs the bytes of every new layer stored, with the declared size", async () => {
    const db = catalog().db;
    const s = await capturing();
    const ghost: LayerDescriptor = {
      uuid: randomUUID(),
      parentUuid: null,
      digest: "d".repeat(64),
      sizeBytes: 3,
      kind: "patch",
    };
    const missing = await errorOf(
      publishSnapshot(db, { snapshotId: s, manifestDigest: manifest, layers: [ghost], heads: [ghost.uuid] }),
    );
    expect(isStrataError(missing, "BLOB_MISSING")).toBe(true);
    expect((missing as { data: { digests: string[] } }).data.digests).toEqual(["d".repeat(64)]);
    const real = await storedLayer(db, { owner });
    const wrongSize = await errorOf(
      publishSnapshot(db, {
        snapshotId: s,
        manifestDigest: manifest,
        layers: [{ ...real, sizeBytes: real.sizeBytes + 5 }],
        heads: [real.uuid],
      }),
    );
    expect(isStrataError(wrongSize, "INVALID_INPUT")).toBe(true);
    const noManifest = await errorOf(
      publishSnapshot(db, { snapshotId: s, manifestDigest: "e".repeat(64), layers: [real], heads: [real.uuid] }),
    );
    expect(isStrataError(noManifest, "BLOB_MISSING")).toBe(true);
    expect(await db.layer.count({ where: { agentUuid: real.uuid } })).toBe(0);
  });

  it("refuses to reuse a layer collection is reclaiming (LAYER_UNAVAILABLE)", async () => {
    const db = catalog().db;
    const a = await storedLayer(db, { owner });
    await db.layer.create({
      data: {
        uuid: a.uuid,
        agentId: owner.agentId,
        agentUuid: a.uuid,
        parentUuid: null,
        digest: a.digest,
        sizeBytes: BigInt(a.sizeBytes),
        kind: a.kind,
      },
    });
    await db.layer.update({ where: { uuid: a.uuid }, data: { state: "deleting" } });
    const child = await storedLayer(db, { owner, parentUuid: a.uuid });
    const asParent = await errorOf(
      publishSnapshot(db, {
        snapshotId: await capturing(),
        manifestDigest: manifest,
        layers: [child],
        heads: [child.uuid],
      }),
    );
    expect(isStrataError(asParent, "LAYER_UNAVAILABLE")).toBe(true);
    const asHead = await errorOf(
      publishSnapshot(db, { snapshotId: await capturing(), manifestDigest: manifest, layers: [], heads: [a.uuid] }),
    );
    expect(isStrataError(asHead, "LAYER_UNAVAILABLE")).toBe(true);
    // A deleted uuid stays taken: the same artifact cannot come back under it.
    await db.layer.update({ where: { uuid: a.uuid }, data: { state: "deleted" } });
    const again = await errorOf(
      publishSnapshot(db, { snapshotId: await capturing(), manifestDigest: manifest, layers: [a], heads: [a.uuid] }),
    );
    expect(isStrataError(again, "LAYER_UNAVAILABLE")).toBe(true);
  });

  it("needs the snapshot's agent to hold grants of its new layers' bytes, not of its own layers it reuses by uuid", async () => {
    const db = catalog().db;
    const base = await storedLayer(db, { owner });
    await publishSnapshot(db, {
      snapshotId: await capturing(),
      manifestDigest: manifest,
      layers: [base],
      heads: [base.uuid],
    });
    const other = await createOwner(db);
    await storeBytes(db, "manifest of the layer tests", other);
    const theirs = await createCapturingSnapshot(db, other);
    // The owner's bytes, under a new uuid or the owner's own, are not the other agent's to publish.
    for (const copy of [{ ...base, uuid: randomUUID() }, base]) {
      const before = await tableCounts(db);
      const refused = await errorOf(publishLayers(db, { snapshotId: theirs, layers: [copy], heads: [copy.uuid] }));
      expect(isStrataError(refused, "BLOB_MISSING") && refused.data).toEqual({ digests: [base.digest] });
      expect(await tableCounts(db)).toEqual(before);
    }
    // The owner's own reuse is not asked about its bytes: a new layer on top of it is fine
    // even once the grant of the reused bytes is gone.
    await db.blobGrant.deleteMany({ where: { agentId: owner.agentId, digest: base.digest } });
    const top = await storedLayer(db, { owner, parentUuid: base.uuid });
    const published = await publishSnapshot(db, {
      snapshotId: await capturing(),
      manifestDigest: manifest,
      layers: [base, top],
      heads: [top.uuid],
    });
    expect(published).toMatchObject({ state: "ready", layersWritten: 1, layersReused: 1 });
  });

  it("publishes only to the caller's own, not yet retired snapshots", async () => {
    const db = catalog().db;
    const layer = await storedLayer(db, { owner });
    const stranger = await createOwner(db);
    const theirs = await createCapturingSnapshot(db, stranger);
    const notMine = await errorOf(
      publishSnapshot(db, {
        snapshotId: theirs,
        manifestDigest: manifest,
        layers: [layer],
        heads: [layer.uuid],
        agentId: owner.agentId,
      }),
    );
    expect(isStrataError(notMine, "NOT_FOUND")).toBe(true);
    const retired = await capturing();
    await retireSnapshot(db, { snapshotId: retired, actor: { type: "system" } });
    const late = await errorOf(
      publishSnapshot(db, { snapshotId: retired, manifestDigest: manifest, layers: [layer], heads: [layer.uuid] }),
    );
    expect(isStrataError(late, "SNAPSHOT_RETIRED")).toBe(true);
    const unknown = await errorOf(
      publishSnapshot(db, { snapshotId: randomUUID(), manifestDigest: manifest, layers: [], heads: [] }),
    );
    expect(isStrataError(unknown, "NOT_FOUND")).toBe(true);
  });

  it("lets concurrent publishes of the same new chain converge on one set of rows", async () => {
    const db = catalog().db;
    const a = await storedLayer(db, { owner });
    const b = await storedLayer(db, { owner, parentUuid: a.uuid });
    const snapshots = await Promise.all(Array.from({ length: 6 }, () => capturing()));
    const results = await Promise.all(
      snapshots.map((id) =>
        publishSnapshot(db, { snapshotId: id, manifestDigest: manifest, layers: [a, b], heads: [b.uuid] }),
      ),
    );
    expect(results.reduce((sum, r) => sum + r.layersWritten, 0)).toBe(2);
    expect(await db.layer.count({ where: { agentUuid: { in: [a.uuid, b.uuid] } } })).toBe(2);
    expect(await db.snapshotHead.count({ where: { layer: { agentUuid: b.uuid } } })).toBe(6);
  });

  it("lets exactly one of two conflicting concurrent publishes of one uuid win", async () => {
    const db = catalog().db;
    for (let round = 0; round < 5; round += 1) {
      const uuid = randomUUID();
      const one = await storedLayer(db, { owner, uuid, content: `one ${round}` });
      const two = await storedLayer(db, { owner, uuid, content: `two ${round}` });
      const [s1, s2] = [await capturing(), await capturing()];
      const outcomes = await Promise.allSettled([
        publishSnapshot(db, { snapshotId: s1, manifestDigest: manifest, layers: [one], heads: [uuid] }),
        publishSnapshot(db, { snapshotId: s2, manifestDigest: manifest, layers: [two], heads: [uuid] }),
      ]);
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      const loser = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
      expect(isStrataError(loser.reason, "LAYER_CONFLICT")).toBe(true);
      const row = await db.layer.findFirstOrThrow({ where: { agentUuid: uuid } });
      const winner = outcomes[0]!.status === "fulfilled" ? one : two;
      expect(row.digest).toBe(winner.digest);
    }
  });

  it.each([1, 10, 1000])(
    "writes 1 layer row and h head rows to publish a %i-layer prefix plus one new layer (O(delta + h))",
    async (k) => {
      const db = catalog().db;
      // One blob serves the whole chain: layers may share bytes.
      const bytes = await storeBytes(db, `chain bytes ${k}`, owner);
      const chain: LayerDescriptor[] = [];
      for (let i = 0; i < k; i += 1) {
        chain.push({ uuid: randomUUID(), parentUuid: chain.at(-1)?.uuid ?? null, ...bytes, kind: "patch" });
      }
      const memoryLayer = await storedLayer(db, { owner, kind: "memory" });
      await publishSnapshot(db, {
        snapshotId: await capturing(),
        manifestDigest: manifest,
        layers: [...chain, memoryLayer],
        heads: [chain.at(-1)!.uuid, memoryLayer.uuid],
      });

      const top = chain.at(-1)!;
      const fresh = await storedLayer(db, { owner, parentUuid: top.uuid });
      const target = await capturing();
      const h = 2;
      const before = await tableCounts(db);
      const writes = await inTransaction(db, async (tx) => {
        const start = await writesInTransaction(tx);
        // The publisher names only what it relies on directly: its new layer's parent.
        await publishSnapshot(tx, {
          snapshotId: target,
          manifestDigest: manifest,
          layers: [top, fresh],
          heads: [fresh.uuid, memoryLayer.uuid],
        });
        const end = await writesInTransaction(tx);
        if (typeof start === "number") return (end as number) - start;
        // PostgreSQL's per-backend counters may still hold earlier transactions: take the difference.
        const delta: Record<string, number> = {};
        for (const [key, value] of Object.entries(end as Record<string, number>)) {
          const d = value - ((start as Record<string, number>)[key] ?? 0);
          if (d !== 0) delta[key] = d;
        }
        return delta;
      });
      const after = await tableCounts(db);
      expect(after.layers - before.layers).toBe(1);
      expect(after.heads - before.heads).toBe(h);
      if (kind === "postgres") {
        // Exactly: one layer, h heads, and the snapshot row moved to ready. Nothing else.
        expect(writes).toEqual({ "layers.inserted": 1, "snapshot_heads.inserted": h, "snapshots.updated": 1 });
      } else {
        expect(writes).toBe(1 + h + 1);
      }
      // A full snapshot→layer mapping would have written k + 2 rows for the same publish.
      console.info(`k=${k}: prefix form wrote ${1 + h} relationship rows; a full mapping would write ${k + 2}`);

      // Declaring the whole chain changes what is checked, not what is written.
      const third = await capturing();
      const fresh2 = await storedLayer(db, { owner, parentUuid: top.uuid });
      const before2 = await tableCounts(db);
      await publishSnapshot(db, {
        snapshotId: third,
        manifestDigest: manifest,
        layers: [...chain, fresh2],
        heads: [fresh2.uuid, memoryLayer.uuid],
      });
      const after2 = await tableCounts(db);
      expect([after2.layers - before2.layers, after2.heads - before2.heads]).toEqual([1, h]);
    },
    120_000,
  );

  it("keeps the catalog a forest whatever sequence of publishes is attempted (property)", async () => {
    const db = catalog().db;
    const pool = Array.from({ length: 8 }, () => randomUUID());
    const blobs = await Promise.all([0, 1, 2].map((i) => storeBytes(db, `forest blob ${i}`, owner)));
    const descriptor = fc.record({
      uuid: fc.constantFrom(...pool),
      parent: fc.option(fc.constantFrom(...pool), { nil: null }),
      blob: fc.integer({ min: 0, max: 2 }),
      kind: fc.constantFrom("patch", "bundle"),
    });
    const publish = fc.record({
      layers: fc.array(descriptor, { maxLength: 4 }),
      heads: fc.array(fc.constantFrom(...pool), { minLength: 1, maxLength: 2 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(publish, { minLength: 1, maxLength: 6 }), async (publishes) => {
        // Each run starts from an empty layer graph for its own uuids.
        const remap = new Map(pool.map((u) => [u, randomUUID()]));
        for (const p of publishes) {
          const layers = p.layers.map((l) => ({
            uuid: remap.get(l.uuid)!,
            parentUuid: l.parent ? remap.get(l.parent)! : null,
            ...blobs[l.blob]!,
            kind: l.kind,
          }));
          const heads = p.heads.map((h) => remap.get(h)!);
          const s = await capturing();
          const before = await tableCounts(db);
          const existing = new Map(
            (await db.layer.findMany({ where: { agentUuid: { in: [...remap.values()] } } })).map((r) => [r.uuid, r]),
          );
          try {
            await publishSnapshot(db, { snapshotId: s, manifestDigest: manifest, layers, heads });
          } catch (error) {
            if (!isStrataError(error)) throw error;
            // A refused publish writes nothing.
            expect(await tableCounts(db)).toEqual(before);
            continue;
          }
          // An accepted publish never changed an existing row.
          for (const [uuid, row] of existing) {
            expect(await db.layer.findUniqueOrThrow({ where: { uuid } })).toEqual(row);
          }
        }
        // The graph is a forest: following parents always ends.
        const rows = await db.layer.findMany({ where: { agentUuid: { in: [...remap.values()] } } });
        const parent = new Map(rows.map((r) => [r.uuid, r.parentUuid]));
        for (const r of rows) {
          const seen = new Set<string>();
          let current: string | null | undefined = r.uuid;
          while (current) {
            expect(seen.has(current)).toBe(false);
            seen.add(current);
            current = parent.get(current);
          }
        }
      }),
      { numRuns: 15 },
    );
  }, 120_000);

  it("publishLayers adds heads to a ready snapshot inside a caller's transaction", async () => {
    const db = catalog().db;
    const s = await capturing();
    await db.snapshot.update({ where: { id: s }, data: { state: "ready" } });
    const layer = await storedLayer(db, { owner });
    const result = await inTransaction(db, (tx) =>
      publishLayers(tx, { snapshotId: s, layers: [layer], heads: [layer.uuid] }),
    );
    expect(result).toMatchObject({ layersWritten: 1, headsWritten: 1 });
    const retry = await publishLayers(db, { snapshotId: s, layers: [layer], heads: [layer.uuid] });
    expect(retry).toMatchObject({ layersWritten: 0, headsWritten: 0, layersReused: 1 });
  });
});
