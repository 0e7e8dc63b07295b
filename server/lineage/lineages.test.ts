import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { trustUser } from "../domain/scope.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { getLineage, listLineages, retireLineage } from "./lineages.ts";
import { acquireFor, lineageKeyOf, makeAgent, manifestOf, oid, publishClean, scenario } from "../testing/lineage.ts";

describeEachDatabase("lineages", (catalog) => {
  it("retires a completed lineage: its head leaves eligibility and the retirement is audited", async () => {
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
      manifest: manifestOf({ head: oid("1"), branch: "t" }),
    });
    const two = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: one.snapshot.id,
      manifest: manifestOf({ head: oid("2"), branch: "t" }),
    });

    const retired = await retireLineage(db, {
      lineageId: plan.lineage.id,
      reason: "completed",
      note: "merged",
      actor: { kind: "agent", agent },
    });
    expect(retired).toMatchObject({
      alreadyRetired: false,
      retiredSnapshotIds: [two.snapshot.id],
      lineage: { state: "retired", retiredReason: "completed", head: null, checkpointCount: 2 },
    });
    const head = await db.snapshot.findUniqueOrThrow({ where: { id: two.snapshot.id } });
    expect(head).toMatchObject({ state: "retired", retiredReason: "completed" });
    const audit = await db.auditEvent.findMany({ where: { subjectType: "lineage", subjectId: plan.lineage.id } });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actorType: "agent",
      actorId: agent.agentId,
      action: "lineage.retire",
      reason: "completed",
    });
    expect(audit[0]?.details).toMatchObject({ retiredSnapshotIds: [two.snapshot.id], note: "merged" });

    // Idempotent; and the retired work never seeds anything again.
    const again = await retireLineage(db, {
      lineageId: plan.lineage.id,
      reason: "completed",
      actor: { kind: "agent", agent },
    });
    expect(again.alreadyRetired).toBe(true);
    expect(await db.auditEvent.count({ where: { subjectId: plan.lineage.id } })).toBe(1);
    const resumed = await acquireFor(db, agent, s, plan.workContextId);
    expect(resumed).toMatchObject({
      rung: "baseline",
      snapshot: { id: b0.snapshot.id },
      lineage: { state: "retired" },
    });
    // Terminal checkpoints never become baselines.
    expect(await acquireFor(db, agent, s)).toMatchObject({ snapshot: { id: b0.snapshot.id } });
  });

  it("lets each actor give only its own reasons", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const plan = await acquireFor(db, agent, s);
    const asOperator = await retireLineage(db, {
      lineageId: plan.lineage.id,
      reason: "operator",
      actor: { kind: "agent", agent },
    }).catch((e: unknown) => e);
    expect(isStrataError(asOperator, "INVALID_INPUT")).toBe(true);
    const user = await db.user.create({
      data: { email: `${plan.workContextId}@example.test`, name: "Op", role: "operator" },
    });
    const byOperator = await retireLineage(db, {
      lineageId: plan.lineage.id,
      reason: "operator",
      actor: { kind: "user", user: trustUser(user.id, user.email, "operator") },
    });
    expect(byOperator.lineage).toMatchObject({ state: "retired", retiredReason: "operator" });
    const audit = await db.auditEvent.findFirstOrThrow({ where: { subjectId: plan.lineage.id } });
    expect(audit).toMatchObject({ actorType: "user", actorId: user.id });
  });

  it("gets and lists only the agent's own lineages, newest first, retired ones when asked", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const { scope: other } = await makeAgent(db);
    const s = scenario();
    const plans = [];
    for (let i = 0; i < 5; i += 1) plans.push(await acquireFor(db, agent, s));
    const foreign = await acquireFor(db, other, s);
    await retireLineage(db, {
      lineageId: plans[0]?.lineage.id ?? "",
      reason: "declined",
      actor: { kind: "agent", agent },
    });

    const got = await getLineage(db, { agent, lineageId: plans[1]?.lineage.id ?? "" });
    expect(got).toMatchObject({
      workContextId: plans[1]?.workContextId,
      state: "active",
      repository: { identity: s.repository.identity },
    });
    const hidden = await getLineage(db, { agent, lineageId: foreign.lineage.id }).catch((e: unknown) => e);
    expect(isStrataError(hidden, "NOT_FOUND")).toBe(true);

    const page1 = await listLineages(db, { agent, repositoryIdentity: s.repository.identity, limit: 2 });
    const page2 = await listLineages(db, {
      agent,
      repositoryIdentity: s.repository.identity,
      limit: 2,
      cursor: page1.nextCursor ?? undefined,
    });
    const active = [...page1.items, ...page2.items];
    expect(page2.nextCursor).toBeNull();
    expect(active).toHaveLength(4);
    expect(new Set(active.map((l) => l.id))).toEqual(new Set(plans.slice(1).map((p) => p.lineage.id)));
    const sorted = [...active].sort(
      (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || a.id.localeCompare(b.id),
    );
    expect(active.map((l) => l.id)).toEqual(sorted.map((l) => l.id));
    const all = await listLineages(db, { agent, repositoryIdentity: s.repository.identity, includeRetired: true });
    expect(all.items).toHaveLength(5);
    expect(all.items.some((l) => l.id === foreign.lineage.id)).toBe(false);
    const byContext = await listLineages(db, { agent, workContextId: plans[2]?.workContextId });
    expect(byContext.items.map((l) => l.id)).toEqual([plans[2]?.lineage.id]);
  });
});
