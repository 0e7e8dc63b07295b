// The database itself refuses rows that break the catalog's rules, on both providers; these
// tests go around the services on purpose and write bad rows straight through Prisma.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { Catalog } from "./client.ts";
import { isUniqueViolation } from "./errors.ts";
import { describeEachDatabase } from "../testing/databases.ts";

interface Fixture {
  agentId: string;
  repositoryId: string;
  lineageId: string;
}

async function fixture(db: Catalog): Promise<Fixture> {
  const agent = await db.agent.create({ data: { name: `agent-${randomUUID()}` } });
  const repository = await db.repository.create({ data: { identity: `example.com/${randomUUID()}`, name: "app" } });
  const lineage = await db.lineage.create({
    data: {
      agentId: agent.id,
      workContextId: "task-1",
      repositoryId: repository.id,
      backendKind: "local",
      baseImage: "node:20",
    },
  });
  return { agentId: agent.id, repositoryId: repository.id, lineageId: lineage.id };
}

function baseline(f: Fixture, extra: Record<string, unknown> = {}) {
  return {
    class: "baseline",
    state: "ready",
    agentId: f.agentId,
    repositoryId: f.repositoryId,
    backendKind: "local",
    baseImage: "node:20",
    canonicalRef: "refs/heads/main",
    canonicalCommit: "a".repeat(40),
    validation: { fetched: true },
    ...extra,
  };
}

function checkpoint(f: Fixture, extra: Record<string, unknown> = {}) {
  return {
    class: "checkpoint",
    state: "ready",
    agentId: f.agentId,
    repositoryId: f.repositoryId,
    backendKind: "local",
    baseImage: "node:20",
    workContextId: "task-1",
    lineageId: f.lineageId,
    sequence: 1,
    ...extra,
  };
}

/** The database's own words: SQLite trigger messages sit in the driver error's cause. */
function errorText(error: unknown): string {
  const e = error as { message?: string; meta?: { driverAdapterError?: { cause?: { originalMessage?: string } } } };
  return `${e?.message ?? ""} ${e?.meta?.driverAdapterError?.cause?.originalMessage ?? ""}`;
}

/** Asserts the write is refused and leaves the table's row count unchanged. */
async function expectRefused(db: Catalog, write: () => Promise<unknown>, message?: RegExp) {
  const before = await db.snapshot.count();
  const pinsBefore = await db.pin.count();
  const error = await write().then(
    () => null,
    (e: unknown) => e as Error,
  );
  expect(error, "the database accepted a row it must refuse").not.toBeNull();
  if (message) expect(errorText(error)).toMatch(message);
  expect(await db.snapshot.count()).toBe(before);
  expect(await db.pin.count()).toBe(pinsBefore);
}

