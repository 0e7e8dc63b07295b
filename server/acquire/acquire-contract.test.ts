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
} from "../testing/lineage.ts";
import { reportRestore } from "../restore/report-restore.ts";

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

  it("answers NOT_FOUND for a restore id it does not know", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const missing = await reportRestore(db, { agent, restoreId: "no-such-restore", outcome: "restored" }).catch(
      (e: unknown) => e,
    );
    expect(isStrataError(missing, "NOT_FOUND")).toBe(true);
  });
});
