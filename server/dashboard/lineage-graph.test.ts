import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { collapseChains, filterGraph, nodeBadges } from "../domain/lineage-graph.ts";
import { appendCheckpoint } from "../lineage/checkpoints.ts";
import { findReadyBaseline } from "../lineage/baselines.ts";
import { retireSnapshot } from "../lineage/retirement.ts";
import { pinSnapshot, releasePin } from "../content/pins.ts";
import {
  repositoryGraph,
  repositoryGraphView,
  searchRepositoryGraph,
  type RepositoryGraphView,
} from "./lineage-graph.ts";
import { buildHistory } from "../testing/dashboard.ts";
import { acquireFor, lineageKeyOf, manifestOf, oid } from "../testing/lineage.ts";
import { reportRestore } from "../restore/report-restore.ts";
import { forkCheckpoint } from "../lineage/fork-checkpoint.ts";
import { makeUser } from "../testing/dashboard.ts";

describeEachDatabase("repository lineage graph", (catalog) => {
  it("chains baselines by supersession and checkpoints by lineage, with seeded-from edges", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const graph = await repositoryGraph(db, { repositoryId: h.repositoryId });

    expect(graph.repository.id).toBe(h.repositoryId);
    expect(graph.nodes.map((n) => n.id).sort()).toEqual([h.b1, h.b2, ...h.a, h.bFirst].sort());
    const state = Object.fromEntries(graph.nodes.map((n) => [n.id, n.state]));
    expect(state[h.b1]).toBe("superseded");
    expect(state[h.b2]).toBe("ready");
    expect(state[h.a[2]!]).toBe("ready");

    const edges = graph.edges.map((e) => `${e.kind} ${e.source} ${e.target}`).sort();
    expect(edges).toEqual(
      [
        `supersedes ${h.b1} ${h.b2}`,
        `chain ${h.a[0]} ${h.a[1]}`,
        `chain ${h.a[1]} ${h.a[2]}`,
        // Work context A began from b1, work context B from b2 (lineage origins and restores).
        `seeded ${h.b1} ${h.a[0]}`,
        `seeded ${h.b2} ${h.bFirst}`,
      ].sort(),
    );
    const a1 = graph.nodes.find((n) => n.id === h.a[0])!;
    expect(a1).toMatchObject({
      class: "checkpoint",
      workContextId: h.wcA,
      lineageId: h.lineageA,
      position: 1,
      agentName: h.agent.name,
      chainId: `lineage:${h.lineageA}`,
    });
    // "Diff with predecessor" compares with the previous of the chain, else where it began from.
    const previous = Object.fromEntries(graph.nodes.map((n) => [n.id, n.previousId]));
    expect(previous).toEqual({
      [h.b1]: null,
      [h.b2]: h.b1,
      [h.a[0]!]: h.b1,
      [h.a[1]!]: h.a[0],
      [h.a[2]!]: h.a[1],
      [h.bFirst]: h.b2,
    });
    expect(graph.agents).toEqual([{ id: h.agent.scope.agentId, name: h.agent.name }]);
    expect(graph.workContexts).toEqual([h.wcA, h.wcB].sort());
  });

  it("draws a restore attribution: a checkpoint written after the ladder fell back to a baseline", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const resume = await acquireFor(db, h.agent.scope, h.scenario, h.wcA);
    expect(resume.rung).toBe("checkpoint");
    const failed = await reportRestore(db, {
      agent: h.agent.scope,
      restoreId: resume.restoreId,
      outcome: "failed",
      error: { code: "BLOB_MISSING", message: "" },
    });
    expect(failed.next).toMatchObject({ rung: "baseline", snapshot: { id: h.b1 } });
    await reportRestore(db, { agent: h.agent.scope, restoreId: failed.next!.restoreId, outcome: "restored" });
    const a4 = await appendCheckpoint(db, {
      agent: h.agent.scope,
      key: lineageKeyOf(h.scenario, h.wcA),
      observedHeadId: h.a[2]!,
      manifest: manifestOf({ head: oid("a4"), branch: "task-a" }),
    });
    const graph = await repositoryGraph(db, { repositoryId: h.repositoryId });
    const into = graph.edges.filter((e) => e.target === a4.snapshot.id).map((e) => `${e.kind} ${e.source}`);
    expect(into.sort()).toEqual([`chain ${h.a[2]}`, `seeded ${h.b1}`].sort());
  });

  it("draws degraded-from: a capture of a partly restored worktree names its original", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    // What the capture side records for such a capture (the column is the catalog's).
    await db.snapshot.update({ where: { id: h.bFirst }, data: { degradedFromId: h.a[2] } });
    const graph = await repositoryGraph(db, { repositoryId: h.repositoryId });
    expect(graph.edges).toContainEqual(
      expect.objectContaining({ kind: "degraded-from", source: h.a[2], target: h.bFirst }),
    );
  });

  it("draws fork edges: from the checkpoint to each fork's work-context node, then to its first checkpoint", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const a3 = h.a[2]!;
    const user = await makeUser(db, "operator");
    const { forks } = await forkCheckpoint(db, {
      fromCheckpoint: a3,
      count: 2,
      reason: "two ways on from a3",
      actor: { kind: "user", user },
    });
    const [one, two] = forks as [(typeof forks)[number], (typeof forks)[number]];
    const before = await repositoryGraph(db, { repositoryId: h.repositoryId });
    const waiting = before.nodes.filter((n) => n.class === "work-context");
    expect(waiting.map((n) => [n.id, n.workContextId, n.lineageId, n.state]).sort()).toEqual(
      [
        [`work-context:${one.lineageId}`, one.workContextId, one.lineageId, "active"],
        [`work-context:${two.lineageId}`, two.workContextId, two.lineageId, "active"],
      ].sort(),
    );
    expect(waiting[0]).toMatchObject({ agentName: h.agent.name, chainId: `lineage:${waiting[0]!.lineageId}` });
    expect(
      before.edges
        .filter((e) => e.kind === "fork")
        .map((e) => `${e.source} ${e.target}`)
        .sort(),
    ).toEqual([`${a3} work-context:${one.lineageId}`, `${a3} work-context:${two.lineageId}`].sort());
    expect(before.workContexts).toEqual(expect.arrayContaining([one.workContextId, two.workContextId]));

    // The first fork restores a3 and captures: its first checkpoint takes the node's place.
    const plan = await acquireFor(db, h.agent.scope, h.scenario, one.workContextId);
    expect(plan.snapshot?.id).toBe(a3);
    await reportRestore(db, { agent: h.agent.scope, restoreId: plan.restoreId, outcome: "restored" });
    const f1 = await appendCheckpoint(db, {
      agent: h.agent.scope,
      key: lineageKeyOf(h.scenario, one.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("fork-one"), branch: "try-1" }),
    });
    const after = await repositoryGraph(db, { repositoryId: h.repositoryId });
    expect(after.nodes.map((n) => n.id)).not.toContain(`work-context:${one.lineageId}`);
    expect(after.nodes.map((n) => n.id)).toContain(`work-context:${two.lineageId}`);
    // One edge into f1: the fork (not also a seeded edge from its origin or its restore).
    expect(after.edges.filter((e) => e.target === f1.snapshot.id)).toEqual([
      { kind: "fork", source: a3, target: f1.snapshot.id },
    ]);

    // Filtered to the fork's work context, a3 stays as the context it began from.
    const onlyFork = filterGraph(after, { workContextId: two.workContextId, states: ["ready"] });
    expect(onlyFork.nodes.map((n) => n.id).sort()).toEqual([a3, `work-context:${two.lineageId}`].sort());
    expect([...onlyFork.contextIds]).toEqual([a3]);
    expect(collapseChains(after).nodes).toHaveLength(after.nodes.length);
  });

  it("stays filterable and collapsible for the browser", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const graph = await repositoryGraph(db, { repositoryId: h.repositoryId });
    const onlyB = filterGraph(graph, { workContextId: h.wcB });
    expect(onlyB.nodes.map((n) => n.id).sort()).toEqual([h.b2, h.bFirst].sort());
    expect([...onlyB.contextIds]).toEqual([h.b2]);
    const view = collapseChains(graph);
    expect(view.nodes).toHaveLength(graph.nodes.length);
  });

  it("marks the current baseline of each key, pinned and degraded snapshots, the last restore and retired-but-held ones", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const user = await makeUser(db, "operator");
    // a2: held by a support case, then retired by an operator: retired, but its content is kept.
    await pinSnapshot(db, {
      snapshotId: h.a[1]!,
      agentId: h.agent.scope.agentId,
      pinId: "support:case-7",
      holder: "case 7",
    });
    await retireSnapshot(db, {
      snapshotId: h.a[1]!,
      actor: { type: "user", id: user.userId },
      reason: "leaked a token",
    });

    const graph = await repositoryGraph(db, { repositoryId: h.repositoryId });
    const badges = Object.fromEntries(graph.nodes.map((n) => [n.id, nodeBadges(n)]));
    // b2 is what acquire gives a new task of the key now (findReadyBaseline); b1 was superseded.
    const ready = await findReadyBaseline(db, {
      agentId: h.agent.scope.agentId,
      repositoryId: h.repositoryId,
      backendKind: h.scenario.backendKind,
      baseImage: h.scenario.baseImage,
      canonicalRef: "refs/heads/main",
    });
    expect(ready?.id).toBe(h.b2);
    // (and work context B's restore of it has not reported yet: its pin is in flight).
    expect(badges[h.b2]).toEqual(["current", "pinned"]);
    expect(badges[h.b1]).toEqual([]);
    // a3 was resumed and came back degraded: its partial-restore pin keeps it, and it is the last restore.
    expect(badges[h.a[2]!]).toEqual(["pinned", "degraded", "last-restored"]);
    expect(graph.nodes.find((n) => n.id === h.a[2])).toMatchObject({ pins: 1, degraded: 1 });
    expect(badges[h.a[1]!]).toEqual(["pinned", "retired-held"]);
    expect(badges[h.a[0]!]).toEqual([]);
    expect(graph.nodes.filter((n) => n.lastRestored).map((n) => n.id)).toEqual([h.a[2]]);

    // Once the hold is released, the retired snapshot is only retired.
    await releasePin(db, { agentId: h.agent.scope.agentId, pinId: "support:case-7", snapshotId: h.a[1]! });
    const after = await repositoryGraph(db, { repositoryId: h.repositoryId });
    expect(nodeBadges(after.nodes.find((n) => n.id === h.a[1])!)).toEqual([]);

    const view = await repositoryGraphView(db, { repositoryId: h.repositoryId });
    expect(view.currentBaselines).toEqual([
      expect.objectContaining({ snapshotId: h.b2, agentName: h.agent.name, canonicalRef: "refs/heads/main" }),
    ]);
  });

  it("shows every snapshot of a long history, folded on the server, and expands a chain on demand", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    let head = h.bFirst;
    for (let i = 2; i <= 30; i += 1) {
      const appended = await appendCheckpoint(db, {
        agent: h.agent.scope,
        key: lineageKeyOf(h.scenario, h.wcB),
        observedHeadId: head,
        manifest: manifestOf({ head: oid(`long-${i}`), branch: "task-b" }),
      });
      head = appended.snapshot.id;
    }
    const total = await db.snapshot.count({ where: { repositoryId: h.repositoryId } });
    const drawnOrFolded = (v: RepositoryGraphView) =>
      v.nodes.reduce((sum, n) => sum + (n.kind === "group" ? n.group.count : 1), 0);

    const folded = await repositoryGraphView(db, { repositoryId: h.repositoryId });
    expect(folded.totals.snapshots).toBe(total);
    expect(folded.matched).toBe(total);
    // Nothing is dropped: every snapshot is drawn or inside a group that says how many it holds.
    expect(drawnOrFolded(folded)).toBe(total);
    const groups = folded.nodes.filter((n) => n.kind === "group");
    expect(groups).toHaveLength(1);
    expect(groups[0]).toMatchObject({ group: { chainId: `lineage:${h.lineageB}`, count: 28, filteredOut: false } });
    expect(folded.collapsibleChains).toEqual([`lineage:${h.lineageB}`]);
    expect(folded.nodes.length).toBeLessThan(total);

    const expanded = await repositoryGraphView(db, { repositoryId: h.repositoryId, expand: [`lineage:${h.lineageB}`] });
    expect(expanded.nodes.filter((n) => n.kind === "group")).toHaveLength(0);
    expect(expanded.nodes).toHaveLength(total);
    expect((await repositoryGraphView(db, { repositoryId: h.repositoryId, expandAll: true })).nodes).toHaveLength(
      total,
    );

    // The server keeps the graph it read until the catalog changes: a retirement, a new
    // checkpoint and a released pin each show at once.
    const user = await makeUser(db, "operator");
    await retireSnapshot(db, { snapshotId: h.b1, actor: { type: "user", id: user.userId }, reason: "old" });
    const again = await repositoryGraphView(db, { repositoryId: h.repositoryId });
    const b1 = again.nodes.find((n) => n.id === h.b1);
    expect(b1?.kind === "snapshot" ? b1.node.state : null).toBe("retired");
    await releasePin(db, { agentId: h.agent.scope.agentId, pinId: h.degradedPinId, snapshotId: h.a[2]! });
    const released = await repositoryGraphView(db, { repositoryId: h.repositoryId });
    const a3 = released.nodes.find((n) => n.id === h.a[2]);
    expect(a3?.kind === "snapshot" ? a3.node.pins : null).toBe(0);

    // A search's jump reveals one member on its own and leaves the rest folded.
    const [hit] = await searchRepositoryGraph(db, { repositoryId: h.repositoryId, text: oid("long-15").slice(0, 12) });
    expect(hit).toMatchObject({ matched: "commit" });
    const revealed = await repositoryGraphView(db, { repositoryId: h.repositoryId, reveal: [hit!.id] });
    expect(revealed.nodes.map((n) => n.id)).toContain(hit!.id);
    expect(revealed.nodes.filter((n) => n.kind === "group")).toHaveLength(2);
    expect(drawnOrFolded(revealed)).toBe(total);
  });

  it("a state filter folds the other states instead of dropping them, so every node shown stays connected", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const view = await repositoryGraphView(db, { repositoryId: h.repositoryId, states: ["ready"] });
    const snapshots = view.nodes.filter((n) => n.kind === "snapshot").map((n) => n.id);
    expect(snapshots.sort()).toEqual([h.b2, h.a[2]!, h.bFirst].sort());
    expect(view.matched).toBe(3);
    const filteredOut = view.nodes.filter((n) => n.kind === "group" && n.group.filteredOut);
    // b1 (superseded) and a1..a2 (superseded) fold into two groups.
    expect(filteredOut.map((n) => (n.kind === "group" ? n.group.count : 0)).sort()).toEqual([1, 2]);
    for (const id of snapshots) {
      expect([id, view.edges.some((e) => e.source === id || e.target === id)]).toEqual([id, true]);
    }
  });

  it("focus keeps a node's ancestors and descendants only", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const view = await repositoryGraphView(db, { repositoryId: h.repositoryId, focus: h.bFirst });
    // bFirst began from b2, which superseded b1; a1..a3 are b1's descendants, not bFirst's.
    expect(view.nodes.map((n) => n.id).sort()).toEqual([h.b1, h.b2, h.bFirst].sort());
    expect(view.focus).toBe(h.bFirst);
    const down = await repositoryGraphView(db, { repositoryId: h.repositoryId, focus: h.a[0]! });
    expect(down.nodes.map((n) => n.id).sort()).toEqual([h.b1, ...h.a].sort());
    await expect(repositoryGraphView(db, { repositoryId: h.repositoryId, focus: "no-such-node" })).rejects.toSatisfy(
      (e) => isStrataError(e, "NOT_FOUND"),
    );
  });

  it("searches by snapshot id, commit, branch and work context, newest first", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const search = (text: string) => searchRepositoryGraph(db, { repositoryId: h.repositoryId, text });
    expect((await search(h.a[1]!.slice(0, 8))).map((x) => [x.id, x.matched])).toContainEqual([h.a[1], "id"]);
    expect((await search(h.wcB)).map((x) => [x.id, x.matched])).toEqual([[h.bFirst, "work context"]]);
    const branch = await search("TASK-A");
    expect(branch.map((x) => x.id)).toEqual([...h.a].reverse());
    expect(branch.every((x) => x.matched === "branch")).toBe(true);
    expect(await search("nothing-like-this")).toEqual([]);
  });

  it("refuses a time filter that ends before it starts, and unknown states", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    await expect(repositoryGraphView(db, { repositoryId: h.repositoryId, from: 2000, to: 1000 })).rejects.toSatisfy(
      (e) => isStrataError(e, "INVALID_INPUT"),
    );
    await expect(
      repositoryGraphView(db, { repositoryId: h.repositoryId, states: ["lost" as "ready"] }),
    ).rejects.toThrow();
  });

  it("is NOT_FOUND for an unknown repository", async () => {
    await expect(repositoryGraph(catalog().db, { repositoryId: "no-such-repo" })).rejects.toSatisfy((e) =>
      isStrataError(e, "NOT_FOUND"),
    );
  });
});
