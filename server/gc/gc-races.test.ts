// Collection racing the writers, with real concurrent transactions on PostgreSQL (on SQLite
// the same calls are serialized by the database lock). Whatever the interleaving: nothing a
// head reaches, nothing an available layer or manifest names, and nothing inside its grace
// window is ever deleted; and what nothing reaches does not survive two collections.
import { randomBytes, randomUUID } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import { inTransaction } from "../db/client.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { isStrataError } from "../domain/errors.ts";
import { putBlob } from "../content/blobs.ts";
import { collectGarbage, type CollectOptions } from "./collect-garbage.ts";
import { publishSnapshot } from "../content/layers.ts";
import { pinSnapshot, releasePin } from "../content/pins.ts";
import { releaseRetiredHeads, retireSnapshot } from "../lineage/retirement.ts";
import {
  ageBlobs,
  consistencyViolations,
  createCapturingSnapshot,
  createOwner,
  reachableLayers,
  sha256,
  storeBytes,
  storedLayer,
  type Owner,
} from "../testing/content.ts";

const HOUR = 3600;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A latch: `reached` resolves once `open()` is called (the held transaction did its write). */
function latch(): { reached: Promise<void>; open: () => void } {
  let open!: () => void;
  const reached = new Promise<void>((resolve) => (open = resolve));
  return { reached, open };
}