describeEachDatabase("catalog constraints", (catalog) => {
  let f: Fixture;
  let db: Catalog;
  beforeAll(async () => {
    db = catalog().db;
    f = await fixture(db);
  });

  describe("snapshot class shape", () => {
    it("accepts a well-formed baseline and checkpoint", async () => {
      const other = await fixture(db);
      await db.snapshot.create({ data: baseline(other) });
      await db.snapshot.create({ data: checkpoint(other) });
      expect(await db.snapshot.count({ where: { agentId: other.agentId } })).toBe(2);
    });

    it("refuses a class other than baseline or checkpoint", async () => {
      await expectRefused(db, () => db.snapshot.create({ data: { ...baseline(f), class: "latest" } }), /check/i);
    });

    it("refuses a baseline carrying checkpoint columns", async () => {
      const shape = /snapshots_class_shape_check/;
      await expectRefused(db, () => db.snapshot.create({ data: baseline(f, { workContextId: "task-1" }) }), shape);
      await expectRefused(db, () => db.snapshot.create({ data: baseline(f, { lineageId: f.lineageId }) }), shape);
      await expectRefused(db, () => db.snapshot.create({ data: baseline(f, { sequence: 1 }) }), shape);
    });

    it("refuses a baseline without its canonical ref, commit or validation evidence", async () => {
      const shape = /snapshots_class_shape_check/;
      await expectRefused(db, () => db.snapshot.create({ data: baseline(f, { canonicalRef: null }) }), shape);
      await expectRefused(db, () => db.snapshot.create({ data: baseline(f, { canonicalCommit: null }) }), shape);
      const { validation: _dropped, ...unvalidated } = baseline(f);
      await expectRefused(db, () => db.snapshot.create({ data: unvalidated }), shape);
    });

    it("refuses a checkpoint carrying baseline columns or missing its lineage", async () => {
      const shape = /snapshots_class_shape_check/;
      await expectRefused(db, () => db.snapshot.create({ data: checkpoint(f, { canonicalRef: "main" }) }), shape);
      await expectRefused(
        db,
        () => db.snapshot.create({ data: checkpoint(f, { canonicalCommit: "b".repeat(40) }) }),
        shape,
      );
      await expectRefused(db, () => db.snapshot.create({ data: checkpoint(f, { workContextId: null }) }), shape);
      await expectRefused(db, () => db.snapshot.create({ data: checkpoint(f, { lineageId: null }) }), shape);
      await expectRefused(db, () => db.snapshot.create({ data: checkpoint(f, { sequence: null }) }), shape);
    });

    it("ties a checkpoint's sequence to its predecessor", async () => {
      const first = await db.snapshot.create({ data: checkpoint(f, { state: "superseded" }) });
      const shape = /snapshots_class_shape_check/;
      // A first checkpoint has no predecessor; a later one must name one.
      await expectRefused(db, () => db.snapshot.create({ data: checkpoint(f, { predecessorId: first.id }) }), shape);
      await expectRefused(db, () => db.snapshot.create({ data: checkpoint(f, { sequence: 2 }) }), shape);
      const second = await db.snapshot.create({
        data: checkpoint(f, { state: "superseded", sequence: 2, predecessorId: first.id }),
      });
      expect(second.sequence).toBe(2);
    });

    it("refuses an unknown lifecycle state", async () => {
      await expectRefused(db, () => db.snapshot.create({ data: baseline(f, { state: "latest" }) }), /check/i);
    });
  });

  describe("one ready head per key", () => {
    it("refuses a second ready baseline for the same baseline key", async () => {
      const k = await fixture(db);
      await db.snapshot.create({ data: baseline(k) });
      await expectRefused(db, () => db.snapshot.create({ data: baseline(k, { canonicalCommit: "c".repeat(40) }) }));
      await expect(db.snapshot.create({ data: baseline(k) })).rejects.toMatchObject({ code: "P2002" });
    });

    it("allows ready baselines that differ in any part of the key, and any number of superseded ones", async () => {
      const k = await fixture(db);
      await db.snapshot.create({ data: baseline(k) });
      await db.snapshot.create({ data: baseline(k, { canonicalRef: "refs/heads/release" }) });
      await db.snapshot.create({ data: baseline(k, { baseImage: "node:22" }) });
      await db.snapshot.create({ data: baseline(k, { backendKind: "modal" }) });
      await db.snapshot.create({ data: baseline(k, { state: "superseded" }) });
      await db.snapshot.create({ data: baseline(k, { state: "superseded" }) });
      expect(await db.snapshot.count({ where: { agentId: k.agentId } })).toBe(6);
    });

    it("refuses a second ready checkpoint head for the same lineage key", async () => {
      const k = await fixture(db);
      const first = await db.snapshot.create({ data: checkpoint(k) });
      await expectRefused(db, () =>
        db.snapshot.create({ data: checkpoint(k, { sequence: 2, predecessorId: first.id }) }),
      );
    });

    it("keeps baseline and checkpoint heads in separate uniqueness domains", async () => {
      const k = await fixture(db);
      await db.snapshot.create({ data: baseline(k) });
      await db.snapshot.create({ data: checkpoint(k) });
      const other = await db.lineage.create({
        data: {
          agentId: k.agentId,
          workContextId: "task-2",
          repositoryId: k.repositoryId,
          backendKind: "local",
          baseImage: "node:20",
        },
      });
      await db.snapshot.create({ data: checkpoint(k, { workContextId: "task-2", lineageId: other.id }) });
      expect(await db.snapshot.count({ where: { agentId: k.agentId, state: "ready" } })).toBe(3);
    });
  });

  describe("aliases", () => {
    it("refuses a reused alias, even when the first holder is retired", async () => {
      const k = await fixture(db);
      const alias = `python-base-${randomUUID()}`;
      const first = await db.snapshot.create({ data: baseline(k, { alias }) });
      await db.snapshot.update({ where: { id: first.id }, data: { state: "retired", retiredAt: new Date() } });
      await expectRefused(db, () => db.snapshot.create({ data: baseline(k, { alias }) }));
      expect((await db.snapshot.findUniqueOrThrow({ where: { alias } })).id).toBe(first.id);
    });

    it("refuses a blank alias", async () => {
      await expectRefused(
        db,
        () => db.snapshot.create({ data: baseline(f, { alias: "   ", state: "superseded" }) }),
        /alias/,
      );
    });

    it("allows any number of snapshots without an alias", async () => {
      const k = await fixture(db);
      await db.snapshot.create({ data: baseline(k, { state: "superseded" }) });
      await db.snapshot.create({ data: baseline(k, { state: "superseded" }) });
      expect(await db.snapshot.count({ where: { agentId: k.agentId, alias: null } })).toBe(2);
    });
  });

  describe("pins", () => {
    it("refuses to reopen a released pin", async () => {
      const { agentId } = await fixture(db);
      const pinId = randomUUID();
      const key = { agentId_pinId: { agentId, pinId } };
      await db.pin.create({ data: { agentId, pinId, snapshotId: randomUUID() } });
      await db.pin.update({ where: key, data: { released: true, releasedAt: new Date() } });
      await expectRefused(
        db,
        () => db.pin.update({ where: key, data: { released: false, releasedAt: null } }),
        /reopened/,
      );
      expect((await db.pin.findUniqueOrThrow({ where: key })).released).toBe(true);
    });

    it("refuses to move a pin to another snapshot or agent, or to delete an active pin", async () => {
      const { agentId } = await fixture(db);
      const other = await fixture(db);
      const pinId = randomUUID();
      const snapshotId = randomUUID();
      const key = { agentId_pinId: { agentId, pinId } };
      await db.pin.create({ data: { agentId, pinId, snapshotId } });
      await expectRefused(db, () => db.pin.update({ where: key, data: { snapshotId: randomUUID() } }), /rebound/);
      await expectRefused(db, () => db.pin.update({ where: key, data: { agentId: other.agentId } }), /rebound/);
      await expectRefused(db, () => db.pin.delete({ where: key }), /active/);
      expect((await db.pin.findUniqueOrThrow({ where: key })).snapshotId).toBe(snapshotId);
    });

    it("refuses a released flag without its release time", async () => {
      const { agentId } = await fixture(db);
      await expectRefused(db, () =>
        db.pin.create({ data: { agentId, pinId: randomUUID(), snapshotId: randomUUID(), released: true } }),
      );
    });

    it("keys pin ids per agent: two agents may use one id, one agent only once", async () => {
      const a = await fixture(db);
      const b = await fixture(db);
      const pinId = `team-pin-${randomUUID()}`;
      await db.pin.create({ data: { agentId: a.agentId, pinId, snapshotId: randomUUID() } });
      await db.pin.create({ data: { agentId: b.agentId, pinId, snapshotId: randomUUID() } });
      await expect(db.pin.create({ data: { agentId: a.agentId, pinId, snapshotId: randomUUID() } })).rejects.toSatisfy(
        isUniqueViolation,
      );
    });
  });

  describe("layers", () => {
    const layer = (data: { uuid: string; parentUuid?: string | null; digest: string; state?: string }) => ({
      ...data,
      agentUuid: data.uuid,
      sizeBytes: 1n,
      kind: "patch",
    });

    it("refuses an unknown state, a self-parent, and moving a layer's state backwards", async () => {
      const uuid = randomUUID();
      await db.layer.create({ data: layer({ uuid, digest: "d".repeat(64) }) });
      await expect(
        db.layer.create({ data: layer({ uuid: randomUUID(), digest: "e".repeat(64), state: "gone" }) }),
      ).rejects.toThrow(/check/i);
      const self = randomUUID();
      await expect(
        db.layer.create({ data: layer({ uuid: self, parentUuid: self, digest: "e".repeat(64) }) }),
      ).rejects.toThrow();
      await db.layer.update({ where: { uuid }, data: { state: "deleting" } });
      await expect(db.layer.update({ where: { uuid }, data: { state: "available" } })).rejects.toThrow();
      expect((await db.layer.findUniqueOrThrow({ where: { uuid } })).state).toBe("deleting");
    });

    it("refuses rebinding a layer to another parent, digest, agent uuid or agent", async () => {
      const { agentId } = await fixture(db);
      const other = await fixture(db);
      const parent = randomUUID();
      const child = randomUUID();
      await db.layer.create({ data: { ...layer({ uuid: parent, digest: "1".repeat(64) }), agentId } });
      await db.layer.create({
        data: { ...layer({ uuid: child, parentUuid: parent, digest: "2".repeat(64) }), agentId },
      });
      for (const data of [
        { parentUuid: null },
        { digest: "3".repeat(64) },
        { agentUuid: randomUUID() },
        { agentId: other.agentId },
      ]) {
        const error = await db.layer.update({ where: { uuid: child }, data }).catch((e: unknown) => e);
        expect(errorText(error)).toMatch(/immutable/);
      }
      expect(await db.layer.findUniqueOrThrow({ where: { uuid: child } })).toMatchObject({
        parentUuid: parent,
        digest: "2".repeat(64),
        agentId,
        agentUuid: child,
      });
    });

    it("keys agent uuids per agent: two agents may declare one uuid, one agent only once", async () => {
      const a = await fixture(db);
      const b = await fixture(db);
      const declared = randomUUID();
      const row = (agentId: string) => ({
        ...layer({ uuid: randomUUID(), digest: "5".repeat(64) }),
        agentId,
        agentUuid: declared,
      });
      await db.layer.create({ data: row(a.agentId) });
      await db.layer.create({ data: row(b.agentId) });
      await expect(db.layer.create({ data: row(a.agentId) })).rejects.toSatisfy(isUniqueViolation);
    });

    it("refuses a parent that does not exist", async () => {
      await expect(
        db.layer.create({ data: layer({ uuid: randomUUID(), parentUuid: randomUUID(), digest: "4".repeat(64) }) }),
      ).rejects.toThrow();
    });
  });

  describe("blobs", () => {
    it("stores each digest once and refuses chunks over 1 MiB", async () => {
      const digest = "f".repeat(64);
      await db.blob.create({ data: { digest, state: "stored", sizeBytes: 1n, chunkCount: 1 } });
      await expect(
        db.blob.create({ data: { digest, state: "stored", sizeBytes: 1n, chunkCount: 1 } }),
      ).rejects.toMatchObject({
        code: "P2002",
      });
      // Uploads in progress may share a digest until one is verified and stored.
      await db.blob.create({ data: { digest, state: "uploading" } });
      const upload = await db.blob.create({ data: { digest, state: "uploading" } });
      await db.blobChunk.create({ data: { blobId: upload.id, seq: 0, data: new Uint8Array(1024 * 1024) } });
      await expect(
        db.blobChunk.create({ data: { blobId: upload.id, seq: 1, data: new Uint8Array(1024 * 1024 + 1) } }),
      ).rejects.toThrow(/check/i);
    });
  });

  describe("users and lineages", () => {
    it("refuses an unknown role and a retired lineage without its reason", async () => {
      await expect(
        db.user.create({ data: { email: `${randomUUID()}@example.com`, name: "x", role: "root" } }),
      ).rejects.toThrow(/check/i);
      await expect(
        db.lineage.update({ where: { id: f.lineageId }, data: { state: "retired", retiredAt: new Date() } }),
      ).rejects.toThrow(/check/i);
      await expect(
        db.lineage.update({
          where: { id: f.lineageId },
          data: { state: "retired", retiredAt: new Date(), retiredReason: "bored" },
        }),
      ).rejects.toThrow(/check/i);
      expect((await db.lineage.findUniqueOrThrow({ where: { id: f.lineageId } })).state).toBe("active");
    });
  });
});
