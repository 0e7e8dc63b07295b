import { randomUUID } from "node:crypto";
import { afterAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { isStrataError } from "../domain/errors.ts";
import { pinSnapshot } from "../content/pins.ts";
import { snapshotDetail } from "./snapshot-detail.ts";
import { buildHistory, makeUser } from "../testing/dashboard.ts";
import { acquireFor, lineageKeyOf, manifestOf, oid } from "../testing/lineage.ts";
import { appendCheckpoint } from "../lineage/checkpoints.ts";
import { forkCheckpoint } from "../lineage/fork-checkpoint.ts";
import { reportRestore } from "../restore/report-restore.ts";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import { makeAgent, uniqueName } from "../testing/lineage.ts";
import { addOrigin, commitAll, initRepository, removeTemporaryDirectories, write } from "../testing/repos.ts";

afterAll(removeTemporaryDirectories);

describeEachDatabase("snapshot detail", (catalog) => {
  it("shows a checkpoint's key, history, manifest, heads with the forest beneath, pins and restores", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const [, a2, a3] = h.a as [string, string, string];
    const [p1, p2, p3] = h.patches as [LayerDescriptor, LayerDescriptor, LayerDescriptor];
    const manifestLayer = h.manifestLayers[2]!;
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: a3 }, select: { treeId: true } });
    await pinSnapshot(db, {
      agentId: h.agent.scope.agentId,
      snapshotId: a3,
      pinId: `support:${randomUUID()}`,
      holder: "support case 42",
    });

    const detail = await snapshotDetail(db, { snapshotId: a3 });
    expect(detail).toMatchObject({
      id: a3,
      class: "checkpoint",
      state: "ready",
      workContextId: h.wcA,
      sequence: 3,
      repository: { id: h.repositoryId },
      agent: { name: h.agent.name },
      lineage: { id: h.lineageA, state: "active", checkpointCount: 3, originSnapshotId: h.b1 },
      predecessor: { id: a2, sequence: 2 },
      successors: [],
    });
    expect(detail.history.map((e) => e.state)).toEqual(["created", "ready", "last restored"]);
    expect(detail.manifest).toMatchObject({ source: "manifest-layer", digest: manifestLayer.digest, tree: row.treeId });
    expect(detail.manifest.full?.patches.map((p) => p.uuid)).toEqual([p1.uuid, p2.uuid, p3.uuid]);
    expect(detail.manifest.full?.omitted.map((o) => o.reason)).toEqual(["denied", "ignored"]);
    expect(detail.manifest.full?.omittedTotal).toBe(2);
    expect(detail.heads.sort()).toEqual([p3.uuid, manifestLayer.uuid].sort());
    const forest = new Map(detail.forest.map((l) => [l.uuid, l]));
    expect([...forest.keys()].sort()).toEqual([p1.uuid, p2.uuid, p3.uuid, manifestLayer.uuid].sort());
    expect(forest.get(p3.uuid)).toMatchObject({ parentUuid: p2.uuid, isHead: true, sharedWith: 0 });
    // p2 is a2's head too: shared with one other snapshot.
    expect(forest.get(p2.uuid)).toMatchObject({ isHead: false, sharedWith: 1 });
    expect(detail.forestTruncated).toBe(false);
    // The restore pin of the degraded resume and the support pin, both active.
    expect(detail.pins.map((p) => p.active)).toEqual([true, true]);
    expect(detail.restores).toEqual([
      expect.objectContaining({ id: h.degradedRestoreId, rung: "checkpoint", outcome: "degraded" }),
    ]);
  });

  it("shows a baseline's validation evidence and supersession, and the lineages it began", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const detail = await snapshotDetail(db, { snapshotId: h.b1 });
    expect(detail).toMatchObject({ class: "baseline", state: "superseded", canonicalRef: "refs/heads/main" });
    expect(detail.validation).toMatchObject({ fetched: true, stagedCount: 0, branch: "main" });
    // Restored once (work context A began from it), then superseded by b2.
    expect(detail.history.map((e) => e.state)).toEqual(["created", "ready", "last restored", "superseded"]);
    expect(detail.originOf.map((l) => l.id)).toEqual([h.lineageA]);
    // No stored record: the manifest fields come from the catalog columns.
    expect(detail.manifest).toMatchObject({
      source: "columns",
      full: null,
      head: oid(`${h.wcA}-base-1`),
      branch: "main",
    });
    expect(detail.restores.map((r) => r.outcome)).toEqual(["restored"]);
  });

  it("lists the work contexts forked from a checkpoint, and a fork's checkpoint names where it was forked from", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const a3 = h.a[2]!;
    const user = await makeUser(db, "admin");
    const { forks } = await forkCheckpoint(db, {
      fromCheckpoint: a3,
      count: 3,
      reason: "three retries",
      actor: { kind: "user", user },
    });
    const detail = await snapshotDetail(db, { snapshotId: a3 });
    expect(detail.forks.map((f) => f.id).sort()).toEqual(forks.map((f) => f.lineageId).sort());
    expect(detail.forks[0]).toMatchObject({
      state: "active",
      forkReason: "three retries",
      forkedBy: `user:${user.userId}`,
      checkpointCount: 0,
    });
    expect(detail.audit.map((e) => [e.action, e.reason])).toContainEqual(["lineage.fork", "three retries"]);

    const fork = forks[0]!;
    const plan = await acquireFor(db, h.agent.scope, h.scenario, fork.workContextId);
    await reportRestore(db, { agent: h.agent.scope, restoreId: plan.restoreId, outcome: "restored" });
    const own = await appendCheckpoint(db, {
      agent: h.agent.scope,
      key: lineageKeyOf(h.scenario, fork.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("forked-work"), branch: "retry" }),
    });
    expect((await snapshotDetail(db, { snapshotId: own.snapshot.id })).lineage).toMatchObject({
      id: fork.lineageId,
      forkedFromId: a3,
      forkReason: "three retries",
      originSnapshotId: a3,
    });
  });

  it("is NOT_FOUND for an unknown snapshot", async () => {
    await expect(snapshotDetail(catalog().db, { snapshotId: "nope" })).rejects.toSatisfy((e) =>
      isStrataError(e, "NOT_FOUND"),
    );
  });

  it("says which unpushed commits a checkpoint's bundle left out and why, and 'every commit was pushed' only when so", async () => {
    const db = catalog().db;
    const { scope } = await makeAgent(db);
    const port = localCatalog(db, scope);
    const target = () => ({
      kind: "checkpoint" as const,
      key: {
        repository: { identity: `example.invalid/${uniqueName("bundle")}` },
        backendKind: "local",
        baseImage: "test-image",
        workContextId: uniqueName("wc"),
      },
    });
    // An unpushed commit touches .env.local (on the deny-list), another one does not.
    const root = initRepository({ "app.ts": "export {};\n" });
    addOrigin(root);
    write(root, ".env.local", "TOKEN=FAKE-NOT-A-SECRET\n");
    const touching = commitAll(root, "local settings by mistake");
    write(root, "app.ts", "export const ok = true;\n");
    const harmless = commitAll(root, "harmless");
    const captured = await captureAndPublish(port, { dir: root, target: target() });
    expect(captured.outcome).toBe("appended");

    const detail = await snapshotDetail(db, { snapshotId: captured.snapshotId });
    expect(detail.manifest.full?.bundle).toBeNull();
    expect(detail.manifest.full?.bundleLeftOut).toEqual([
      expect.objectContaining({ reason: "unpushed-denied", path: ".env.local", commits: [touching] }),
    ]);
    expect(detail.manifest.full?.bundleLeftOut[0]?.detail).toMatch(/left out until they are pushed/);
    expect(harmless).not.toBe(touching);

    // Every commit pushed: no bundle, and nothing left out.
    const pushed = initRepository({ "app.ts": "export {};\n" });
    addOrigin(pushed);
    write(pushed, "app.ts", "export const dirty = true;\n");
    const clean = await captureAndPublish(port, { dir: pushed, target: target() });
    const cleanDetail = await snapshotDetail(db, { snapshotId: clean.snapshotId });
    expect(cleanDetail.manifest.full).toMatchObject({ bundle: null, bundleLeftOut: [] });
  });
});
