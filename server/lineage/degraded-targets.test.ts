// A partly restored worktree keeps the original as its checkout's restore target until a full
// restore of it, a discard by support, or the pin's expiry (issue: partial restores kept safe).
import { expect, it } from "vitest";
import { describeEachAcquirePath } from "../testing/acquire-paths.ts";
import { trustUser } from "../domain/scope.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { discardDegraded } from "../restore/degraded-restores.ts";
import {
  acquireForWith,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  publishClean,
  scenario,
} from "../testing/lineage.ts";
import { reportRestore } from "../restore/report-restore.ts";

describeEachAcquirePath("degraded restores keep the original as the restore target", (catalog, acquire) => {
  const acquireFor = acquireForWith(acquire);
  async function partlyRestored() {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    await publishClean(db, agent, s, "main@1", null);
    const start = await acquireFor(db, agent, s, "task-degraded");
    await reportRestore(db, { agent, restoreId: start.restoreId, outcome: "restored" });
    const key = lineageKeyOf(s, "task-degraded");
    const original = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: null,
      manifest: manifestOf({ head: oid("work@1"), branch: "task" }),
    });
    // Another machine resumes and gets only part of it back.
    const resume = await acquireFor(db, agent, s, "task-degraded");
    expect(resume.snapshot?.id).toBe(original.snapshot.id);
    await reportRestore(db, { agent, restoreId: resume.restoreId, outcome: "degraded", missing: ["bundle"] });
    // The partly restored worktree keeps working and is captured, naming the original.
    const partial = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: original.snapshot.id,
      manifest: { ...manifestOf({ head: oid("pushed@1"), branch: "task" }), degradedFrom: original.snapshot.id },
    });
    return { db, agent, s, key, original, partial, resume };
  }

  it("records degradedFrom on the capture and keeps restoring the original first", async () => {
    const { db, agent, s, original, partial } = await partlyRestored();
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: partial.snapshot.id } });
    expect(row.degradedFromId).toBe(original.snapshot.id);
    expect(row.state).toBe("ready");

    const next = await acquireFor(db, agent, s, "task-degraded");
    expect(next.rung).toBe("checkpoint");
    expect(next.snapshot?.id).toBe(original.snapshot.id);
    // A full restore of the original ends the hold; from then on the newest capture is the target.
    await reportRestore(db, { agent, restoreId: next.restoreId, outcome: "restored" });
    const after = await acquireFor(db, agent, s, "task-degraded");
    expect(after.snapshot?.id).toBe(partial.snapshot.id);
    expect(await db.pin.count({ where: { snapshotId: original.snapshot.id, released: false } })).toBe(0);
  });

  it("falls to the partial capture when the original cannot be restored, then to the baseline", async () => {
    const { db, agent, s, original, partial } = await partlyRestored();
    const first = await acquireFor(db, agent, s, "task-degraded");
    expect(first.snapshot?.id).toBe(original.snapshot.id);

    const failed = await reportRestore(db, {
      agent,
      restoreId: first.restoreId,
      outcome: "failed",
      error: { code: "COMMITS_UNAVAILABLE" },
    });
    // The partly restored worktree's own capture holds the task's later work: it comes before
    // any baseline, and it is pinned while it is restored.
    expect(failed.next?.rung).toBe("checkpoint");
    expect(failed.next?.snapshot?.id).toBe(partial.snapshot.id);
    expect(failed.next?.mustInspectExternalState).toBe(false);
    expect(await db.pin.count({ where: { snapshotId: partial.snapshot.id, released: false } })).toBe(1);

    const again = await reportRestore(db, {
      agent,
      restoreId: failed.next!.restoreId,
      outcome: "failed",
      error: { code: "COMMITS_UNAVAILABLE" },
    });
    expect(again.next?.rung).toBe("baseline");
    expect(again.next?.mustInspectExternalState).toBe(true);
  });

  it("stops naming the original once support discarded the partial restore", async () => {
    const { db, agent, s, key, partial, resume } = await partlyRestored();
    const support = trustUser("support-1", "support@example.com", "support");
    await discardDegraded(db, { user: support, restoreId: resume.restoreId, reason: "work continues from here" });

    const next = await acquireFor(db, agent, s, "task-degraded");
    expect(next.snapshot?.id).toBe(partial.snapshot.id);
    const later = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: partial.snapshot.id,
      manifest: { ...manifestOf({ head: oid("pushed@2"), branch: "task" }), degradedFrom: resume.snapshot!.id },
    });
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: later.snapshot.id } });
    expect(row.degradedFromId).toBeNull();
  });

  it("ignores a degradedFrom that names no held partial restore of the agent", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b = await publishClean(db, agent, s, "main@1", null);
    const appended = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, "task-plain"),
      observedHeadId: null,
      manifest: { ...manifestOf({ head: oid("work@1"), branch: "task" }), degradedFrom: b.snapshot.id },
    });
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: appended.snapshot.id } });
    expect(row.degradedFromId).toBeNull();
  });
});