describeEachDatabase("collection races", (catalog) => {
  let owner: Owner;
  let manifest: string;
  const db = () => catalog().db;
  const collect = (opts: CollectOptions = {}) => collectGarbage(db(), { force: true, graceSeconds: 0, ...opts });

  beforeAll(async () => {
    owner = await createOwner(db());
    manifest = (await storeBytes(db(), "race manifest", owner)).digest;
    // A ready snapshot names the manifest, so zero-grace collections keep it throughout.
    const keeper = await createCapturingSnapshot(db(), owner);
    await publishSnapshot(db(), { snapshotId: keeper, manifestDigest: manifest, layers: [], heads: [] });
  });

  async function publish(layers: LayerDescriptor[], heads: string[]): Promise<string> {
    const id = await createCapturingSnapshot(db(), owner);
    await publishSnapshot(db(), { snapshotId: id, manifestDigest: manifest, layers, heads });
    return id;
  }

  /** A → B published by a snapshot that is then retired with its heads released: both are garbage. */
  async function deadPrefix(): Promise<[LayerDescriptor, LayerDescriptor]> {
    const a = await storedLayer(db(), { owner });
    const b = await storedLayer(db(), { owner, parentUuid: a.uuid });
    const s = await publish([a, b], [b.uuid]);
    await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    await releaseRetiredHeads(db(), { snapshotIds: [s] });
    await ageBlobs(db(), 2 * HOUR, [a.digest, b.digest]);
    return [a, b];
  }

  async function layerState(uuid: string): Promise<string> {
    return (await db().layer.findFirstOrThrow({ where: { agentUuid: uuid } })).state;
  }

  /** After a publish that reused `prefix`: either it won and the prefix is whole, or it was refused. */
  async function judge(outcome: PromiseSettledResult<unknown>, target: string, prefix: LayerDescriptor[]) {
    if (outcome.status === "fulfilled") {
      for (const l of prefix) expect(await layerState(l.uuid)).toBe("available");
      expect((await db().snapshot.findUniqueOrThrow({ where: { id: target } })).state).toBe("ready");
      return "published" as const;
    }
    expect(isStrataError(outcome.reason, "LAYER_UNAVAILABLE") || isStrataError(outcome.reason, "BLOB_MISSING")).toBe(
      true,
    );
    expect(await db().snapshotHead.count({ where: { snapshotId: target } })).toBe(0);
    expect((await db().snapshot.findUniqueOrThrow({ where: { id: target } })).state).toBe("capturing");
    return "refused" as const;
  }

  it("publishing onto a prefix while collection reclaims it: the prefix survives or the publish is refused", async () => {
    const seen = new Set<string>();
    for (let round = 0; round < 10; round += 1) {
      const [a, b] = await deadPrefix();
      const c = await storedLayer(db(), { owner, parentUuid: b.uuid });
      const target = await createCapturingSnapshot(db(), owner);
      const [published] = await Promise.allSettled([
        publishSnapshot(db(), { snapshotId: target, manifestDigest: manifest, layers: [b, c], heads: [c.uuid] }),
        collect({ batchSize: 1 + (round % 3) }),
      ]);
      seen.add(await judge(published, target, [a, b, c]));
      expect(await consistencyViolations(db())).toEqual([]);
    }
    // Whatever happened, a second collection leaves exactly what heads reach.
    await collect();
    expect(await consistencyViolations(db())).toEqual([]);
    expect(seen.size).toBeGreaterThanOrEqual(1);
  });

  it("a publish holding its transaction open keeps its prefix from a collection that runs meanwhile", async () => {
    const [a, b] = await deadPrefix();
    const c = await storedLayer(db(), { owner, parentUuid: b.uuid });
    const target = await createCapturingSnapshot(db(), owner);
    const published = latch();
    const held = inTransaction(db(), async (tx) => {
      await publishSnapshot(tx, { snapshotId: target, manifestDigest: manifest, layers: [b, c], heads: [c.uuid] });
      published.open();
      await sleep(400);
    });
    await published.reached;
    const run = await collect();
    await held;
    expect(run.status).toBe("finished");
    for (const l of [a, b, c]) expect(await layerState(l.uuid)).toBe("available");
    await collect();
    for (const l of [a, b, c]) expect(await layerState(l.uuid)).toBe("available");
    expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);
  });

  it("a collection holding its mark transaction open makes a publish onto that prefix fail cleanly", async () => {
    const [a, b] = await deadPrefix();
    const c = await storedLayer(db(), { owner, parentUuid: b.uuid });
    const target = await createCapturingSnapshot(db(), owner);
    let marking!: () => void;
    const inside = new Promise<void>((resolve) => (marking = resolve));
    const run = collect({
      hooks: {
        inBatch: async (phase, info) => {
          if (phase === "mark" && info.count > 0) {
            marking();
            await sleep(400);
          }
        },
      },
    });
    await inside;
    // The refused publish keeps its transaction (and its share lock on b) a little longer, as a
    // slow caller would: the collection must still finish b in this run, not leave it deleting.
    const outcome = await Promise.allSettled([
      inTransaction(db(), async (tx) => {
        const refused = await publishSnapshot(tx, {
          snapshotId: target,
          manifestDigest: manifest,
          layers: [b, c],
          heads: [c.uuid],
        }).catch((error: unknown) => error);
        await sleep(300);
        throw refused;
      }),
    ]);
    expect((await run).status).toBe("finished");
    expect(await judge(outcome[0]!, target, [a, b, c])).toBe("refused");
    expect(isStrataError((outcome[0] as PromiseRejectedResult).reason, "LAYER_UNAVAILABLE")).toBe(true);
    expect(await layerState(b.uuid)).toBe("deleted");
    expect(await consistencyViolations(db())).toEqual([]);
  });

  it("a new layer over bytes whose old layer is being collected either keeps the bytes or is refused", async () => {
    // Held collection (bytes step) first: the new layer finds its blob gone (BLOB_MISSING).
    const [, b] = await deadPrefix();
    const twin: LayerDescriptor = {
      uuid: randomUUID(),
      parentUuid: null,
      digest: b.digest,
      sizeBytes: b.sizeBytes,
      kind: "patch",
    };
    const target = await createCapturingSnapshot(db(), owner);
    let inBytes!: () => void;
    const inside = new Promise<void>((resolve) => (inBytes = resolve));
    const run = collect({
      hooks: {
        inBatch: async (phase, info) => {
          if (phase === "bytes" && info.count > 0) {
            inBytes();
            await sleep(400);
          }
        },
      },
    });
    await inside;
    const [outcome] = await Promise.allSettled([
      publishSnapshot(db(), { snapshotId: target, manifestDigest: manifest, layers: [twin], heads: [twin.uuid] }),
    ]);
    await run;
    if (outcome!.status === "rejected") expect(isStrataError(outcome!.reason, "BLOB_MISSING")).toBe(true);
    expect(await consistencyViolations(db())).toEqual([]);

    // Held publish first: collection deletes the old layer but must keep the shared bytes.
    const [, b2] = await deadPrefix();
    const twin2: LayerDescriptor = { ...twin, uuid: randomUUID(), digest: b2.digest, sizeBytes: b2.sizeBytes };
    const target2 = await createCapturingSnapshot(db(), owner);
    const published2 = latch();
    const held = inTransaction(db(), async (tx) => {
      await publishSnapshot(tx, {
        snapshotId: target2,
        manifestDigest: manifest,
        layers: [twin2],
        heads: [twin2.uuid],
      });
      published2.open();
      await sleep(400);
    });
    await published2.reached;
    await collect();
    await held;
    await collect();
    expect(await layerState(twin2.uuid)).toBe("available");
    expect(await db().blob.count({ where: { digest: b2.digest, state: "stored" } })).toBe(1);
    expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);
  });

  async function* slowBody(bytes: Buffer): AsyncGenerator<Uint8Array> {
    for (let offset = 0; offset < bytes.byteLength; offset += 100_000) {
      await sleep(5);
      yield bytes.subarray(offset, offset + 100_000);
    }
  }

  it("an upload not yet referenced survives collections inside the default grace window", async () => {
    for (let round = 0; round < 4; round += 1) {
      const bytes = randomBytes(700_000);
      const digest = sha256(bytes);
      const [put, run] = await Promise.all([
        putBlob(db(), { digest, body: slowBody(bytes), grantTo: owner.agentId }),
        collectGarbage(db(), { force: true }),
      ]);
      expect(put.created).toBe(true);
      expect(run.status).toBe("finished");
      await collectGarbage(db(), { force: true });
      expect(await db().blob.count({ where: { digest, state: "stored" } })).toBe(1);
      // And a publish that names it later, after those collections, succeeds.
      const layer: LayerDescriptor = {
        uuid: randomUUID(),
        parentUuid: null,
        digest,
        sizeBytes: bytes.byteLength,
        kind: "patch",
      };
      await publish([layer], [layer.uuid]);
    }
    // An old unreferenced blob re-uploaded while collection runs is never lost either:
    // the reuse restarts its window, or it was collected first and the upload stores it again.
    for (let round = 0; round < 4; round += 1) {
      const bytes = randomBytes(300_000);
      const digest = sha256(bytes);
      await putBlob(db(), { digest, body: slowBody(bytes), grantTo: owner.agentId });
      await ageBlobs(db(), 2 * HOUR, [digest]);
      await Promise.all([
        putBlob(db(), { digest, body: slowBody(bytes), grantTo: owner.agentId }),
        collectGarbage(db(), { force: true }),
      ]);
      expect(await db().blob.count({ where: { digest, state: "stored" } })).toBe(1);
    }
    expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);
  });

  it("with zero grace, an unreferenced upload is fair game but never half-deleted, and gone after two collections", async () => {
    for (let round = 0; round < 4; round += 1) {
      const bytes = randomBytes(600_000);
      const digest = sha256(bytes);
      // The upload itself always completes: an upload in progress is not reclaimed.
      const [put] = await Promise.all([
        putBlob(db(), { digest, body: slowBody(bytes), grantTo: owner.agentId }),
        collect(),
      ]);
      expect(put.sizeBytes).toBe(bytes.byteLength);
      expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);
      await collect();
      await collect();
      expect(await db().blob.count({ where: { digest } })).toBe(0);
      // A publish naming it now is refused, and writes nothing.
      const layer: LayerDescriptor = {
        uuid: randomUUID(),
        parentUuid: null,
        digest,
        sizeBytes: bytes.byteLength,
        kind: "patch",
      };
      const target = await createCapturingSnapshot(db(), owner);
      const refused = await publishSnapshot(db(), {
        snapshotId: target,
        manifestDigest: manifest,
        layers: [layer],
        heads: [layer.uuid],
      }).catch((e: unknown) => e);
      expect(isStrataError(refused, "BLOB_MISSING")).toBe(true);
      expect(await db().layer.count({ where: { agentUuid: layer.uuid } })).toBe(0);
    }
  });

  it("under random concurrent publish, pin, retire and collection: nothing reachable is lost, nothing unreachable survives", async () => {
    const live: string[] = [];
    const snapshots: string[] = [];
    const pins: { agentId: string; snapshotId: string; pinId: string }[] = [];
    const pick = <T>(items: T[]): T | undefined => items[Math.floor(Math.random() * items.length)];
    const outcomes: Record<string, number> = {};
    const tally = (key: string) => (outcomes[key] = (outcomes[key] ?? 0) + 1);

    async function step(): Promise<void> {
      const roll = Math.random();
      try {
        if (roll < 0.4) {
          // Extend a random existing layer (maybe one being collected) or start a chain.
          const parent = Math.random() < 0.7 ? pick(live) : undefined;
          const fresh = await storedLayer(db(), { owner, parentUuid: parent ?? null });
          const id = await publish([fresh], [fresh.uuid]);
          live.push(fresh.uuid);
          snapshots.push(id);
          tally("published");
        } else if (roll < 0.55) {
          const s = pick(snapshots);
          if (s) await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
          if (Math.random() < 0.5) await releaseRetiredHeads(db());
          tally("retired");
        } else if (roll < 0.7) {
          const s = pick(snapshots);
          if (s) {
            const pinId = randomUUID();
            await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId });
            pins.push({ agentId: owner.agentId, snapshotId: s, pinId });
          }
          tally("pinned");
        } else if (roll < 0.8) {
          const p = pins.splice(Math.floor(Math.random() * pins.length), 1)[0];
          if (p) await releasePin(db(), p);
          tally("released");
        } else {
          await collect({ batchSize: 3 });
          tally("collected");
        }
      } catch (error) {
        if (
          !isStrataError(error, "LAYER_UNAVAILABLE") &&
          !isStrataError(error, "PIN_REFUSED") &&
          !isStrataError(error, "BLOB_MISSING")
        ) {
          throw error;
        }
        tally(`refused ${(error as { code: string }).code}`);
      }
    }

    const worker = async () => {
      for (let i = 0; i < 25; i += 1) await step();
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    expect(await consistencyViolations(db())).toEqual([]);

    // Quiesce: end every pin, retire a random half, release heads, then two collections.
    for (const p of pins) await releasePin(db(), p);
    for (const s of snapshots)
      if (Math.random() < 0.5) await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    await collect();
    await collect();
    expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);
    const reachable = await reachableLayers(db());
    const layers = await db().layer.findMany({ select: { uuid: true, state: true, digest: true } });
    for (const l of layers) expect(l.state, l.uuid).toBe(reachable.has(l.uuid) ? "available" : "deleted");
    // Stored bytes are exactly those still named: available layers and live manifests.
    const named = new Set(layers.filter((l) => l.state === "available").map((l) => l.digest));
    for (const s of await db().snapshot.findMany({
      where: { state: { not: "deleted" }, manifestDigest: { not: null } },
    })) {
      named.add(s.manifestDigest!);
    }
    const storedDigests = (await db().blob.findMany({ where: { state: "stored" }, select: { digest: true } })).map(
      (b) => b.digest,
    );
    expect(new Set(storedDigests)).toEqual(named);
    console.info("random workload outcomes:", outcomes);
  }, 180_000);
});
