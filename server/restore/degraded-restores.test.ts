import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { discardDegraded, listDegradedRestores } from "./degraded-restores.ts";
import { describePin } from "../content/pins.ts";
import { buildHistory, makeUser } from "../testing/dashboard.ts";
import { oid } from "../testing/lineage.ts";

describeEachDatabase("degraded-restore notices", (catalog) => {
  it("queues a degraded restore with what it holds, what is missing and the next step", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const queue = await listDegradedRestores(db);
    const item = queue.find((r) => r.id === h.degradedRestoreId);
    expect(item).toMatchObject({
      outcome: "degraded",
      rung: "checkpoint",
      snapshotId: h.a[2],
      workContextId: h.wcA,
      agent: { name: h.agent.name },
      pin: { pinId: h.degradedPinId, active: true },
      discardedAt: null,
    });
    expect(item!.notice.missing).toMatchObject({ paths: ["src/feature.ts"], commits: [oid("unpushed")] });
    expect(item!.notice.nextStep).toMatch(/discard/i);
    // The 30-day hold on the original is visible.
    const days = (item!.pin!.expiresAt!.getTime() - item!.createdAt.getTime()) / 86_400_000;
    expect(Math.round(days)).toBe(30);
  });

  it("pages the queue by cursor: every open notice once, oldest first; discarded ones newest first", async () => {
    const db = catalog().db;
    await buildHistory(db);
    await buildHistory(db);
    const support = await makeUser(db, "support");
    const whole = await listDegradedRestores(db, { limit: 500 });
    expect(whole.length).toBeGreaterThanOrEqual(2);
    const walk = async (status: "open" | "discarded") => {
      const seen: string[] = [];
      let cursor: { at: Date; id: string } | undefined;
      for (;;) {
        const page = await listDegradedRestores(db, { status, limit: 1, ...(cursor ? { cursor } : {}) });
        seen.push(...page.map((r) => r.id));
        const last = page.at(-1);
        const at = last ? (status === "open" ? last.createdAt : last.discardedAt) : null;
        if (page.length < 1 || !last || !at) return seen;
        cursor = { at, id: last.id };
      }
    };
    expect(await walk("open")).toEqual(whole.map((r) => r.id));
    // Two discarded, the newest first.
    for (const item of whole.slice(0, 2)) {
      await discardDegraded(db, { restoreId: item.id, reason: "paging test", user: support });
    }
    const discarded = await listDegradedRestores(db, { status: "discarded", limit: 500 });
    expect(await walk("discarded")).toEqual(discarded.map((r) => r.id));
    const times = discarded.map((r) => r.discardedAt!.getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it("lists unrestored restores too", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    // A worker reporting that nothing could be restored (the outcome the ladder's last rung gives).
    await db.restore.update({
      where: { id: h.acquireB },
      data: { outcome: "unrestored", result: { reason: "COMMITS_UNAVAILABLE" }, reportedAt: new Date() },
    });
    const item = (await listDegradedRestores(db)).find((r) => r.id === h.acquireB);
    expect(item?.notice.summary).toMatch(/^Nothing was restored/);
    expect(item?.notice.nextStep).toMatch(/Push the missing commits/);
  });

  it("discard releases the pin, records the worktree as the restore target, audits, and leaves the queue", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const support = await makeUser(db, "support");
    // A capture made since in the partly restored worktree (as the capture side records it).
    const workspace = (await db.restore.findUniqueOrThrow({ where: { id: h.degradedRestoreId } })).workspace;
    await db.snapshot.update({ where: { id: h.bFirst }, data: { degradedFromId: h.a[2], sourceWorkspace: workspace } });
    await db.snapshot.update({ where: { id: h.bFirst }, data: { lineageId: h.lineageA } });

    const result = await discardDegraded(db, {
      restoreId: h.degradedRestoreId,
      reason: "customer rebuilt the branch by hand",
      user: support,
    });
    expect(result).toMatchObject({
      restoreId: h.degradedRestoreId,
      alreadyDiscarded: false,
      releasedPinId: h.degradedPinId,
      restoreTarget: { workspace, snapshotId: h.bFirst },
    });
    expect((await describePin(db, h.degradedPinId, { agentId: h.agent.scope.agentId })).active).toBe(false);
    const row = await db.restore.findUniqueOrThrow({ where: { id: h.degradedRestoreId } });
    expect(row).toMatchObject({ discardedBy: support.userId, discardReason: "customer rebuilt the branch by hand" });
    expect(row.result).toMatchObject({
      missing: ["src/feature.ts", oid("unpushed")],
      restoreTarget: { snapshotId: h.bFirst },
    });
    const audit = await db.auditEvent.findMany({ where: { subjectType: "restore", subjectId: h.degradedRestoreId } });
    expect(audit).toEqual([
      expect.objectContaining({
        actorType: "user",
        actorId: support.userId,
        action: "restore.discardDegraded",
        reason: "customer rebuilt the branch by hand",
      }),
    ]);
    expect((await listDegradedRestores(db)).map((r) => r.id)).not.toContain(h.degradedRestoreId);
    const handled = await listDegradedRestores(db, { status: "discarded" });
    expect(handled.find((r) => r.id === h.degradedRestoreId)).toMatchObject({
      discardedByEmail: support.email,
      pin: { active: false },
    });

    // Idempotent: a second discard changes nothing and writes no second audit event.
    const again = await discardDegraded(db, { restoreId: h.degradedRestoreId, reason: "double click", user: support });
    expect(again).toMatchObject({ alreadyDiscarded: true, discardedAt: result.discardedAt });
    expect(await db.auditEvent.count({ where: { subjectId: h.degradedRestoreId } })).toBe(1);
  });

  it("without a capture since, the target is what the worker reported the worktree holds", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const admin = await makeUser(db, "admin");
    const result = await discardDegraded(db, { restoreId: h.degradedRestoreId, reason: "abandoned task", user: admin });
    expect(result.restoreTarget).toMatchObject({ snapshotId: null, head: null });
  });

  it("refuses an operator, a restore that is not degraded, and an unknown restore", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const operator = await makeUser(db, "operator");
    const support = await makeUser(db, "support");
    await expect(
      discardDegraded(db, { restoreId: h.degradedRestoreId, reason: "not mine to do", user: operator }),
    ).rejects.toSatisfy((e) => isStrataError(e, "FORBIDDEN"));
    expect((await describePin(db, h.degradedPinId, { agentId: h.agent.scope.agentId })).active).toBe(true);
    await expect(
      discardDegraded(db, { restoreId: h.acquireB, reason: "it restored", user: support }),
    ).rejects.toSatisfy((e) => isStrataError(e, "CONFLICT"));
    await expect(discardDegraded(db, { restoreId: "nope", reason: "no such", user: support })).rejects.toSatisfy((e) =>
      isStrataError(e, "NOT_FOUND"),
    );
  });

  it("two supports discarding at once: one discard, one audit event", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const [s1, s2] = [await makeUser(db, "support"), await makeUser(db, "support")];
    const results = await Promise.all([
      discardDegraded(db, { restoreId: h.degradedRestoreId, reason: "first", user: s1 }),
      discardDegraded(db, { restoreId: h.degradedRestoreId, reason: "second", user: s2 }),
    ]);
    expect(results.map((r) => r.alreadyDiscarded).sort()).toEqual([false, true]);
    expect(await db.auditEvent.count({ where: { subjectId: h.degradedRestoreId } })).toBe(1);
  });
});
