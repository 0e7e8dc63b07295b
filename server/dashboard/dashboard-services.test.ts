// The dashboard's pins, retirement, audit-log and collection services on a small history.
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { listAuditEvents } from "../audit/audit-log.ts";
import {
  collectionOverview,
  collectionRunLog,
  collectionSchedule,
  runCollectionNow,
} from "../gc/collection-overview.ts";
import { inspectPins } from "./pin-inspection.ts";
import { listRepositories, listRestores } from "./browse.ts";
import { pinSnapshot } from "../content/pins.ts";
import { previewRetirement } from "./retirement-preview.ts";
import { retireLineageByUser } from "../lineage/retire-lineage-by-user.ts";
import { retireSnapshotByUser } from "../lineage/retire-snapshot-by-user.ts";
import { createOwner } from "../testing/content.ts";
import { buildHistory, makeUser } from "../testing/dashboard.ts";
import { forkCheckpoint } from "../lineage/fork-checkpoint.ts";

describeEachDatabase("dashboard services", (catalog) => {
  it("pins: active and closed holds with their snapshots; the pins that keep a retired snapshot", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const operator = await makeUser(db, "operator");
    await pinSnapshot(db, {
      agentId: h.agent.scope.agentId,
      snapshotId: h.bFirst,
      pinId: `hold:${h.bFirst}`,
      holder: "support",
      purpose: "investigation",
    });
    await retireSnapshotByUser(db, { snapshotId: h.bFirst, reason: "bad capture", user: operator });

    const all = await inspectPins(db, { snapshotId: h.bFirst });
    expect(all.pins).toEqual([
      expect.objectContaining({
        pinId: `hold:${h.bFirst}`,
        status: "active",
        keepsRetired: true,
        // A person's words name no agent or user: shown as they are.
        holderName: "support",
      }),
    ]);
    // Pins an agent took (its restores) name the agent.
    const restorePins = (await inspectPins(db, { status: "all" })).pins.filter((p) => p.pinId.startsWith("restore:"));
    expect(restorePins.length).toBeGreaterThan(0);
    expect(new Set(restorePins.map((p) => p.holderName))).toEqual(new Set([`agent ${h.agent.name}`]));
    const keeping = await inspectPins(db, { keepingRetired: true });
    expect(keeping.pins.map((p) => p.pinId)).toContain(`hold:${h.bFirst}`);
    expect(keeping.pins.every((p) => p.keepsRetired)).toBe(true);
    expect(keeping.keepingRetiredCount).toBeGreaterThanOrEqual(1);
    const keptSnapshot = keeping.pins.find((p) => p.pinId === `hold:${h.bFirst}`)?.snapshot;
    expect(keptSnapshot).toMatchObject({ id: h.bFirst, state: "retired", class: "checkpoint" });

    const closed = await inspectPins(db, { status: "closed" });
    // Work context A's first restore was reported restored: its pin is closed.
    expect(closed.pins.some((p) => p.status === "released" && !p.active)).toBe(true);
    const active = await inspectPins(db, { status: "active" });
    expect(active.pins.every((p) => p.active)).toBe(true);
    expect(active.activeCount).toBeGreaterThanOrEqual(active.pins.length);
  });

  it("pages through pins newest first, every pin once, ties on the same instant included", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const at = new Date("2026-11-30T12:00:00.000Z");
    // Seven holds, four of them taken at the same instant, so the cursor must break ties.
    for (let i = 0; i < 7; i++) {
      await db.pin.create({
        data: {
          agentId: h.agent.scope.agentId,
          pinId: `page:${i}`,
          snapshotId: h.bFirst,
          holder: "support",
          createdAt: i < 4 ? at : new Date(at.getTime() + i),
        },
      });
    }
    // Pin ids are per agent: another agent's release-first rows with the same ids, at the same
    // instant, and an id holding the cursor's separator.
    const other = await createOwner(db);
    for (const pinId of ["page:0", "page:1", "page|2"]) {
      await db.pin.create({
        data: { agentId: other.agentId, pinId, snapshotId: h.bFirst, released: true, releasedAt: at, createdAt: at },
      });
    }
    const everything = await inspectPins(db, { snapshotId: h.bFirst, limit: 500 });
    expect(everything.nextCursor).toBeNull();
    const key = (p: { agentId: string; pinId: string }) => `${p.agentId}/${p.pinId}`;
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const result = await inspectPins(db, { snapshotId: h.bFirst, limit: 3, cursor });
      seen.push(...result.pins.map(key));
      // The totals head the first page only.
      expect(result.activeCount === null).toBe(page > 0);
      if (!result.nextCursor) break;
      cursor = result.nextCursor;
    }
    expect(seen).toEqual(everything.pins.map(key));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => id.includes("/page:") || id.includes("/page|"))).toHaveLength(10);

    const refused = await inspectPins(db, { cursor: "not-a-cursor" }).catch((e: unknown) => e);
    expect(isStrataError(refused, "INVALID_INPUT")).toBe(true);
  });

  it("previews a lineage retirement: what retires, what pins protect, what GC may reclaim", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const preview = await previewRetirement(db, { kind: "lineage", id: h.lineageA });
    expect(preview.alreadyRetired).toBe(false);
    expect(preview.retires.map((s) => s.id)).toEqual([h.a[2]]);
    expect(preview.untouched.map((s) => s.id)).toEqual([h.a[0], h.a[1]]);
    // The degraded resume's pin keeps a3 for 30 days.
    expect(preview.protectedByPins).toEqual([expect.objectContaining({ pinId: h.degradedPinId, snapshotId: h.a[2] })]);
    // Held by the agent that restored: named, not `agent:<id>`.
    expect(preview.protectedByPins[0]).toMatchObject({
      holder: `agent:${h.agent.scope.agentId}`,
      holderName: `agent ${h.agent.name}`,
    });
    expect(preview.releasedAtNextCollection).toBe(0);
    expect(preview.reclaim).toMatchObject({ layers: 0 });
    expect(preview.notes.join(" ")).toMatch(/2 earlier checkpoints are already superseded/);
  });

  it("previews a snapshot retirement: unpinned, only its own top layers are reclaimable", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const preview = await previewRetirement(db, { kind: "snapshot", id: h.a[1]! });
    expect(preview.retires.map((s) => s.id)).toEqual([h.a[1]]);
    expect(preview.protectedByPins).toEqual([]);
    expect(preview.releasedAtNextCollection).toBe(1);
    // a2's heads: its patch (parent of a3's patch, so shared) and its manifest layer (its own).
    expect(preview.reclaim).toMatchObject({ layers: 1, sharedLayers: 2, partial: false });
    expect(preview.reclaim.bytes).toBe(Number(h.manifestLayers[1]!.sizeBytes));
    await expect(previewRetirement(db, { kind: "snapshot", id: "nope" })).rejects.toSatisfy((e) =>
      isStrataError(e, "NOT_FOUND"),
    );
  });

  it("previews retiring a forked checkpoint: the forks without a checkpoint of their own start from the baseline", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const user = await makeUser(db, "operator");
    await forkCheckpoint(db, {
      fromCheckpoint: h.a[2]!,
      count: 2,
      reason: "two more tries",
      actor: { kind: "user", user },
    });
    for (const subject of [
      { kind: "snapshot", id: h.a[2]! },
      { kind: "lineage", id: h.lineageA },
    ] as const) {
      const preview = await previewRetirement(db, subject);
      expect([subject.kind, preview.notes.join(" ")]).toEqual([
        subject.kind,
        expect.stringContaining("2 work contexts forked from it have no checkpoint of their own yet"),
      ]);
    }
    expect((await previewRetirement(db, { kind: "snapshot", id: h.a[1]! })).notes.join(" ")).not.toMatch(/forked/);
  });

  it("retires a lineage and a snapshot for a user, with the user and reason in the audit log", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const operator = await makeUser(db, "operator");
    const lineage = await retireLineageByUser(db, { lineageId: h.lineageB, reason: "task abandoned", user: operator });
    expect(lineage).toEqual({ lineageId: h.lineageB, alreadyRetired: false, retiredSnapshotIds: [h.bFirst] });
    const snapshot = await retireSnapshotByUser(db, { snapshotId: h.a[0]!, reason: "leaked a token", user: operator });
    expect(snapshot).toMatchObject({ state: "retired", alreadyRetired: false, activePins: 0 });
    expect(
      (await retireLineageByUser(db, { lineageId: h.lineageB, reason: "again", user: operator })).alreadyRetired,
    ).toBe(true);
    await expect(retireSnapshotByUser(db, { snapshotId: h.a[0]!, reason: "", user: operator })).rejects.toThrow();

    const log = await listAuditEvents(db, { actorType: "user" });
    const mine = log.items.filter((e) => e.actorId === operator.userId);
    expect(mine.map((e) => [e.action, e.subjectId, e.reason])).toEqual([
      ["snapshot.retire", h.a[0], "leaked a token"],
      ["lineage.retire", h.lineageB, "operator"],
    ]);
    expect(mine[1]!.details).toMatchObject({ note: "task abandoned", retiredSnapshotIds: [h.bFirst] });
    // The person's words are the why; "operator" is the kind of retirement, not the reason.
    expect(mine.map((e) => [e.action, e.why, e.kind])).toEqual([
      ["snapshot.retire", "leaked a token", null],
      ["lineage.retire", "task abandoned", "operator"],
    ]);
    expect(mine[0]!.actor).toBe(`${operator.email} (operator)`);
    expect(log.actions).toEqual(expect.arrayContaining(["lineage.retire", "snapshot.retire"]));

    const page1 = await listAuditEvents(db, { limit: 1 });
    expect(page1.items).toHaveLength(1);
    const page2 = await listAuditEvents(db, { limit: 1, cursor: page1.nextCursor! });
    expect(page2.items[0]!.id).not.toBe(page1.items[0]!.id);
  });

  it("collection page: retired space held by pins or released next run, pending layers, runs; run now is audited", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const operator = await makeUser(db, "operator");
    const admin = await makeUser(db, "admin");
    await retireSnapshotByUser(db, { snapshotId: h.a[1]!, reason: "superseded work", user: operator });
    await retireLineageByUser(db, { lineageId: h.lineageA, reason: "done", user: operator });

    const before = await collectionOverview(db, { configuredIntervalSeconds: 3600 });
    // a3 is kept by the degraded restore's pin; a2 goes at the next run.
    expect(before.retiredHeld.keptByPins.snapshots).toBeGreaterThanOrEqual(1);
    expect(before.retiredHeld.releasedNextRun.snapshots).toBeGreaterThanOrEqual(1);

    // The preview (a dry run) names what the run then does, figure for figure.
    const preview = await runCollectionNow(db, { user: admin, dryRun: true });
    const result = await runCollectionNow(db, { user: admin });
    expect(preview.status === "finished" && result.status === "finished").toBe(true);
    if (preview.status !== "finished" || result.status !== "finished") return;
    const { batches: _p, ...previewFigures } = preview.tally;
    const { batches: _r, ...runFigures } = result.tally;
    expect(runFigures).toEqual(previewFigures);
    expect(result.tally.layersDeleted).toBeGreaterThan(0);
    expect(result.tally.bytesFreed).toBeGreaterThan(0);
    const after = await collectionOverview(db, { configuredIntervalSeconds: 3600 });
    const log = await collectionRunLog(db, {});
    expect(log.runs.slice(0, 2)).toMatchObject([
      { id: result.runId, dryRun: false, status: "finished", trigger: "dashboard", startedBy: admin.email },
      { id: preview.runId, dryRun: true, status: "finished", trigger: "dashboard", startedBy: admin.email },
    ]);
    expect(log.runs[0]!.durationMs).toBeGreaterThanOrEqual(0);
    expect(log.runs[0]).toMatchObject({
      layersDeleted: result.tally.layersDeleted,
      bytesFreed: result.tally.bytesFreed,
    });
    expect(after.retiredHeld.releasedNextRun.snapshots).toBe(0);
    expect(after.retiredHeld.alreadyReleased.snapshots).toBeGreaterThanOrEqual(1);
    // a2's own manifest layer is no longer reachable from any head: deleted by the run.
    const layer = await db.layer.findFirstOrThrow({ where: { agentUuid: h.manifestLayers[1]!.uuid } });
    expect(layer.state).toBe("deleted");
    expect(after.pendingDeletion.unreachable).toBe(0);
    const audit = await listAuditEvents(db, { action: "gc.collect" });
    expect(audit.items[0]).toMatchObject({ actorId: admin.userId, subjectId: (result as { runId: string }).runId });
  });

  it("lists layers no head reaches as pending deletion before a run takes them", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    await db.snapshotHead.deleteMany({ where: { snapshotId: h.a[0]! } });
    const overview = await collectionOverview(db, { configuredIntervalSeconds: 3600 });
    const pending = overview.pendingDeletion.layers.map((l) => l.uuid);
    // a1's manifest layer has no head now; its patch is still beneath a2's and a3's.
    expect(pending).toContain(h.manifestLayers[0]!.uuid);
    expect(pending).not.toContain(h.patches[0]!.uuid);
    expect(overview.pendingDeletion.unreachable).toBe(pending.length);
    expect(overview.pendingDeletion.layers[0]!.createdAt).toBeInstanceOf(Date);
  });

  it("collection schedule: the next run is the next interval slot a real run leaves due", async () => {
    const db = catalog().db;
    const now = new Date("2099-03-01T10:20:00Z");
    const hour = 3600;
    // Far in the future, so these rows are newer than the runs earlier tests made.
    // No worker has offered a run yet: this server's setting, the next whole slot.
    const fresh = await collectionSchedule(db, { now, configuredIntervalSeconds: hour });
    expect(fresh).toMatchObject({ source: "configuration", intervalSeconds: hour, lastScheduled: null });
    expect(fresh.nextRunAt).toEqual(new Date("2099-03-01T11:00:00Z"));
    expect((await collectionSchedule(db, { now, configuredIntervalSeconds: 0 })).nextRunAt).toBeNull();

    // A worker offered a run every 2 hours, and a real run finished at 10:50: the 12:00 slot
    // would run only 70 minutes later, under 90% of the interval, so it is the 14:00 slot.
    await db.job.create({
      data: {
        kind: "gc",
        state: "completed",
        data: { intervalSeconds: 2 * hour },
        maxAttempts: 3,
        backoffMs: 1000,
        backoffMaxMs: 1000,
        leaseSeconds: 60,
        runAfter: new Date("2099-03-01T10:00:00Z"),
        createdAt: new Date("2099-03-01T10:00:00Z"),
        attempts: 1,
        startedAt: new Date("2099-03-01T10:00:01Z"),
        finishedAt: new Date("2099-03-01T10:00:05Z"),
        claimedBy: "worker-7",
      },
    });
    await db.collectionRun.create({
      data: {
        host: "worker:build-7",
        status: "finished",
        startedAt: new Date("2099-03-01T10:49:00Z"),
        finishedAt: new Date("2099-03-01T10:50:00Z"),
      },
    });
    // A dry run does not count.
    await db.collectionRun.create({
      data: {
        host: "dashboard:x",
        dryRun: true,
        status: "finished",
        startedAt: new Date("2099-03-01T11:10:00Z"),
        finishedAt: new Date("2099-03-01T11:11:00Z"),
      },
    });
    const later = await collectionSchedule(db, {
      now: new Date("2099-03-01T11:15:00Z"),
      configuredIntervalSeconds: hour,
    });
    expect(later).toMatchObject({ source: "worker", intervalSeconds: 2 * hour, lastScheduled: { worker: "worker-7" } });
    expect(later.nextRunAt).toEqual(new Date("2099-03-01T14:00:00Z"));
    const log = await collectionRunLog(db, { limit: 1 });
    expect(log.runs[0]).toMatchObject({ trigger: "dashboard", dryRun: true, durationMs: 60_000 });
    const next = await collectionRunLog(db, { limit: 1, cursor: log.nextCursor! });
    expect(next.runs[0]).toMatchObject({ trigger: "scheduled", startedBy: "worker build-7", dryRun: false });
  });

  it("pages restores past 200, newest first, every restore once, ties on the same instant included", async () => {
    const db = catalog().db;
    const agent = await db.agent.create({ data: { name: `pager-${randomUUID()}` } });
    const repository = await db.repository.create({
      data: { identity: `example.com/restores-${randomUUID()}`, name: "restores" },
    });
    // 230 cold restores, three at each instant; far in the future, so newer than other tests' rows.
    const base = Date.parse("2098-01-01T00:00:00Z");
    await db.restore.createMany({
      data: Array.from({ length: 230 }, (_, i) => ({
        agentId: agent.id,
        repositoryId: repository.id,
        backendKind: "local",
        baseImage: "img",
        canonicalRef: "refs/heads/main",
        workspace: `/home/dev/w${i}`,
        host: "host-a",
        rung: "cold",
        createdAt: new Date(base + Math.floor(i / 3) * 1000),
      })),
    });
    const total = await db.restore.count();
    const seen: string[] = [];
    const times: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await listRestores(db, { limit: 100, ...(cursor ? { cursor } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(100);
      seen.push(...page.items.map((r) => r.id));
      times.push(...page.items.map((r) => r.createdAt.getTime()));
      cursor = page.nextCursor ?? undefined;
      pages += 1;
    } while (cursor);
    expect(seen).toHaveLength(total);
    expect(new Set(seen).size).toBe(total);
    expect(pages).toBe(Math.ceil(total / 100));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    // The first 230 are these (the newest).
    const mine = new Set(
      (await db.restore.findMany({ where: { agentId: agent.id }, select: { id: true } })).map((r) => r.id),
    );
    expect(new Set(seen.slice(0, 230))).toEqual(mine);
    await expect(listRestores(db, { cursor: "not-a-cursor" })).rejects.toSatisfy((e) =>
      isStrataError(e, "INVALID_INPUT"),
    );
  });

  it("pages repositories by name, ties on the name broken by id, every one once", async () => {
    const db = catalog().db;
    const tag = randomUUID().slice(0, 8);
    for (const name of ["b", "a", "b", "c", "a"]) {
      await db.repository.create({ data: { identity: `example.com/${tag}/${randomUUID()}`, name: `${name}-${tag}` } });
    }
    const total = await db.repository.count();
    const seen: { name: string; id: string }[] = [];
    let cursor: string | undefined;
    do {
      const page = await listRepositories(db, { limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((r) => ({ name: r.name, id: r.id })));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toHaveLength(total);
    expect(new Set(seen.map((r) => r.id)).size).toBe(total);
    // By name (the database's collation orders other tests' names; these differ in their first letter).
    const mine = seen.filter((r) => r.name.endsWith(tag));
    expect(mine.map((r) => r.name[0])).toEqual(["a", "a", "b", "b", "c"]);
    await expect(listRepositories(db, { cursor: "bm9wZQ" })).rejects.toSatisfy((e) =>
      isStrataError(e, "INVALID_INPUT"),
    );
  });
});
