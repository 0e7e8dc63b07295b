import { randomUUID } from "node:crypto";
import { afterEach, beforeAll, expect, it, vi } from "vitest";
import { openCatalog } from "../db/client.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { StrataError } from "../domain/errors.ts";
import {
  collectGarbage,
  GC_LEASE,
  listCollectionRuns,
  scheduleCollection,
  type CollectOptions,
  type CollectResult,
} from "./collect-garbage.ts";
import { putBlob } from "../content/blobs.ts";
import { publishSnapshot } from "../content/layers.ts";
import { pinSnapshot, releasePin } from "../content/pins.ts";
import { retireSnapshot } from "../lineage/retirement.ts";
import {
  ageBlobs,
  consistencyViolations,
  createCapturingSnapshot,
  createOwner,
  reachableLayers,
  storeBytes,
  storedLayer,
  type Owner,
} from "../testing/content.ts";

const HOUR = 3600;

afterEach(() => {
  vi.useRealTimers();
});

describeEachDatabase("garbage collection", (catalog) => {
  let owner: Owner;
  let manifest: string;
  const db = () => catalog().db;
  /** A collection that always runs, with no grace: what is unreferenced goes at once. */
  const collectNow = (opts: CollectOptions = {}) => collectGarbage(db(), { force: true, graceSeconds: 0, ...opts });

  async function publish(layers: LayerDescriptor[], heads: string[]): Promise<string> {
    const id = await createCapturingSnapshot(db(), owner);
    await publishSnapshot(db(), { snapshotId: id, manifestDigest: manifest, layers, heads });
    return id;
  }

  async function chain(length: number, parentUuid: string | null = null): Promise<LayerDescriptor[]> {
    const out: LayerDescriptor[] = [];
    for (let i = 0; i < length; i += 1) {
      out.push(await storedLayer(db(), { owner, parentUuid: out.at(-1)?.uuid ?? parentUuid }));
    }
    return out;
  }

  async function states(uuids: string[]): Promise<Record<string, string>> {
    const rows = await db().layer.findMany({
      where: { agentUuid: { in: uuids } },
      select: { agentUuid: true, state: true },
    });
    return Object.fromEntries(uuids.map((u) => [u, rows.find((r) => r.agentUuid === u)?.state ?? "absent"]));
  }

  async function stored(digests: string[]): Promise<boolean[]> {
    const rows = await db().blob.findMany({
      where: { digest: { in: digests }, state: "stored" },
      select: { digest: true },
    });
    return digests.map((d) => rows.some((r) => r.digest === d));
  }

  beforeAll(async () => {
    owner = await createOwner(db());
    manifest = (await storeBytes(db(), "gc test manifest", owner)).digest;
  });

  it("collects a dead branch whole and keeps the shared prefix that a live head reaches", async () => {
    const [a, b] = await chain(2);
    const live = await storedLayer(db(), { owner, parentUuid: b!.uuid });
    const dead = await chain(3, a!.uuid);
    await publish([a!, b!, live], [live.uuid]);
    const doomed = await publish([a!, ...dead], [dead.at(-1)!.uuid]);
    await retireSnapshot(db(), { snapshotId: doomed, actor: { type: "system" } });

    const result = await collectNow();
    expect(result.status).toBe("finished");
    if (result.status !== "finished") return;
    expect(result.tally).toMatchObject({ headsReleased: 1, layersMarked: 3, layersDeleted: 3, blobsDeleted: 3 });
    expect(await states([a!.uuid, b!.uuid, live.uuid, ...dead.map((l) => l.uuid)])).toEqual({
      [a!.uuid]: "available",
      [b!.uuid]: "available",
      [live.uuid]: "available",
      ...Object.fromEntries(dead.map((l) => [l.uuid, "deleted"])),
    });
    expect(await stored(dead.map((l) => l.digest))).toEqual([false, false, false]);
    expect(await stored([a!.digest, b!.digest, live.digest, manifest])).toEqual([true, true, true, true]);
    expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);

    // Nothing more to do: a second run changes nothing.
    const second = await collectNow();
    expect(second.status === "finished" && second.tally).toMatchObject({ layersDeleted: 0, blobsDeleted: 0 });
  });

  it("takes a long dead chain in one run, in small batches", async () => {
    const long = await chain(120);
    const s = await publish(long, [long.at(-1)!.uuid]);
    await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    const result = await collectNow({ batchSize: 7 });
    expect(result.status === "finished" && result.tally).toMatchObject({ layersDeleted: 120, blobsDeleted: 120 });
    expect(result.status === "finished" && result.tally.batches).toBeGreaterThan(120 / 7);
    expect(new Set(Object.values(await states(long.map((l) => l.uuid))))).toEqual(new Set(["deleted"]));
  });

  it("a dry run names exactly what the real run then deletes and frees, and changes nothing", async () => {
    await collectNow(); // Earlier tests' leftovers go first, so the figures below are this test's alone.
    // Published a moment ago: the blobs are inside the default grace window by their upload time.
    const dead = await chain(3);
    const doomed = await publish(dead, [dead.at(-1)!.uuid]);
    await retireSnapshot(db(), { snapshotId: doomed, actor: { type: "system" } });
    const declared = dead.reduce((sum, l) => sum + l.sizeBytes, 0);
    const runsBefore = await db().collectionRun.count({ where: { dryRun: false } });

    const preview = await collectGarbage(db(), { dryRun: true, host: "dashboard:preview" });
    expect(preview.status).toBe("finished");
    if (preview.status !== "finished") return;
    expect(preview.dryRun).toBe(true);
    const expected = {
      headsReleased: 1,
      layersDeleted: 3,
      layerBytes: declared,
      blobsDeleted: 3,
      bytesFreed: declared,
    };
    expect(preview.tally).toMatchObject(expected);
    // Nothing changed: the layers, their bytes and the head are all still there, no lease is held.
    expect(new Set(Object.values(await states(dead.map((l) => l.uuid))))).toEqual(new Set(["available"]));
    expect(await stored(dead.map((l) => l.digest))).toEqual([true, true, true]);
    expect(await db().snapshotHead.count({ where: { snapshotId: doomed } })).toBe(1);
    expect(await db().lease.findUnique({ where: { name: GC_LEASE } })).toBeNull();
    // It is in the run log as a dry run, and the interval does not count it.
    const [logged] = await listCollectionRuns(db(), { limit: 1 });
    expect(logged).toMatchObject({ id: preview.runId, dryRun: true, host: "dashboard:preview", ...expected });
    expect(await db().collectionRun.count({ where: { dryRun: false } })).toBe(runsBefore);

    const real = await collectGarbage(db(), { force: true });
    expect(real.status === "finished" && real.dryRun).toBe(false);
    if (real.status !== "finished") return;
    const { batches: _a, ...previewFigures } = preview.tally;
    const { batches: _b, ...realFigures } = real.tally;
    expect(realFigures).toEqual(previewFigures);
    expect(await stored(dead.map((l) => l.digest))).toEqual([false, false, false]);
    expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);
  });

  it("a dry run keeps what a real run keeps, and waits out a real run instead of guessing", async () => {
    await collectNow();
    const live = await chain(2);
    await publish(live, [live.at(-1)!.uuid]);
    const loose = await storeBytes(db(), `fresh upload ${randomUUID()}`);
    const preview = await collectGarbage(db(), { dryRun: true });
    expect(preview.status === "finished" && preview.tally).toMatchObject({ layersDeleted: 0, bytesFreed: 0 });
    expect(await stored([...live.map((l) => l.digest), loose.digest])).toEqual([true, true, true]);

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const running = collectNow({
      hooks: {
        afterBatch: async (phase) => {
          if (phase === "pins") {
            entered();
            await held;
          }
        },
      },
    });
    await inside;
    expect(await collectGarbage(db(), { dryRun: true })).toMatchObject({ status: "skipped", reason: "running" });
    release();
    expect((await running).status).toBe("finished");
  });

  it("keeps a retired snapshot's content while a pin is active, and lets an expired pin stop protecting", async () => {
    const layers = await chain(2);
    const s = await publish(layers, [layers[1]!.uuid]);
    await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId: `hold-${randomUUID()}` });
    const expiring = `expiring-${randomUUID()}`;
    await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId: expiring, expiresInSeconds: HOUR });
    await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    await collectNow();
    expect(await db().snapshotHead.count({ where: { snapshotId: s } })).toBe(1);
    expect(Object.values(await states(layers.map((l) => l.uuid)))).toEqual(["available", "available"]);

    // Release the open-ended pin; the other one still protects until it expires.
    const hold = await db().pin.findFirstOrThrow({ where: { snapshotId: s, expiresAt: null } });
    await releasePin(db(), { agentId: owner.agentId, snapshotId: s, pinId: hold.pinId });
    await collectNow();
    expect(await db().snapshotHead.count({ where: { snapshotId: s } })).toBe(1);

    // Expire it (move its expiry into the past): collection records it released and reclaims.
    await db().pin.update({
      where: { agentId_pinId: { agentId: owner.agentId, pinId: expiring } },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const result = await collectNow();
    expect(result.status === "finished" && result.tally).toMatchObject({
      pinsExpired: 1,
      headsReleased: 1,
      layersDeleted: 2,
    });
    expect(
      (await db().pin.findUniqueOrThrow({ where: { agentId_pinId: { agentId: owner.agentId, pinId: expiring } } }))
        .released,
    ).toBe(true);
  });

  it("keeps an unreferenced blob through its grace window, counted from its last reuse", async () => {
    const loose = await storeBytes(db(), `loose ${randomUUID()}`);
    const defaultGrace = await collectGarbage(db(), { force: true });
    expect(defaultGrace.status).toBe("finished");
    expect(await stored([loose.digest])).toEqual([true]);

    await ageBlobs(db(), 2 * HOUR, [loose.digest]);
    // A reuse (an upload or a `missing` query naming it) restarts the window.
    await storeBytes(db(), await blobBytes(loose.digest));
    await collectGarbage(db(), { force: true });
    expect(await stored([loose.digest])).toEqual([true]);

    await ageBlobs(db(), 2 * HOUR, [loose.digest]);
    const result = await collectGarbage(db(), { force: true });
    expect(result.status === "finished" && result.tally.blobsDeleted).toBeGreaterThanOrEqual(1);
    expect(await stored([loose.digest])).toEqual([false]);
    expect(await db().blobChunk.count({ where: { blob: { digest: loose.digest } } })).toBe(0);
  });

  it("deletes a digest's grants with its bytes, and keeps the grants of bytes it keeps", async () => {
    const other = await createOwner(db());
    const grantsOf = async (digests: string[]) =>
      Promise.all(digests.map((digest) => db().blobGrant.count({ where: { digest } })));
    // A layer's bytes both agents uploaded, deleted with the layer when its snapshot goes.
    const [dead] = await chain(1);
    const deadBytes = await blobBytes(dead!.digest);
    await storeBytes(db(), deadBytes, other);
    const doomed = await publish([dead!], [dead!.uuid]);
    // An upload nothing references (deleted past its grace window), and a live layer's bytes.
    const looseBytes = Buffer.from(`loose ${randomUUID()}`);
    const loose = await storeBytes(db(), looseBytes, other);
    const [live] = await chain(1);
    await publish([live!], [live!.uuid]);
    await retireSnapshot(db(), { snapshotId: doomed, actor: { type: "system" } });
    const digests = [dead!.digest, loose.digest, live!.digest];
    expect(await grantsOf(digests)).toEqual([2, 1, 1]);

    expect((await collectNow()).status).toBe("finished");
    expect(await stored(digests)).toEqual([false, false, true]);
    expect(await grantsOf(digests)).toEqual([0, 0, 1]);

    // So the bytes uploaded again are new for their agent again.
    const body = (async function* () {
      yield looseBytes;
    })();
    expect((await putBlob(db(), { digest: loose.digest, body, grantTo: other.agentId })).created).toBe(true);
    expect(await grantsOf([loose.digest])).toEqual([1]);
  });

  async function blobBytes(digest: string): Promise<Buffer> {
    const row = await db().blob.findFirstOrThrow({
      where: { digest },
      include: { chunks: { orderBy: { seq: "asc" } } },
    });
    return Buffer.concat(row.chunks.map((c) => c.data));
  }

  it("keeps bytes another layer, a manifest or a snapshot's blob list still names", async () => {
    const shared = await storeBytes(db(), `shared ${randomUUID()}`, owner);
    const one: LayerDescriptor = { uuid: randomUUID(), parentUuid: null, ...shared, kind: "patch" };
    const two: LayerDescriptor = { uuid: randomUUID(), parentUuid: null, ...shared, kind: "bundle" };
    const dying = await publish([one], [one.uuid]);
    await publish([two], [two.uuid]);
    await retireSnapshot(db(), { snapshotId: dying, actor: { type: "system" } });
    await collectNow();
    expect(await states([one.uuid, two.uuid])).toEqual({ [one.uuid]: "deleted", [two.uuid]: "available" });
    expect(await stored([shared.digest])).toEqual([true]);

    // A manifest blob stays while its snapshot is not deleted, whatever its age.
    const ownManifest = await storeBytes(db(), `manifest ${randomUUID()}`, owner);
    const s = await createCapturingSnapshot(db(), owner);
    await publishSnapshot(db(), { snapshotId: s, manifestDigest: ownManifest.digest, layers: [], heads: [] });
    await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    await ageBlobs(db(), 2 * HOUR, [ownManifest.digest]);
    await collectNow();
    expect(await stored([ownManifest.digest])).toEqual([true]);

    // Snapshots that list their blobs in metadata (published before layers) keep them too.
    const listed = await storeBytes(db(), `listed ${randomUUID()}`);
    const legacy = await createCapturingSnapshot(db(), owner);
    await db().snapshot.update({
      where: { id: legacy },
      data: { state: "ready", metadata: { manifest: { blobDigests: [listed.digest] } } },
    });
    await ageBlobs(db(), 2 * HOUR, [listed.digest]);
    await collectNow();
    expect(await stored([listed.digest])).toEqual([true]);

    // Once such a snapshot is deleting and has no pin, it ends deleted and its bytes may go
    // (a ready snapshot gets there only through retirement: the database allows no shortcut).
    await db().snapshot.update({ where: { id: legacy }, data: { state: "retired", retiredAt: new Date() } });
    await db().snapshot.update({ where: { id: legacy }, data: { state: "deleting" } });
    await db().snapshot.update({ where: { id: s }, data: { state: "deleting" } });
    const result = await collectNow();
    expect(result.status === "finished" && result.tally.snapshotsDeleted).toBe(2);
    expect((await db().snapshot.findUniqueOrThrow({ where: { id: legacy } })).state).toBe("deleted");
    expect(await stored([listed.digest, ownManifest.digest])).toEqual([false, false]);
  });

  it("reclaims abandoned uploads after a day, never one in progress", async () => {
    const fresh = await db().blob.create({
      data: { digest: "1".repeat(64), state: "uploading", storedAt: new Date() },
    });
    const old = await db().blob.create({
      data: { digest: "2".repeat(64), state: "uploading", storedAt: new Date(Date.now() - 25 * HOUR * 1000) },
    });
    await db().$executeRawUnsafe(
      `INSERT INTO blob_chunks (blob_id, seq, data) VALUES (${catalog().dialect.p(1)}, 0, ${catalog().dialect.p(2)})`,
      old.id,
      Buffer.from("partial"),
    );
    const result = await collectNow();
    expect(result.status === "finished" && result.tally.uploadsAbandoned).toBe(1);
    expect(await db().blob.count({ where: { id: old.id } })).toBe(0);
    expect(await db().blobChunk.count({ where: { blobId: old.id } })).toBe(0);
    expect(await db().blob.count({ where: { id: fresh.id } })).toBe(1);
    await db().blob.delete({ where: { id: fresh.id } });
  });

  it("runs at most once per interval across handles, on the database's clock, and records each run", async () => {
    // A second PostgreSQL pool acts as another process. Two SQLite handles in one process
    // would block each other's event loop on the file lock: there the calls share one handle
    // (separate processes are in gc-processes.test.ts).
    const other = catalog().dialect.kind === "postgres" ? openCatalog(catalog().url, { poolSize: 2 }) : catalog();
    try {
      await collectNow();
      const before = (await listCollectionRuns(db(), { limit: 1000 })).length;
      const [one, two] = await Promise.all([
        collectGarbage(db(), { intervalSeconds: HOUR }),
        collectGarbage(other.db, { intervalSeconds: HOUR }),
      ]);
      // The forced run just finished, so neither is due.
      expect([one.status, two.status]).toEqual(["skipped", "skipped"]);
      expect(one.status === "skipped" && one.reason).toBe("not-due");
      expect((await listCollectionRuns(db(), { limit: 1000 })).length).toBe(before);

      // The application's clock means nothing: a day ahead, the database still says not due.
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(new Date(Date.now() + 24 * HOUR * 1000));
      expect((await collectGarbage(db(), { intervalSeconds: HOUR })).status).toBe("skipped");
      vi.useRealTimers();

      // Once the interval passed on the database's clock, exactly one of two processes runs.
      await db().collectionRun.updateMany({ data: { finishedAt: new Date(Date.now() - 2 * HOUR * 1000) } });
      const raced = await Promise.all([
        collectGarbage(db(), { intervalSeconds: HOUR }),
        collectGarbage(other.db, { intervalSeconds: HOUR }),
        collectGarbage(other.db, { intervalSeconds: HOUR }),
      ]);
      expect(raced.filter((r) => r.status === "finished")).toHaveLength(1);
      const runs = await listCollectionRuns(db(), { limit: 1 });
      expect(runs[0]).toMatchObject({ status: "finished", errorCode: null });
      expect(runs[0]!.finishedAt!.getTime()).toBeGreaterThanOrEqual(runs[0]!.startedAt.getTime());
      expect(await db().lease.count({ where: { name: GC_LEASE } })).toBe(0);
    } finally {
      if (other !== catalog()) await other.close();
    }
  });

  it("runs on a schedule when due, skips when not, and stops cleanly", async () => {
    await db().collectionRun.updateMany({ data: { finishedAt: new Date(Date.now() - 2 * HOUR * 1000) } });
    const results: CollectResult[] = [];
    const schedule = scheduleCollection(db(), {
      checkSeconds: 0.05,
      intervalSeconds: HOUR,
      onResult: (r) => results.push(r),
      onError: (e) => {
        throw e;
      },
    });
    const deadline = Date.now() + 15_000;
    while (results.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await schedule.stop();
    expect(results[0]!.status).toBe("finished");
    expect(results.slice(1).every((r) => r.status === "skipped" && r.reason === "not-due")).toBe(true);
    const settled = results.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(results.length).toBe(settled);
  });

  it("never runs two collections at once, even when forced", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const first = collectNow({
      hooks: {
        afterBatch: async (phase) => {
          if (phase === "pins") {
            entered();
            await held;
          }
        },
      },
    });
    await inside;
    const second = await collectNow();
    expect(second).toMatchObject({ status: "skipped", reason: "running" });
    release();
    expect((await first).status).toBe("finished");
  });

  it("records a failed run with its error code and frees the lease", async () => {
    const result = await collectNow({
      hooks: {
        inBatch: async (phase) => {
          if (phase === "pins") throw new StrataError("UNAVAILABLE", "storage went away");
        },
      },
    });
    expect(result).toMatchObject({ status: "failed", errorCode: "UNAVAILABLE" });
    const [run] = await listCollectionRuns(db(), { limit: 1 });
    expect(run).toMatchObject({ status: "failed", errorCode: "UNAVAILABLE" });
    expect(run!.finishedAt).not.toBeNull();
    expect(await db().lease.count({ where: { name: GC_LEASE } })).toBe(0);
    // A failure counts as the last collection: the next one waits for the interval.
    expect((await collectGarbage(db(), { intervalSeconds: HOUR })).status).toBe("skipped");
  });

  it("stops at the next batch when its lease was taken over (fencing) or it was aborted", async () => {
    const layers = await chain(30);
    const s = await publish(layers, [layers.at(-1)!.uuid]);
    await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    let marks = 0;
    const result = await collectNow({
      batchSize: 5,
      hooks: {
        afterBatch: async (phase) => {
          if (phase === "bytes" && ++marks === 2) {
            // Another process presumed this one dead and took the lease.
            await db().lease.update({ where: { name: GC_LEASE }, data: { holder: "someone-else" } });
          }
        },
      },
    });
    expect(result).toMatchObject({ status: "failed", errorCode: "LEASE_LOST" });
    const deleted = Object.values(await states(layers.map((l) => l.uuid))).filter((s) => s === "deleted").length;
    expect(deleted).toBe(10);
    expect(await consistencyViolations(db())).toEqual([]);
    await db().lease.deleteMany({ where: { name: GC_LEASE } });

    const controller = new AbortController();
    const aborted = await collectNow({
      batchSize: 5,
      signal: controller.signal,
      hooks: { afterBatch: async (phase) => (phase === "bytes" ? controller.abort() : undefined) },
    });
    expect(aborted).toMatchObject({ status: "failed", errorCode: "ABORTED" });
    // The next run finishes the work.
    expect((await collectNow()).status).toBe("finished");
    expect(new Set(Object.values(await states(layers.map((l) => l.uuid))))).toEqual(new Set(["deleted"]));
    expect(await reachableLayers(db())).not.toContain(layers[0]!.uuid);
  });
});
