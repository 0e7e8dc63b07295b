import { expect, it } from "vitest";
import { describeEachAcquirePath } from "../testing/acquire-paths.ts";
import { isStrataError } from "../domain/errors.ts";
import { appendCheckpoint } from "../lineage/checkpoints.ts";
import {
  acquireForWith,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  publishClean,
  scenario,
  uniqueName,
  type Scenario,
} from "../testing/lineage.ts";
import { reportRestore } from "../restore/report-restore.ts";
import { forkCheckpoint } from "../lineage/fork-checkpoint.ts";
import { retireLineage } from "../lineage/lineages.ts";
import { retireSnapshot } from "../lineage/retirement.ts";
import { holdWorkspace } from "../lineage/hold-workspace.ts";
import { releaseLiveHold } from "../lineage/release-live-hold.ts";
import type { Db } from "../db/client.ts";
import type { AgentScope } from "../domain/scope.ts";

// The acquire contract: every implementation (describeEachAcquirePath) runs this suite.
describeEachAcquirePath("acquire and reportRestore", (catalog, acquire) => {
  const acquireFor = acquireForWith(acquire);
  it("records the restore attribution and pins the chosen snapshot until the outcome", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);
    const plan = await acquire(db, {
      agent,
      repository: s.repository,
      backendKind: s.backendKind,
      baseImage: s.baseImage,
      canonicalRef: "refs/heads/main",
      workspace: "/w/task-1",
      host: "worker-7",
    });
    expect(plan).toMatchObject({
      rung: "baseline",
      snapshot: { id: b0.snapshot.id },
      canonicalRef: "refs/heads/main",
      previousRestoreId: null,
      mustInspectExternalState: false,
      notice: null,
    });
    expect(plan.workContextId).toMatch(/^wc_/);
    const restore = await db.restore.findUniqueOrThrow({ where: { id: plan.restoreId } });
    expect(restore).toMatchObject({
      snapshotId: b0.snapshot.id,
      lineageId: plan.lineage.id,
      workContextId: plan.workContextId,
      workspace: "/w/task-1",
      host: "worker-7",
      rung: "baseline",
      outcome: "pending",
      pinId: plan.pinId,
    });
    const pin = await db.pin.findFirstOrThrow({ where: { pinId: plan.pinId ?? "" } });
    expect(pin).toMatchObject({ snapshotId: b0.snapshot.id, released: false, purpose: "restore" });

    const reported = await reportRestore(db, {
      agent,
      restoreId: plan.restoreId,
      outcome: "restored",
      treeId: b0.snapshot.manifest.treeId ?? undefined,
    });
    expect(reported).toMatchObject({ restore: { outcome: "restored" }, next: null });
    expect((await db.pin.findFirstOrThrow({ where: { pinId: plan.pinId ?? "" } })).released).toBe(true);
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: b0.snapshot.id } })).lastRestoredAt).not.toBeNull();
    // Repeating the report is idempotent; a different outcome is a conflict.
    expect((await reportRestore(db, { agent, restoreId: plan.restoreId, outcome: "restored" })).restore.outcome).toBe(
      "restored",
    );
    const conflict = await reportRestore(db, {
      agent,
      restoreId: plan.restoreId,
      outcome: "failed",
      error: { code: "X", message: "" },
    }).catch((e: unknown) => e);
    expect(isStrataError(conflict, "CONFLICT")).toBe(true);
  });

  it("keeps the pin of a degraded restore and records what is missing", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    await publishClean(db, agent, s, "main@1", null);
    const plan = await acquireFor(db, agent, s);
    const reported = await reportRestore(db, {
      agent,
      restoreId: plan.restoreId,
      outcome: "degraded",
      missing: ["node_modules/.cache", "bundle"],
    });
    expect(reported.restore).toMatchObject({
      outcome: "degraded",
      result: { missing: ["node_modules/.cache", "bundle"] },
    });
    expect((await db.pin.findFirstOrThrow({ where: { pinId: plan.pinId ?? "" } })).released).toBe(false);
  });

  it("refuses `restored` with a tree id other than the recorded one", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    await publishClean(db, agent, s, "main@1", null);
    const plan = await acquireFor(db, agent, s);
    const wrong = await reportRestore(db, {
      agent,
      restoreId: plan.restoreId,
      outcome: "restored",
      treeId: oid("other-tree"),
    }).catch((e: unknown) => e);
    expect(isStrataError(wrong, "INVALID_INPUT")).toBe(true);
    expect((await db.restore.findUniqueOrThrow({ where: { id: plan.restoreId } })).outcome).toBe("pending");
  });

  it("walks the ladder: checkpoint -> the lineage's recorded baseline -> cold -> nothing", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);
    const start = await acquireFor(db, agent, s);
    const cp = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, start.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w"), branch: "t" }),
    });
    // A newer baseline supersedes b0; the lineage still began from b0.
    const b1 = await publishClean(db, agent, s, "main@2", b0.snapshot.id);

    const resume = await acquireFor(db, agent, s, start.workContextId);
    expect(resume).toMatchObject({ rung: "checkpoint", snapshot: { id: cp.snapshot.id } });
    const step1 = await reportRestore(db, {
      agent,
      restoreId: resume.restoreId,
      outcome: "failed",
      error: { code: "LAYER_MISSING", message: "gone" },
    });
    expect(step1.restore).toMatchObject({ outcome: "failed" });
    expect(step1.next).toMatchObject({
      rung: "baseline",
      snapshot: { id: b0.snapshot.id },
      previousRestoreId: resume.restoreId,
      mustInspectExternalState: true,
    });
    expect(step1.next?.notice).toMatch(/external state/);
    expect((await db.pin.findFirstOrThrow({ where: { pinId: resume.pinId ?? "" } })).released).toBe(true);
    expect((await db.pin.findFirstOrThrow({ where: { pinId: step1.next?.pinId ?? "" } })).released).toBe(false);

    const step2 = await reportRestore(db, {
      agent,
      restoreId: step1.next?.restoreId ?? "",
      outcome: "failed",
      error: { code: "X", message: "" },
    });
    expect(step2.next).toMatchObject({ rung: "cold", snapshot: null, pinId: null });
    const step3 = await reportRestore(db, {
      agent,
      restoreId: step2.next?.restoreId ?? "",
      outcome: "failed",
      error: { code: "X", message: "" },
    });
    expect(step3.next).toBeNull();
    // A repeated failure report returns the same next plan, and records no second step.
    const again = await reportRestore(db, {
      agent,
      restoreId: resume.restoreId,
      outcome: "failed",
      error: { code: "LAYER_MISSING", message: "gone" },
    });
    expect(again.next?.restoreId).toBe(step1.next?.restoreId);
    expect(await db.restore.count({ where: { workContextId: start.workContextId } })).toBe(4);
    expect(b1.snapshot.id).not.toBe(b0.snapshot.id);
  });

  it("falls from a failed checkpoint to the current baseline when the lineage began cold", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const wc = uniqueName("wc");
    const cold = await acquireFor(db, agent, s, wc);
    expect(cold).toMatchObject({ rung: "cold", lineage: { originSnapshotId: null } });
    const cp = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, wc),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w"), branch: "t" }),
    });
    const b0 = await publishClean(db, agent, s, "main@1", null);
    const resume = await acquireFor(db, agent, s, wc);
    expect(resume.snapshot?.id).toBe(cp.snapshot.id);
    const step = await reportRestore(db, {
      agent,
      restoreId: resume.restoreId,
      outcome: "failed",
      error: { code: "X", message: "" },
    });
    expect(step.next).toMatchObject({ rung: "baseline", snapshot: { id: b0.snapshot.id } });
  });

  it("moves a fresh lineage's recorded origin down with the ladder", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);
    const plan = await acquireFor(db, agent, s);
    expect(plan.lineage.originSnapshotId).toBe(b0.snapshot.id);
    const step = await reportRestore(db, {
      agent,
      restoreId: plan.restoreId,
      outcome: "failed",
      error: { code: "X", message: "" },
    });
    expect(step.next).toMatchObject({
      rung: "cold",
      mustInspectExternalState: false,
      lineage: { originSnapshotId: null },
    });
    expect((await db.lineage.findUniqueOrThrow({ where: { id: plan.lineage.id } })).originSnapshotId).toBeNull();
  });

  it("gives a fork without a checkpoint of its own the checkpoint it was forked from; its own head afterwards", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    await publishClean(db, agent, s, "main@1", null);
    const source = await acquireFor(db, agent, s);
    const cp = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, source.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("forked"), branch: "t" }),
    });
    const { forks } = await forkCheckpoint(db, {
      fromCheckpoint: cp.snapshot.id,
      count: 2,
      reason: "two attempts from here",
      actor: { kind: "agent", agent },
    });
    const [one, two] = forks;
    const first = await acquireFor(db, agent, s, one!.workContextId);
    expect(first).toMatchObject({
      rung: "checkpoint",
      snapshot: { id: cp.snapshot.id },
      workContextId: one!.workContextId,
      lineage: { id: one!.lineageId, state: "active", originSnapshotId: cp.snapshot.id, forkedFromId: cp.snapshot.id },
      mustInspectExternalState: false,
      notice: null,
    });
    expect(await db.restore.findUniqueOrThrow({ where: { id: first.restoreId } })).toMatchObject({
      lineageId: one!.lineageId,
      snapshotId: cp.snapshot.id,
      workContextId: one!.workContextId,
      rung: "checkpoint",
      pinId: first.pinId,
    });
    expect((await db.pin.findFirstOrThrow({ where: { pinId: first.pinId ?? "" } })).snapshotId).toBe(cp.snapshot.id);
    await reportRestore(db, { agent, restoreId: first.restoreId, outcome: "restored" });
    const own = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, one!.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("fork-own"), branch: "t" }),
    });
    expect(await acquireFor(db, agent, s, one!.workContextId)).toMatchObject({
      rung: "checkpoint",
      snapshot: { id: own.snapshot.id },
      lineage: { forkedFromId: cp.snapshot.id },
    });
    // The other fork still starts from the checkpoint; the source resumes its own head as before.
    expect((await acquireFor(db, agent, s, two!.workContextId)).snapshot?.id).toBe(cp.snapshot.id);
    expect(await acquireFor(db, agent, s, source.workContextId)).toMatchObject({
      rung: "checkpoint",
      snapshot: { id: cp.snapshot.id },
      lineage: { forkedFromId: null },
    });
    // A new work context of the same key is not a fork: it starts from the baseline.
    expect((await acquireFor(db, agent, s)).rung).toBe("baseline");
  });

  it("restores a fork's checkpoint after its lineage moved on, but not once it is retired", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);
    const source = await acquireFor(db, agent, s);
    const key = lineageKeyOf(s, source.workContextId);
    const cp = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: null,
      manifest: manifestOf({ head: oid("f1"), branch: "t" }),
    });
    const { forks } = await forkCheckpoint(db, {
      fromCheckpoint: cp.snapshot.id,
      count: 2,
      reason: "keep this point",
      actor: { kind: "agent", agent },
    });
    await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: cp.snapshot.id,
      manifest: manifestOf({ head: oid("f2"), branch: "t" }),
    });
    const superseded = await acquireFor(db, agent, s, forks[0]!.workContextId);
    expect(superseded).toMatchObject({ rung: "checkpoint", snapshot: { id: cp.snapshot.id, state: "superseded" } });
    expect((await db.pin.findFirstOrThrow({ where: { pinId: superseded.pinId ?? "" } })).released).toBe(false);

    await retireLineage(db, { lineageId: source.lineage.id, reason: "completed", actor: { kind: "agent", agent } });
    await retireSnapshot(db, { snapshotId: cp.snapshot.id, actor: { type: "system" } });
    const retired = await acquireFor(db, agent, s, forks[1]!.workContextId);
    expect(retired).toMatchObject({
      rung: "baseline",
      snapshot: { id: b0.snapshot.id },
      mustInspectExternalState: true,
      lineage: { id: forks[1]!.lineageId, forkedFromId: cp.snapshot.id },
    });
    expect(retired.notice).toMatch(/forked from checkpoint/);
  });

  it("walks a fork whose checkpoint fails down to the current baseline, moving its origin there", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);
    const source = await acquireFor(db, agent, s);
    const cp = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, source.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w"), branch: "t" }),
    });
    const b1 = await publishClean(db, agent, s, "main@2", b0.snapshot.id);
    const { forks } = await forkCheckpoint(db, {
      fromCheckpoint: cp.snapshot.id,
      count: 1,
      reason: "retry it",
      actor: { kind: "agent", agent },
    });
    const fork = forks[0]!;
    const plan = await acquireFor(db, agent, s, fork.workContextId);
    expect(plan.snapshot?.id).toBe(cp.snapshot.id);
    const step = await reportRestore(db, {
      agent,
      restoreId: plan.restoreId,
      outcome: "failed",
      error: { code: "LAYER_MISSING", message: "gone" },
    });
    expect(step.next).toMatchObject({
      rung: "baseline",
      snapshot: { id: b1.snapshot.id },
      mustInspectExternalState: true,
      lineage: { originSnapshotId: b1.snapshot.id, forkedFromId: cp.snapshot.id },
    });
    expect(step.next?.notice).toMatch(/forked from checkpoint/);
    expect(await db.lineage.findUniqueOrThrow({ where: { id: fork.lineageId } })).toMatchObject({
      originSnapshotId: b1.snapshot.id,
      forkedFromId: cp.snapshot.id,
    });
    // A repeated report returns the same plan, rebuilt from the recorded rows.
    const again = await reportRestore(db, {
      agent,
      restoreId: plan.restoreId,
      outcome: "failed",
      error: { code: "LAYER_MISSING", message: "gone" },
    });
    expect(again.next).toEqual(step.next);
  });

  it("answers NOT_FOUND for a restore id it does not know", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const missing = await reportRestore(db, { agent, restoreId: "no-such-restore", outcome: "restored" }).catch(
      (e: unknown) => e,
    );
    expect(isStrataError(missing, "NOT_FOUND")).toBe(true);
  });

  // Live holds: a paused work context's held workspace is the first rung on the hold's host.
  const HOUR = 60 * 60 * 1000;
  async function pausedAndHeld(db: Db, agent: AgentScope, s: Scenario, now: Date) {
    const started = await acquireFor(db, agent, s, undefined, now);
    const pause = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, started.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid(uniqueName("paused")), branch: "task" }),
      now,
    });
    const hold = await holdWorkspace(db, {
      agent,
      workContextId: started.workContextId,
      snapshotId: pause.snapshot.id,
      workspace: "/srv/strata/worktrees/app-1",
      host: "host-1",
      providers: {},
      now,
    });
    return { workContextId: started.workContextId, checkpointId: pause.snapshot.id, hold };
  }
  const holdRow = (db: Db, id: string) => db.liveHold.findUniqueOrThrow({ where: { id } });

  it("offers the held workspace first on the hold's host, once: the live rung, the checkpoint's restore recorded", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const now = new Date();
    const { workContextId, checkpointId, hold } = await pausedAndHeld(db, agent, s, now);

    // Another host has no live workspace of it: the checkpoint, and the hold stays.
    const onOtherHost = await acquire(db, {
      agent,
      ...lineageKeyOf(s, workContextId),
      canonicalRef: s.canonicalRef,
      workspace: "/w/elsewhere",
      host: "host-2",
      now,
    });
    expect(onOtherHost).toMatchObject({ rung: "checkpoint", live: null, snapshot: { id: checkpointId } });
    expect((await holdRow(db, hold.id)).endedAt).toBeNull();

    const resumed = await acquire(db, {
      agent,
      ...lineageKeyOf(s, workContextId),
      canonicalRef: s.canonicalRef,
      workspace: "/w/target",
      host: "host-1",
      now,
    });
    expect(resumed).toMatchObject({
      rung: "live",
      snapshot: { id: checkpointId },
      live: { holdId: hold.id, workspace: "/srv/strata/worktrees/app-1", host: "host-1", expiresAt: hold.expiresAt },
      mustInspectExternalState: false,
      notice: null,
    });
    // The restore recorded is the checkpoint's, pinned until it is reported; the hold ended.
    const restore = await db.restore.findUniqueOrThrow({ where: { id: resumed.restoreId } });
    expect(restore).toMatchObject({ rung: "checkpoint", snapshotId: checkpointId, pinId: resumed.pinId });
    expect(await holdRow(db, hold.id)).toMatchObject({ endReason: "resumed", endedAt: now });
    expect((await db.pin.findFirstOrThrow({ where: { agentId: agent.agentId, pinId: hold.pinId } })).released).toBe(
      true,
    );
    await reportRestore(db, { agent, restoreId: resumed.restoreId, outcome: "restored", now });

    // Resumed once: the next acquire restores the checkpoint.
    const again = await acquire(db, {
      agent,
      ...lineageKeyOf(s, workContextId),
      canonicalRef: s.canonicalRef,
      workspace: "/w/again",
      host: "host-1",
      now,
    });
    expect(again).toMatchObject({ rung: "checkpoint", live: null, snapshot: { id: checkpointId } });
  });

  it("restores the checkpoint instead once the hold expired, was released, or no longer holds the head", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const now = new Date();
    const onHost = (workContextId: string, at: Date) =>
      acquire(db, {
        agent,
        ...lineageKeyOf(s, workContextId),
        canonicalRef: s.canonicalRef,
        workspace: `/w/${uniqueName("target")}`,
        host: "host-1",
        now: at,
      });

    const expired = await pausedAndHeld(db, agent, s, now);
    const late = new Date(expired.hold.expiresAt.getTime() + 1000);
    expect(expired.hold.expiresAt.getTime() - now.getTime()).toBe(HOUR);
    expect(await onHost(expired.workContextId, late)).toMatchObject({
      rung: "checkpoint",
      live: null,
      snapshot: { id: expired.checkpointId },
    });
    expect((await holdRow(db, expired.hold.id)).endedAt).toBeNull();

    const released = await pausedAndHeld(db, agent, s, now);
    await releaseLiveHold(db, { agent, holdId: released.hold.id, now });
    expect(await onHost(released.workContextId, now)).toMatchObject({ rung: "checkpoint", live: null });

    // The task went on and checkpointed again: the hold keeps its checkpoint, the head is restored.
    const moved = await pausedAndHeld(db, agent, s, now);
    const next = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, moved.workContextId),
      observedHeadId: moved.checkpointId,
      manifest: manifestOf({ head: oid(uniqueName("later")), branch: "task" }),
      now,
    });
    expect(await onHost(moved.workContextId, now)).toMatchObject({
      rung: "checkpoint",
      live: null,
      snapshot: { id: next.snapshot.id },
    });
    expect(await holdRow(db, moved.hold.id)).toMatchObject({ endedAt: null, snapshotId: moved.checkpointId });
  });
});
