import { randomUUID } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { publishSnapshot } from "../content/layers.ts";
import { pinSnapshot, releasePin } from "../content/pins.ts";
import { releaseRetiredHeads, retireSnapshot } from "./retirement.ts";
import { createCapturingSnapshot, createOwner, storeBytes, storedLayer, type Owner } from "../testing/content.ts";

describeEachDatabase("retirement (delete is retire)", (catalog) => {
  let owner: Owner;
  let manifest: string;
  const db = () => catalog().db;

  beforeAll(async () => {
    owner = await createOwner(db());
    manifest = (await storeBytes(db(), "retirement manifest", owner)).digest;
  });

  async function ready(alias?: string): Promise<string> {
    const id = await createCapturingSnapshot(db(), owner, alias ? { alias } : {});
    const a = await storedLayer(db(), { owner });
    const b = await storedLayer(db(), { owner, kind: "bundle" });
    await publishSnapshot(db(), { snapshotId: id, manifestDigest: manifest, layers: [a, b], heads: [a.uuid, b.uuid] });
    return id;
  }

  it("retires once, keeps the row, alias, heads and manifest, and audits who did it", async () => {
    const alias = `kept-${randomUUID()}`;
    const s = await ready(alias);
    const first = await retireSnapshot(db(), { snapshotId: s, actor: { type: "agent", id: owner.agentId } });
    expect(first).toMatchObject({ state: "retired", alreadyRetired: false, activePins: 0 });
    const again = await retireSnapshot(db(), { snapshotId: s, actor: { type: "agent", id: owner.agentId } });
    expect(again).toMatchObject({ state: "retired", alreadyRetired: true });
    expect(again.retiredAt!.getTime()).toBe(first.retiredAt!.getTime());
    const row = await db().snapshot.findUniqueOrThrow({ where: { id: s } });
    expect(row).toMatchObject({ state: "retired", alias, manifestDigest: manifest, retiredReason: "deleted" });
    expect(await db().snapshotHead.count({ where: { snapshotId: s } })).toBe(2);
    const events = await db().auditEvent.findMany({ where: { subjectId: s } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ action: "snapshot.retire", actorType: "agent", actorId: owner.agentId });
  });

  it("answers NOT_FOUND for another agent's snapshot and leaves it alone", async () => {
    const s = await ready();
    const stranger = await createOwner(db());
    const error = await retireSnapshot(db(), {
      snapshotId: s,
      agentId: stranger.agentId,
      actor: { type: "system" },
    }).catch((e: unknown) => e);
    expect(isStrataError(error, "NOT_FOUND")).toBe(true);
    expect((await db().snapshot.findUniqueOrThrow({ where: { id: s } })).state).toBe("ready");
  });

  it("releases heads only when no active pin remains, and repeating it is harmless", async () => {
    const s = await ready();
    const pinId = randomUUID();
    await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId });
    await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    expect(await releaseRetiredHeads(db(), { snapshotIds: [s] })).toMatchObject({ headsReleased: 0, snapshotsKept: 1 });
    await releasePin(db(), { agentId: owner.agentId, snapshotId: s, pinId });
    expect(await releaseRetiredHeads(db(), { snapshotIds: [s] })).toMatchObject({
      headsReleased: 2,
      snapshotsReleased: 1,
    });
    expect(await releaseRetiredHeads(db(), { snapshotIds: [s] })).toMatchObject({
      headsReleased: 0,
      snapshotsReleased: 0,
    });
    // A ready snapshot's heads are never released, whatever the caller asks.
    const live = await ready();
    expect(await releaseRetiredHeads(db(), { snapshotIds: [live] })).toMatchObject({ headsReleased: 0 });
    expect(await db().snapshotHead.count({ where: { snapshotId: live } })).toBe(2);
  });

  it("runs safely in several processes at once: each head is released exactly once", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 8; i += 1) {
      const s = await ready();
      await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
      ids.push(s);
    }
    const releasable = await db().snapshotHead.count({
      where: { snapshot: { state: { in: ["retired", "deleting", "deleted"] } } },
    });
    expect(releasable).toBeGreaterThanOrEqual(16);
    const tallies = await Promise.all([1, 2, 3, 4].map(() => releaseRetiredHeads(db(), { batchSize: 3 })));
    expect(await db().snapshotHead.count({ where: { snapshotId: { in: ids } } })).toBe(0);
    // The four calls together released each head once: their counts add up to what there was.
    expect(tallies.reduce((sum, t) => sum + t.headsReleased, 0)).toBe(releasable);
  });

  it("ends a deleting snapshot as deleted once its heads are released and nothing pins it", async () => {
    const s = await ready();
    const pinId = randomUUID();
    await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId });
    // The lineage sweeper hands snapshots past their retention to collection as `deleting`
    // (a ready one only once superseded, retired or failed).
    await db().snapshot.update({ where: { id: s }, data: { state: "superseded", supersededAt: new Date() } });
    await db().snapshot.update({ where: { id: s }, data: { state: "deleting" } });
    expect(await releaseRetiredHeads(db(), { snapshotIds: [s] })).toMatchObject({
      snapshotsKept: 1,
      snapshotsDeleted: 0,
    });
    await releasePin(db(), { agentId: owner.agentId, snapshotId: s, pinId });
    expect(await releaseRetiredHeads(db(), { snapshotIds: [s] })).toMatchObject({
      headsReleased: 2,
      snapshotsDeleted: 1,
    });
    const row = await db().snapshot.findUniqueOrThrow({ where: { id: s } });
    expect(row.state).toBe("deleted");
    expect(row.deletedAt).not.toBeNull();
    // Retiring it again is a no-op.
    expect(await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } })).toMatchObject({
      alreadyRetired: true,
      state: "deleted",
    });
  });
});
