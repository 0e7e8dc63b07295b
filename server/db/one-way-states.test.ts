// The one-way state rules (migration 20261201200000_one_way_states) held by the database on
// both providers: each forbidden move, written straight through Prisma around the services,
// is refused and changes nothing; each move the services make still goes through.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { Catalog } from "./client.ts";
import { isOneWayStateViolation } from "./errors.ts";
import { describeEachDatabase } from "../testing/databases.ts";

const SNAPSHOT_STATES = ["capturing", "ready", "superseded", "retired", "failed", "deleting", "deleted"] as const;
type SnapshotState = (typeof SNAPSHOT_STATES)[number];

/** The moves the services make (and nothing else), as the migration lists them. */
const ALLOWED: Record<SnapshotState, readonly SnapshotState[]> = {
  capturing: ["ready", "superseded", "retired", "failed", "deleting", "deleted"],
  ready: ["superseded", "retired"],
  superseded: ["retired", "deleting"],
  failed: ["retired", "deleting"],
  retired: ["deleting"],
  deleting: ["deleted"],
  deleted: [],
};

interface Fixture {
  agentId: string;
  repositoryId: string;
}

async function fixture(db: Catalog): Promise<Fixture> {
  const agent = await db.agent.create({ data: { name: `agent-${randomUUID()}` } });
  const repository = await db.repository.create({ data: { identity: `example.com/${randomUUID()}`, name: "app" } });
  return { agentId: agent.id, repositoryId: repository.id };
}

/** A baseline row in `state` (superseded, so the one-ready-baseline index never interferes). */
async function snapshotIn(db: Catalog, f: Fixture, state: SnapshotState): Promise<string> {
  const row = await db.snapshot.create({
    data: {
      class: "baseline",
      state,
      agentId: f.agentId,
      repositoryId: f.repositoryId,
      backendKind: "local",
      baseImage: "node:20",
      canonicalRef: `refs/heads/${randomUUID()}`,
      canonicalCommit: "a".repeat(40),
      validation: { fetched: true },
    },
    select: { id: true },
  });
  return row.id;
}

async function refusal(write: () => Promise<unknown>): Promise<unknown> {
  return write().then(
    () => null,
    (e: unknown) => e,
  );
}

/** Asserts the database refuses the write as a one-way state violation. */
async function expectOneWay(write: () => Promise<unknown>, what: string): Promise<void> {
  const error = await refusal(write);
  expect(error, `the database accepted ${what}`).not.toBeNull();
  expect(isOneWayStateViolation(error), `${what}: ${String(error)}`).toBe(true);
}

