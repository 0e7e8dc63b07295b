import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { retireLineage } from "./lineages.ts";
import { sweepSnapshots } from "./sweeper.ts";
import { acquireFor, lineageKeyOf, makeAgent, manifestOf, oid, publishClean, scenario } from "../testing/lineage.ts";
import { reportRestore } from "../restore/report-restore.ts";

const DAY = 24 * 60 * 60 * 1000;
const later = (from: Date, days: number) => new Date(from.getTime() + days * DAY);

describeEachDatabase("sweeper", (catalog) => {
  it("retires checkpoint heads neither captured nor restored for 14 days, with their lineages", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const t0 = new Date();
    const idle = await acquireFor(db, agent, s);
    const busy = await acquireFor(db, agent, s);
    const idleCp = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, idle.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("idle"), branch: "t" }),
      now: t0,
    });
    const busyCp = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, busy.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("busy"), branch: "t" }),
      now: t0,
    });
    // The busy lineage was resumed on day 10.
    const resumed = await acquireFor(db, agent, s, busy.workContextId, later(t0, 10));
    await reportRestore(db, { agent, restoreId: resumed.restoreId, outcome: "restored", now: later(t0, 10) });

    const day13 = await sweepSnapshots(db, { now: later(t0, 13) });
    expect(day13.staleCheckpointIds).not.toContain(idleCp.snapshot.id);

    const day15 = await sweepSnapshots(db, { now: later(t0, 15) });
    expect(day15.staleCheckpointIds).toContain(idleCp.snapshot.id);
    expect(day15.staleCheckpointIds).not.toContain(busyCp.snapshot.id);
    expect(day15.staleLineageIds).toContain(idle.lineage.id);
    expect(await db.snapshot.findUniqueOrThrow({ where: { id: idleCp.snapshot.id } })).toMatchObject({
      state: "retired",
      retiredReason: "stale",
    });
    expect(await db.lineage.findUniqueOrThrow({ where: { id: idle.lineage.id } })).toMatchObject({
      state: "retired",
      retiredReason: "stale",
    });
    const audit = await db.auditEvent.findFirstOrThrow({ where: { subjectId: idle.lineage.id } });
    expect(audit).toMatchObject({ actorType: "system", action: "lineage.retire", reason: "stale" });
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: busyCp.snapshot.id } })).state).toBe("ready");

    // Settings are honoured: a one-day window makes the busy head stale on day 12.
    const short = await sweepSnapshots(db, { now: later(t0, 12), settings: { staleAfterMs: DAY } });
    expect(short.staleCheckpointIds).toContain(busyCp.snapshot.id);
  });

  it("hands superseded, retired and failed snapshots past 7 days to GC, unless a pin still holds them", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const t0 = new Date();
    const b0 = await publishClean(db, agent, s, "main@1", null);
    // A degraded restore keeps b0 pinned.
    const held = await acquireFor(db, agent, s);
    await reportRestore(db, { agent, restoreId: held.restoreId, outcome: "degraded", missing: ["bundle"] });
    const b1 = await publishClean(db, agent, s, "main@2", b0.snapshot.id);
    const b2 = await publishClean(db, agent, s, "main@3", b1.snapshot.id);
    const work = await acquireFor(db, agent, s);
    await reportRestore(db, { agent, restoreId: work.restoreId, outcome: "restored" });
    const cp = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, work.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w"), branch: "t" }),
    });
    await retireLineage(db, { lineageId: work.lineage.id, reason: "completed", actor: { kind: "agent", agent } });
    // A capture that failed (written by a worker that gave up) waits out retention too.
    const failed = await db.snapshot.create({
      data: {
        class: "checkpoint",
        state: "failed",
        failedAt: t0,
        agentId: agent.agentId,
        repositoryId: b0.snapshot.repositoryId,
        backendKind: s.backendKind,
        baseImage: s.baseImage,
        workContextId: work.workContextId,
        lineageId: work.lineage.id,
        sequence: 2,
        predecessorId: cp.snapshot.id,
      },
    });

    const day6 = await sweepSnapshots(db, { now: later(t0, 6) });
    expect(day6.movedToDeleting).toEqual({ superseded: 0, retired: 0, failed: 0 });

    const day8 = await sweepSnapshots(db, { now: later(t0, 8) });
    expect(day8.movedToDeleting.superseded).toBeGreaterThanOrEqual(1);
    expect(day8.movedToDeleting.retired).toBeGreaterThanOrEqual(1);
    expect(day8.movedToDeleting.failed).toBeGreaterThanOrEqual(1);
    expect(day8.keptForPins).toBeGreaterThanOrEqual(1);
    const state = async (id: string) => (await db.snapshot.findUniqueOrThrow({ where: { id } })).state;
    expect(await state(b1.snapshot.id)).toBe("deleting");
    expect(await state(cp.snapshot.id)).toBe("deleting");
    expect(await state(failed.id)).toBe("deleting");
    expect(await state(b0.snapshot.id)).toBe("superseded");
    expect(await state(b2.snapshot.id)).toBe("ready");
    const moved = await db.snapshot.findUniqueOrThrow({ where: { id: b1.snapshot.id } });
    expect(moved.deletingAt).toEqual(later(t0, 8));

    // The degraded pin expires after 30 days; then b0 goes too.
    await sweepSnapshots(db, { now: later(t0, 31) });
    expect(await state(b0.snapshot.id)).toBe("deleting");
  });
});
