import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { collapseChains, filterGraph } from "../domain/lineage-graph.ts";
import { appendCheckpoint } from "../lineage/checkpoints.ts";
import { repositoryGraph } from "./lineage-graph.ts";
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
    expect(graph.truncated).toBe(false);
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

  it("keeps the newest snapshots when a repository has more than the limit", async () => {
    const db = catalog().db;
    const h = await buildHistory(db);
    const graph = await repositoryGraph(db, { repositoryId: h.repositoryId, limit: 3 });
    expect(graph.truncated).toBe(true);
    expect(graph.nodes).toHaveLength(3);
  });

  it("is NOT_FOUND for an unknown repository", async () => {
    await expect(repositoryGraph(catalog().db, { repositoryId: "no-such-repo" })).rejects.toSatisfy((e) =>
      isStrataError(e, "NOT_FOUND"),
    );
  });
});