describeEachDatabase("one-way state rules", (catalog) => {
  let db: Catalog;
  let f: Fixture;
  beforeAll(async () => {
    db = catalog().db;
    f = await fixture(db);
  });

  describe("snapshots", () => {
    for (const from of SNAPSHOT_STATES) {
      it(`from ${from}: allows exactly ${ALLOWED[from].join(", ") || "nothing"}`, async () => {
        for (const to of SNAPSHOT_STATES) {
          if (to === from) continue;
          const id = await snapshotIn(db, f, from);
          if (ALLOWED[from].includes(to)) {
            await db.snapshot.update({ where: { id }, data: { state: to } });
            expect((await db.snapshot.findUniqueOrThrow({ where: { id } })).state).toBe(to);
          } else {
            await expectOneWay(() => db.snapshot.update({ where: { id }, data: { state: to } }), `${from} -> ${to}`);
            expect((await db.snapshot.findUniqueOrThrow({ where: { id } })).state).toBe(from);
          }
        }
      });
    }

    it("keeps updates that leave the state alone", async () => {
      for (const state of SNAPSHOT_STATES) {
        const id = await snapshotIn(db, f, state);
        await db.snapshot.update({ where: { id }, data: { state, lastRestoredAt: new Date() } });
      }
    });

    it("never makes a retired snapshot ready again, not even in bulk by raw SQL", async () => {
      const id = await snapshotIn(db, f, "retired");
      await expectOneWay(
        () => db.$executeRawUnsafe(`UPDATE snapshots SET state = 'ready' WHERE state = 'retired'`),
        "retired -> ready",
      );
      expect((await db.snapshot.findUniqueOrThrow({ where: { id } })).state).toBe("retired");
    });

    it("never changes a snapshot's class or owner", async () => {
      const id = await snapshotIn(db, f, "superseded");
      await expectOneWay(
        () =>
          db.$executeRawUnsafe(
            `UPDATE snapshots SET class = 'checkpoint', canonical_ref = NULL, canonical_commit = NULL, ` +
              `validation = NULL, work_context_id = 'w', lineage_id = NULL, sequence = 1 WHERE id = '${id}'`,
          ),
        "baseline -> checkpoint",
      );
      const other = await fixture(db);
      await expectOneWay(() => db.snapshot.update({ where: { id }, data: { agentId: other.agentId } }), "a new owner");
    });
  });

  describe("lineages", () => {
    async function lineage(): Promise<string> {
      const row = await db.lineage.create({
        data: {
          agentId: f.agentId,
          workContextId: randomUUID(),
          repositoryId: f.repositoryId,
          backendKind: "local",
          baseImage: "node:20",
        },
      });
      return row.id;
    }

    it("retires an active lineage, and a retired one is never active again nor retired anew", async () => {
      const id = await lineage();
      const at = new Date("2026-12-01T00:00:00.000Z");
      await db.lineage.update({ where: { id }, data: { state: "retired", retiredReason: "completed", retiredAt: at } });
      await expectOneWay(
        () => db.lineage.update({ where: { id }, data: { state: "active", retiredReason: null, retiredAt: null } }),
        "retired -> active",
      );
      await expectOneWay(
        () => db.lineage.update({ where: { id }, data: { retiredReason: "operator" } }),
        "a new retirement reason",
      );
      await expectOneWay(() => db.lineage.update({ where: { id }, data: { retiredAt: new Date() } }), "a new time");
      expect(await db.lineage.findUniqueOrThrow({ where: { id } })).toMatchObject({
        state: "retired",
        retiredReason: "completed",
        retiredAt: at,
      });
      // Other columns of a retired lineage may still change (its origin is rewritten by the ladder).
      await db.lineage.update({ where: { id }, data: { originSnapshotId: null } });
    });
  });

  describe("pins", () => {
    it("closes a pin once; it is never reopened and its release time never changes", async () => {
      const snapshotId = await snapshotIn(db, f, "ready");
      const pinId = randomUUID();
      await db.$executeRawUnsafe(
        `INSERT INTO pins (agent_id, pin_id, snapshot_id) VALUES ('${f.agentId}', '${pinId}', '${snapshotId}')`,
      );
      const at = new Date("2026-12-01T00:00:00.000Z");
      await db.$executeRawUnsafe(
        `UPDATE pins SET released = true, released_at = '${at.toISOString()}' WHERE pin_id = '${pinId}'`,
      );
      const reopen = await refusal(() =>
        db.$executeRawUnsafe(`UPDATE pins SET released = false, released_at = NULL WHERE pin_id = '${pinId}'`),
      );
      expect(reopen, "a closed pin was reopened").not.toBeNull();
      await expectOneWay(
        () =>
          db.$executeRawUnsafe(`UPDATE pins SET released_at = '2027-01-01T00:00:00.000Z' WHERE pin_id = '${pinId}'`),
        "a new release time",
      );
      const [row] = await db.$queryRawUnsafe<{ n: number | bigint }[]>(
        `SELECT COUNT(*) AS n FROM pins WHERE pin_id = '${pinId}' AND released_at IS NOT NULL`,
      );
      expect(Number(row?.n)).toBe(1);
    });
  });

  describe("blobs", () => {
    it("stores an upload once; a stored blob never goes back to uploading nor changes its bytes", async () => {
      const id = randomUUID();
      const digest = randomUUID().replaceAll("-", "").repeat(2);
      await db.blob.create({ data: { id, digest, state: "uploading" } });
      await db.blob.update({ where: { id }, data: { state: "stored", sizeBytes: 5, chunkCount: 1 } });
      await expectOneWay(() => db.blob.update({ where: { id }, data: { state: "uploading" } }), "stored -> uploading");
      await expectOneWay(() => db.blob.update({ where: { id }, data: { sizeBytes: 6 } }), "a new size");
      await expectOneWay(() => db.blob.update({ where: { id }, data: { chunkCount: 2 } }), "a new chunk count");
      await expectOneWay(() => db.blob.update({ where: { id }, data: { digest: "0".repeat(64) } }), "a new digest");
      // The grace window's clock still moves.
      await db.blob.update({ where: { id }, data: { lastReusedAt: new Date(), storedAt: new Date(0) } });
      expect(await db.blob.findUniqueOrThrow({ where: { id } })).toMatchObject({ state: "stored", digest });
    });
  });

  describe("restores", () => {
    async function restore(): Promise<string> {
      const row = await db.restore.create({
        data: {
          agentId: f.agentId,
          repositoryId: f.repositoryId,
          backendKind: "local",
          baseImage: "node:20",
          canonicalRef: "main",
          workspace: "/w",
          host: "h",
          rung: "cold",
        },
      });
      return row.id;
    }

    it("reports an outcome once: it is never pending again nor another outcome", async () => {
      for (const outcome of ["restored", "degraded", "unrestored", "failed"]) {
        const id = await restore();
        await db.restore.update({ where: { id }, data: { outcome, reportedAt: new Date() } });
        for (const next of ["pending", "restored", "degraded", "unrestored", "failed"].filter((o) => o !== outcome)) {
          await expectOneWay(
            () => db.restore.update({ where: { id }, data: { outcome: next } }),
            `${outcome} -> ${next}`,
          );
        }
        // Repeating the same outcome (an idempotent report) writes nothing new but is allowed.
        await db.restore.update({ where: { id }, data: { outcome } });
        expect((await db.restore.findUniqueOrThrow({ where: { id } })).outcome).toBe(outcome);
      }
    });

    it("keeps a discarded restore discarded", async () => {
      const id = await restore();
      await db.restore.update({ where: { id }, data: { outcome: "degraded" } });
      await db.restore.update({ where: { id }, data: { discardedAt: new Date(), discardReason: "support" } });
      await expectOneWay(() => db.restore.update({ where: { id }, data: { discardedAt: null } }), "undiscarded");
    });
  });

  describe("layers", () => {
    it("moves a layer available -> deleting -> deleted only", async () => {
      const uuid = randomUUID();
      await db.$executeRawUnsafe(
        `INSERT INTO layers (uuid, agent_id, agent_uuid, kind, digest, size_bytes, state) ` +
          `VALUES ('${uuid}', '${f.agentId}', '${uuid}', 'patch', '${"b".repeat(64)}', 1, 'available')`,
      );
      const set = (state: string) =>
        db.$executeRawUnsafe(`UPDATE layers SET state = '${state}' WHERE uuid = '${uuid}'`);
      expect(await refusal(() => set("deleted")), "available -> deleted").not.toBeNull();
      await set("deleting");
      expect(await refusal(() => set("available")), "deleting -> available").not.toBeNull();
      await set("deleted");
      expect(await refusal(() => set("deleting")), "deleted -> deleting").not.toBeNull();
    });
  });

  describe("collection runs", () => {
    it("ends a run once", async () => {
      for (const end of ["finished", "failed"]) {
        const id = randomUUID();
        await db.collectionRun.create({ data: { id, status: "running" } });
        await db.collectionRun.update({ where: { id }, data: { status: end, finishedAt: new Date() } });
        for (const next of ["running", "finished", "failed"].filter((s) => s !== end)) {
          await expectOneWay(
            () => db.collectionRun.update({ where: { id }, data: { status: next } }),
            `${end} -> ${next}`,
          );
        }
      }
    });
  });
});
