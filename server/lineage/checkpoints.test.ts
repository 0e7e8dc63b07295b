import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { retireLineage } from "./lineages.ts";
import {
  acquireFor,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  publishClean,
  scenario,
  uniqueName,
} from "../testing/lineage.ts";

describeEachDatabase("appendCheckpoint", (catalog) => {
  it("advances sequence and predecessor atomically and supersedes the old head", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);
    const plan = await acquireFor(db, agent, s);
    const key = lineageKeyOf(s, plan.workContextId);
    const one = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w1"), branch: "t" }),
    });
    expect(one).toMatchObject({ outcome: "appended", lineageId: plan.lineage.id, supersededId: null });
    expect(one.snapshot).toMatchObject({
      class: "checkpoint",
      sequence: 1,
      predecessorId: null,
      workContextId: plan.workContextId,
    });
    const two = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: one.snapshot.id,
      manifest: manifestOf({ head: oid("w2"), branch: "t" }),
    });
    expect(two.snapshot).toMatchObject({ sequence: 2, predecessorId: one.snapshot.id, state: "ready" });
    expect(two.supersededId).toBe(one.snapshot.id);
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: one.snapshot.id } })).state).toBe("superseded");
    // The lineage records the baseline it began from.
    const lineage = await db.lineage.findUniqueOrThrow({ where: { id: plan.lineage.id } });
    expect(lineage.originSnapshotId).toBe(b0.snapshot.id);
  });

  it("is idempotent for a retried append", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const key = lineageKeyOf(s, uniqueName("wc"));
    const manifest = manifestOf({ head: oid("w1"), branch: "t" });
    const first = await appendCheckpoint(db, { agent, key, observedHeadId: null, manifest });
    const retried = await appendCheckpoint(db, { agent, key, observedHeadId: null, manifest });
    expect(retried).toMatchObject({ outcome: "unchanged", snapshot: { id: first.snapshot.id } });
    expect(await db.snapshot.count({ where: { lineageId: first.lineageId } })).toBe(1);
  });

  it("loses the fence when the head moved, and hands the loser's capture to reclamation", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const key = lineageKeyOf(s, uniqueName("wc"));
    const one = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w1"), branch: "t" }),
    });
    const two = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: one.snapshot.id,
      manifest: manifestOf({ head: oid("w2"), branch: "t" }),
    });

    // A stale worker still believes `one` is the head.
    const lost = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: one.snapshot.id,
      manifest: manifestOf({ head: oid("stale"), branch: "t" }),
    }).catch((e: unknown) => e);
    expect(isStrataError(lost, "FENCE_LOST")).toBe(true);
    const data = (lost as { data: { lostSnapshotId: string; currentHeadId: string } }).data;
    expect(data.currentHeadId).toBe(two.snapshot.id);
    const loser = await db.snapshot.findUniqueOrThrow({ where: { id: data.lostSnapshotId } });
    expect(loser).toMatchObject({ state: "deleting", class: "checkpoint", lineageId: one.lineageId });
    expect(loser.deletingAt).not.toBeNull();
    const ready = await db.snapshot.findMany({ where: { lineageId: one.lineageId, state: "ready" } });
    expect(ready.map((r) => r.id)).toEqual([two.snapshot.id]);

    // A worker that saw no head loses too once a head exists.
    const blind = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: null,
      manifest: manifestOf({ head: oid("blind"), branch: "t" }),
    }).catch((e: unknown) => e);
    expect(isStrataError(blind, "FENCE_LOST")).toBe(true);
    // The next good append continues the chain past the losers.
    const three = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: two.snapshot.id,
      manifest: manifestOf({ head: oid("w3"), branch: "t" }),
    });
    expect(three.snapshot).toMatchObject({ sequence: 3, predecessorId: two.snapshot.id });
  });

  it("loses the fence when the observed head vanished, and refuses a retired lineage", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const key = lineageKeyOf(s, uniqueName("wc"));
    const one = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w1"), branch: "t" }),
    });
    // The head vanishes: taken out of eligibility while the lineage stays active.
    await db.snapshot.update({
      where: { id: one.snapshot.id },
      data: { state: "retired", retiredAt: new Date(), retiredReason: "operator" },
    });
    const vanished = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: one.snapshot.id,
      manifest: manifestOf({ head: oid("w2"), branch: "t" }),
    }).catch((e: unknown) => e);
    expect(isStrataError(vanished, "FENCE_LOST")).toBe(true);
    expect(vanished).toMatchObject({ data: { currentHeadId: null } });

    await retireLineage(db, { lineageId: one.lineageId, reason: "declined", actor: { kind: "agent", agent } });
    const retired = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w3"), branch: "t" }),
    }).catch((e: unknown) => e);
    expect(isStrataError(retired, "SNAPSHOT_RETIRED")).toBe(true);
  });
});
