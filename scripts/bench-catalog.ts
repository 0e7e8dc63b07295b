// `npm run bench:catalog`: the prefix-chain catalog measured on each database.
//  - rows written per publish, shared-prefix vs independent chains, against what a full
//    snapshot→all-layers mapping would write for the same publish (and the ratio);
//  - publish latency (p50/p99);
//  - table and index sizes, with the full mapping actually built for comparison;
//  - collection throughput (layers/s);
//  - publish p99 while a collection runs vs idle.
// Every number comes from the real services on a fresh database of each kind.
// Options: --db sqlite,postgres --base 100 --shared 300 --independent 200 --chain 5
import { randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type { Db } from "../server/db/client.ts";
import { createTestCatalog, type TestCatalog } from "../server/testing/catalog.ts";
import type { LayerDescriptor } from "../server/domain/content.ts";
import { collectGarbage } from "../server/gc/collect-garbage.ts";
import { publishSnapshot } from "../server/content/layers.ts";
import { retireSnapshot } from "../server/lineage/retirement.ts";
import { ageBlobs, createCapturingSnapshot, createOwner, storeBytes, type Owner } from "../server/testing/content.ts";
import { percentile } from "./stats.ts";

const { values } = parseArgs({
  options: {
    db: { type: "string", default: "sqlite,postgres" },
    base: { type: "string", default: "100" },
    shared: { type: "string", default: "300" },
    independent: { type: "string", default: "200" },
    chain: { type: "string", default: "5" },
    during: { type: "string", default: "100" },
  },
});
const KINDS = values.db.split(",") as ("sqlite" | "postgres")[];
const BASE = Number(values.base);
const SHARED = Number(values.shared);
const INDEPENDENT = Number(values.independent);
const CHAIN = Number(values.chain);
const DURING = Number(values.during);

const ms = (n: number) => `${n.toFixed(1)} ms`;

async function newLayer(db: Db, owner: Owner, parentUuid: string | null, kind = "patch"): Promise<LayerDescriptor> {
  const blob = await storeBytes(db, randomBytes(256), owner);
  return { uuid: randomUUID(), parentUuid, ...blob, kind };
}

interface Published {
  snapshotId: string;
  ms: number;
  rowsWritten: number;
  fullMappingRows: number;
}

async function counts(db: Db): Promise<number> {
  return (await db.layer.count()) + (await db.snapshotHead.count());
}

/**
 * Publishes one snapshot and measures it. `fresh` is how many of the layers are new and
 * `fullLayerSet` how many layers the snapshot has in all (what a full mapping would list).
 */
async function publish(
  db: Db,
  owner: Owner,
  manifest: string,
  layers: LayerDescriptor[],
  heads: string[],
  fresh: number,
  fullLayerSet: number,
): Promise<Published> {
  const snapshotId = await createCapturingSnapshot(db, owner);
  const before = await counts(db);
  const start = performance.now();
  await publishSnapshot(db, { snapshotId, manifestDigest: manifest, layers, heads });
  const elapsed = performance.now() - start;
  const rowsWritten = (await counts(db)) - before;
  // The alternative: the same new layer rows, plus one mapping row per layer the snapshot has.
  return { snapshotId, ms: elapsed, rowsWritten, fullMappingRows: fresh + fullLayerSet };
}

async function sizes(catalog: TestCatalog): Promise<Record<string, { table: number; indexes: number }>> {
  const tables = ["layers", "snapshot_heads", "bench_full_mapping", "snapshots", "blobs", "blob_chunks"];
  const out: Record<string, { table: number; indexes: number }> = {};
  if (catalog.dialect.kind === "postgres") {
    for (const t of tables) {
      const [row] = await catalog.db.$queryRawUnsafe<{ t: bigint; i: bigint }[]>(
        `SELECT pg_relation_size('${t}') AS t, pg_indexes_size('${t}') AS i`,
      );
      out[t] = { table: Number(row!.t), indexes: Number(row!.i) };
    }
    return out;
  }
  const rows = await catalog.db.$queryRawUnsafe<{ name: string; tbl: string; bytes: bigint }[]>(
    `SELECT s.name AS name, m.tbl_name AS tbl, SUM(s.pgsize) AS bytes FROM dbstat s JOIN sqlite_master m ON m.name = s.name GROUP BY s.name`,
  );
  for (const t of tables) {
    out[t] = {
      table: Number(rows.find((r) => r.name === t)?.bytes ?? 0),
      indexes: rows.filter((r) => r.tbl === t && r.name !== t).reduce((sum, r) => sum + Number(r.bytes), 0),
    };
  }
  return out;
}

/** Builds, for comparison, the full mapping the same snapshots would need: every reachable layer. */
async function buildFullMapping(catalog: TestCatalog): Promise<number> {
  const db = catalog.db;
  await db.$executeRawUnsafe(
    `CREATE TABLE bench_full_mapping (snapshot_id TEXT NOT NULL, layer_uuid TEXT NOT NULL, PRIMARY KEY (snapshot_id, layer_uuid))`,
  );
  await db.$executeRawUnsafe(`CREATE INDEX bench_full_mapping_layer ON bench_full_mapping (layer_uuid, snapshot_id)`);
  await db.$executeRawUnsafe(
    `INSERT INTO bench_full_mapping (snapshot_id, layer_uuid)
     WITH RECURSIVE reach(snapshot_id, layer_uuid) AS (
       SELECT snapshot_id, layer_uuid FROM snapshot_heads
       UNION
       SELECT r.snapshot_id, l.parent_uuid FROM reach r JOIN layers l ON l.uuid = r.layer_uuid WHERE l.parent_uuid IS NOT NULL
     )
     SELECT snapshot_id, layer_uuid FROM reach`,
  );
  const [row] = await db.$queryRawUnsafe<{ n: bigint }[]>(`SELECT COUNT(*) AS n FROM bench_full_mapping`);
  return Number(row!.n);
}

function kb(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

async function run(kind: "sqlite" | "postgres"): Promise<void> {
  const catalog = await createTestCatalog(kind);
  const db = catalog.db;
  try {
    const owner = await createOwner(db, `bench-${randomUUID().slice(0, 8)}`);
    const manifest = (await storeBytes(db, "bench manifest", owner)).digest;
    const keeper = await createCapturingSnapshot(db, owner);
    await publishSnapshot(db, { snapshotId: keeper, manifestDigest: manifest, layers: [], heads: [] });
    const memory = await newLayer(db, owner, null, "memory");

    // Shared prefix: a base chain, then each snapshot adds one layer on top of the previous one.
    const base: LayerDescriptor[] = [];
    for (let i = 0; i < BASE; i += 1) base.push(await newLayer(db, owner, base.at(-1)?.uuid ?? null));
    await publish(db, owner, manifest, [...base, memory], [base.at(-1)!.uuid, memory.uuid], BASE + 1, BASE + 1);
    const shared: Published[] = [];
    const sharedTops: LayerDescriptor[] = [];
    let top = base.at(-1)!;
    for (let i = 0; i < SHARED; i += 1) {
      const next = await newLayer(db, owner, top.uuid);
      shared.push(await publish(db, owner, manifest, [top, next], [next.uuid, memory.uuid], 1, BASE + i + 2));
      sharedTops.push(next);
      top = next;
    }

    // Independent chains: each snapshot brings a chain of its own and its own memory layer.
    const independent: Published[] = [];
    for (let i = 0; i < INDEPENDENT; i += 1) {
      const chain: LayerDescriptor[] = [];
      for (let j = 0; j < CHAIN; j += 1) chain.push(await newLayer(db, owner, chain.at(-1)?.uuid ?? null));
      const mem = await newLayer(db, owner, null, "memory");
      independent.push(
        await publish(db, owner, manifest, [...chain, mem], [chain.at(-1)!.uuid, mem.uuid], CHAIN + 1, CHAIN + 1),
      );
    }

    const summarize = (label: string, list: Published[]) => {
      const written = list.reduce((s, p) => s + p.rowsWritten, 0) / list.length;
      const full = list.reduce((s, p) => s + p.fullMappingRows, 0) / list.length;
      console.log(
        `  ${label.padEnd(18)} rows/publish ${written.toFixed(1).padStart(6)}   full mapping ${full
          .toFixed(1)
          .padStart(6)}   ratio ${(full / written).toFixed(1).padStart(5)}x   latency p50 ${ms(
          percentile(
            list.map((p) => p.ms),
            50,
          ),
        )} p99 ${ms(
          percentile(
            list.map((p) => p.ms),
            99,
          ),
        )}`,
      );
    };
    console.log(
      `\n[${kind}] publish (base chain ${BASE}, ${SHARED} shared-prefix, ${INDEPENDENT} independent x ${CHAIN})`,
    );
    summarize("shared prefix", shared);
    summarize("independent", independent);

    const mappingRows = await buildFullMapping(catalog);
    const s = await sizes(catalog);
    console.log(`  sizes (table + indexes):`);
    for (const [t, v] of Object.entries(s)) {
      console.log(`    ${t.padEnd(20)} ${kb(v.table).padStart(10)} + ${kb(v.indexes).padStart(10)}`);
    }
    const headRows = await db.snapshotHead.count();
    console.log(
      `  relationship rows held: snapshot_heads ${headRows} vs full mapping ${mappingRows} (${(mappingRows / headRows).toFixed(1)}x)`,
    );
    await db.$executeRawUnsafe(`DROP TABLE bench_full_mapping`);

    // Collection throughput: retire the independent snapshots and the upper part of the shared chain.
    const keep = Math.floor(SHARED / 3);
    const doomed = [...independent.map((p) => p.snapshotId), ...shared.slice(keep).map((p) => p.snapshotId)];
    for (const id of doomed) await retireSnapshot(db, { snapshotId: id, actor: { type: "system" } });
    const gcStart = performance.now();
    const result = await collectGarbage(db, { force: true, graceSeconds: 0 });
    const gcSeconds = (performance.now() - gcStart) / 1000;
    if (result.status !== "finished") throw new Error(`collection ${result.status}`);
    console.log(
      `  collection: ${result.tally.layersDeleted} layers, ${result.tally.blobsDeleted} blobs, ${result.tally.headsReleased} heads in ${gcSeconds.toFixed(
        2,
      )} s = ${(result.tally.layersDeleted / gcSeconds).toFixed(0)} layers/s (${result.tally.batches} batches)`,
    );

    // Publish latency while a collection runs, against idle: each publish adds one layer to
    // the surviving shared chain.
    let onTop = sharedTops[keep - 1]!;
    // Layers (and their blobs) are prepared first, so the timed loop is publishes only.
    const prepare = async (n: number): Promise<LayerDescriptor[]> => {
      const out: LayerDescriptor[] = [];
      for (let i = 0; i < n; i += 1) out.push(await newLayer(db, owner, (out.at(-1) ?? onTop).uuid));
      return out;
    };
    const measure = async (layers: LayerDescriptor[], keepGoing: () => boolean): Promise<number[]> => {
      const out: number[] = [];
      for (const next of layers) {
        if (!keepGoing()) break;
        out.push((await publish(db, owner, manifest, [onTop, next], [next.uuid, memory.uuid], 1, 0)).ms);
        onTop = next;
      }
      return out;
    };
    const idle = await measure(await prepare(DURING), () => true);
    // Fresh garbage (three times the independent set) for the collection to chew on meanwhile.
    const garbage: string[] = [];
    const garbageBytes: string[] = [];
    for (let i = 0; i < 3 * INDEPENDENT; i += 1) {
      const chain: LayerDescriptor[] = [];
      for (let j = 0; j < CHAIN; j += 1) chain.push(await newLayer(db, owner, chain.at(-1)?.uuid ?? null));
      garbageBytes.push(...chain.map((l) => l.digest));
      garbage.push((await publish(db, owner, manifest, chain, [chain.at(-1)!.uuid], CHAIN, CHAIN)).snapshotId);
    }
    for (const id of garbage) await retireSnapshot(db, { snapshotId: id, actor: { type: "system" } });
    // The garbage is old; the publishes' fresh uploads stay inside the (default) grace window.
    await ageBlobs(db, 7200, garbageBytes);
    const ready = await prepare(10 * DURING);
    let collecting = true;
    const gcStarted = performance.now();
    const background = collectGarbage(db, { force: true }).finally(() => {
      collecting = false;
    });
    const during = await measure(ready, () => collecting);
    const gcElapsed = (performance.now() - gcStarted) / 1000;
    const bg = await background;
    console.log(
      `  publish while collecting (${during.length} publishes during a ${gcElapsed.toFixed(1)} s collection of ${
        bg.status === "skipped" ? 0 : bg.tally.layersDeleted
      } layers): ` +
        `p50 ${ms(percentile(during, 50))} p99 ${ms(percentile(during, 99))}   idle: p50 ${ms(percentile(idle, 50))} p99 ${ms(
          percentile(idle, 99),
        )}`,
    );
  } finally {
    await catalog.drop();
  }
}

for (const kind of KINDS) await run(kind);
