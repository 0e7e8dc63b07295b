// The seed's invariants and guardrails, on both databases: one task's checkout never becomes
// another task's starting state.
import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { publishBaseline } from "./baselines.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { retireLineage } from "./lineages.ts";
import {
  acquireFor,
  baselineKeyOf,
  cleanEvidence,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  publishClean,
  scenario,
  uniqueName,
} from "../testing/lineage.ts";
import { reportRestore } from "../restore/report-restore.ts";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

describeEachDatabase("lineage invariants", (catalog) => {
  it("the five-step contamination story (runs A, B, C) cannot happen", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);

    // 1. Run A restores the repository, creates feature/a and leaves tracked and untracked changes.
    const runA = await acquireFor(db, agent, s);
    expect(runA).toMatchObject({ rung: "baseline", snapshot: { id: b0.snapshot.id } });
    await reportRestore(db, { agent, restoreId: runA.restoreId, outcome: "restored" });
    const dirtyA = manifestOf({ head: oid("a-work"), branch: "feature/a", blobs: ["a-edit", "a-untracked"] });
    const cpA = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, runA.workContextId),
      observedHeadId: null,
      manifest: dirtyA,
    });

    // 2. Run B independently starts from the same earlier snapshot.
    const runB = await acquireFor(db, agent, s);
    expect(runB).toMatchObject({ rung: "baseline", snapshot: { id: b0.snapshot.id } });
    expect(runB.lineage.id).not.toBe(runA.lineage.id);

    // 3. Run A releases and tries to publish its dirty tree as the repository's starting state.
    const dirtyEvidence = cleanEvidence(oid("a-work"), {
      remoteCommit: oid("main@1"),
      branch: "feature/a",
      modifiedCount: 1,
      untrackedCount: 1,
    });
    const refused = await rejection(
      publishBaseline(db, {
        agent,
        key: baselineKeyOf(s),
        commit: oid("a-work"),
        manifest: dirtyA,
        evidence: dirtyEvidence,
        observedHeadId: b0.snapshot.id,
      }),
    );
    expect(isStrataError(refused, "EVIDENCE_INVALID")).toBe(true);
    expect((refused as { data: { failedChecks: string[] } }).data.failedChecks).toEqual(
      expect.arrayContaining([
        "head_is_canonical_commit",
        "canonical_branch_checked_out",
        "no_tracked_modifications",
        "no_untracked_files",
      ]),
    );

    // 4. Run C, unrelated to A, starts: it gets the clean baseline, not A's branch and files.
    const runC = await acquireFor(db, agent, s);
    expect(runC.rung).toBe("baseline");
    expect(runC.snapshot?.id).toBe(b0.snapshot.id);
    expect(runC.snapshot?.manifest.branch).toBe("main");
    expect(runC.snapshot?.id).not.toBe(cpA.snapshot.id);

    // 5. Run B releases later: its checkpoint lands in its own lineage and moves no baseline. A
    // validated refresh and B's late publish both observed b0; whoever commits second loses,
    // so release order cannot choose the next baseline.
    await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, runB.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("b-work"), branch: "feature/b" }),
    });
    const refresh = await publishClean(db, agent, s, "main@2", b0.snapshot.id);
    const late = await rejection(publishClean(db, agent, s, "main@1-late", b0.snapshot.id));
    expect(isStrataError(late, "BASELINE_STALE")).toBe(true);

    const runD = await acquireFor(db, agent, s);
    expect(runD).toMatchObject({ rung: "baseline", snapshot: { id: refresh.snapshot.id } });
    // Each continuing run still resumes only its own work.
    expect((await acquireFor(db, agent, s, runA.workContextId)).snapshot?.id).toBe(cpA.snapshot.id);
    const resumedB = await acquireFor(db, agent, s, runB.workContextId);
    expect(resumedB).toMatchObject({ rung: "checkpoint", snapshot: { manifest: { branch: "feature/b" } } });

    const readyBaselines = await db.snapshot.count({
      where: { repository: { identity: s.repository.identity }, class: "baseline", state: "ready" },
    });
    expect(readyBaselines).toBe(1);
  });

  it("a clean checkpoint never satisfies a baseline lookup", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const first = await acquireFor(db, agent, s);
    expect(first.rung).toBe("cold");
    // The worker's tree is pristine main at the canonical commit: byte for byte a baseline.
    const pristine = manifestOf({ head: oid("main@1"), branch: "main" });
    const clean = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, first.workContextId),
      observedHeadId: null,
      manifest: pristine,
    });
    expect(clean.snapshot.class).toBe("checkpoint");

    const newWork = await acquireFor(db, agent, s);
    expect(newWork).toMatchObject({ rung: "cold", snapshot: null });
    const namedNewWork = await acquireFor(db, agent, s, uniqueName("wc"));
    expect(namedNewWork).toMatchObject({ rung: "cold", snapshot: null });

    // Only the validated path makes a baseline, and then new work gets that one.
    const b1 = await publishClean(db, agent, s, "main@1", null);
    expect(b1.snapshot.id).not.toBe(clean.snapshot.id);
    expect(await acquireFor(db, agent, s)).toMatchObject({ rung: "baseline", snapshot: { id: b1.snapshot.id } });
  });

  it("a missing lineage never falls back to another work context's checkpoint", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const owner = await acquireFor(db, agent, s);
    const cp = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, owner.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("x"), branch: "feature/x" }),
    });

    // No baseline yet: a stranger with no lineage starts cold, not from cp.
    const stranger = await acquireFor(db, agent, s, uniqueName("wc"));
    expect(stranger).toMatchObject({ rung: "cold", snapshot: null });

    const b0 = await publishClean(db, agent, s, "main@1", null);
    const stranger2 = await acquireFor(db, agent, s, uniqueName("wc"));
    expect(stranger2).toMatchObject({ rung: "baseline", snapshot: { id: b0.snapshot.id } });

    // The owner's checkpoint fails to restore: the ladder goes to a baseline, never sideways.
    const resumed = await acquireFor(db, agent, s, owner.workContextId);
    expect(resumed.snapshot?.id).toBe(cp.snapshot.id);
    const walked = await reportRestore(db, {
      agent,
      restoreId: resumed.restoreId,
      outcome: "failed",
      error: { code: "RESTORE_FAILED", message: "layer missing" },
    });
    expect(walked.next).toMatchObject({ rung: "baseline", snapshot: { id: b0.snapshot.id } });
    expect(walked.next?.mustInspectExternalState).toBe(true);

    // After the owner's lineage is retired, even the owner no longer resumes cp.
    await retireLineage(db, { lineageId: owner.lineage.id, reason: "completed", actor: { kind: "agent", agent } });
    const afterRetire = await acquireFor(db, agent, s, owner.workContextId);
    expect(afterRetire).toMatchObject({ rung: "baseline", snapshot: { id: b0.snapshot.id } });
    expect(afterRetire.notice).toMatch(/retired/);
  });

  it("ten concurrent acquires of one baseline each get their own workspace and lineage", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);

    const plans = await Promise.all(Array.from({ length: 10 }, () => acquireFor(db, agent, s)));
    expect(plans.every((p) => p.rung === "baseline" && p.snapshot?.id === b0.snapshot.id)).toBe(true);
    expect(new Set(plans.map((p) => p.lineage.id)).size).toBe(10);
    expect(new Set(plans.map((p) => p.workContextId)).size).toBe(10);
    expect(plans.every((p) => p.lineage.originSnapshotId === b0.snapshot.id)).toBe(true);
    expect(await db.pin.count({ where: { snapshotId: b0.snapshot.id, released: false } })).toBe(10);
    const restores = await db.restore.findMany({ where: { id: { in: plans.map((p) => p.restoreId) } } });
    expect(new Set(restores.map((r) => r.workspace)).size).toBe(10);

    // Their later checkpoints affect neither baseline selection nor one another.
    const checkpoints = await Promise.all(
      plans.map((p, i) =>
        appendCheckpoint(db, {
          agent,
          key: lineageKeyOf(s, p.workContextId),
          observedHeadId: null,
          manifest: manifestOf({ head: oid(`work-${i}`), branch: `task-${i}` }),
        }),
      ),
    );
    expect(await acquireFor(db, agent, s)).toMatchObject({ rung: "baseline", snapshot: { id: b0.snapshot.id } });
    for (const [i, plan] of plans.entries()) {
      const resumed = await acquireFor(db, agent, s, plan.workContextId);
      expect(resumed.snapshot?.id).toBe(checkpoints[i]?.snapshot.id);
    }
  });
});
