import { describe, expect, it } from "vitest";
import {
  collapseChains,
  filterGraph,
  focusGraph,
  nodeBadges,
  searchGraph,
  type GraphEdge,
  type GraphNode,
} from "./lineage-graph.ts";

function node(id: string, over: Partial<GraphNode> = {}): GraphNode {
  return {
    id,
    class: "checkpoint",
    state: "superseded",
    agentId: "a1",
    agentName: "agent-1",
    chainId: "lineage:L1",
    position: 0,
    workContextId: "wc-1",
    lineageId: "L1",
    lineageState: "active",
    canonicalRef: null,
    headCommit: null,
    branch: null,
    alias: null,
    createdAt: 0,
    current: false,
    pins: 0,
    degraded: 0,
    lastRestoredAt: null,
    lastRestored: false,
    previousId: null,
    ...over,
  };
}

function edge(source: string, target: string, kind: GraphEdge["kind"]): GraphEdge {
  return { source, target, kind };
}

/** A baseline B (ready) seeding a lineage of `length` checkpoints c1..cN (cN ready). */
function lineage(length: number) {
  const nodes = [
    node("B", { class: "baseline", state: "ready", chainId: "baseline:k", workContextId: null, lineageId: null }),
  ];
  const edges: GraphEdge[] = [edge("B", "c1", "seeded")];
  for (let i = 1; i <= length; i += 1) {
    nodes.push(node(`c${i}`, { position: i, createdAt: i * 1000, state: i === length ? "ready" : "superseded" }));
    if (i > 1) edges.push(edge(`c${i - 1}`, `c${i}`, "chain"));
  }
  return { nodes, edges };
}

describe("collapseChains", () => {
  it("folds the middle of a long chain into one group and keeps its ends and anchors", () => {
    const view = collapseChains(lineage(20));
    const ids = view.nodes.map((n) => n.id);
    expect(ids).toContain("B");
    expect(ids).toContain("c1");
    expect(ids).toContain("c20");
    const groups = view.nodes.filter((n) => n.kind === "group");
    expect(groups).toHaveLength(1);
    const group = groups[0]!;
    if (group.kind !== "group") throw new Error("expected a group");
    expect(group.group).toMatchObject({ count: 18, firstId: "c2", lastId: "c19" });
    expect(group.group.states).toEqual({ superseded: 18 });
    // c1 -> group -> c20, and the seeded edge is kept.
    expect(view.edges.map((e) => `${e.source}>${e.target}`).sort()).toEqual(
      ["B>c1", `c1>${group.id}`, `${group.id}>c20`].sort(),
    );
    expect(view.edges.find((e) => e.source === group.id)?.count).toBe(1);
    expect(view.collapsibleChains.has("lineage:L1")).toBe(true);
  });

  it("shows an expanded chain in full", () => {
    const view = collapseChains(lineage(20), { expanded: new Set(["lineage:L1"]) });
    expect(view.nodes.filter((n) => n.kind === "group")).toHaveLength(0);
    expect(view.nodes).toHaveLength(21);
    expect(view.edges).toHaveLength(20);
    expect(view.collapsibleChains.has("lineage:L1")).toBe(true);
  });

  it("leaves short chains alone", () => {
    const view = collapseChains(lineage(5));
    expect(view.nodes).toHaveLength(6);
    expect(view.collapsibleChains.size).toBe(0);
  });

  it("keeps a checkpoint that seeded another lineage visible, splitting the run around it", () => {
    const graph = lineage(20);
    graph.nodes.push(node("x1", { chainId: "lineage:L2", lineageId: "L2", workContextId: "wc-2", position: 1 }));
    graph.edges.push(edge("c10", "x1", "seeded"));
    const view = collapseChains(graph);
    const ids = view.nodes.map((n) => n.id);
    expect(ids).toContain("c10");
    expect(view.nodes.filter((n) => n.kind === "group")).toHaveLength(2);
    expect(view.edges.some((e) => e.source === "c10" && e.target === "x1" && e.kind === "seeded")).toBe(true);
  });

  it("collapses 5,000 nodes into a few hundred", () => {
    const nodes: GraphNode[] = [];
    const edges: GraphEdge[] = [];
    for (let l = 0; l < 125; l += 1) {
      for (let i = 1; i <= 40; i += 1) {
        nodes.push(node(`l${l}c${i}`, { chainId: `lineage:${l}`, lineageId: `${l}`, position: i }));
        if (i > 1) edges.push(edge(`l${l}c${i - 1}`, `l${l}c${i}`, "chain"));
      }
    }
    const view = collapseChains({ nodes, edges });
    expect(view.nodes.length).toBe(125 * 3);
    // Still too many to lay out quickly: fold each long work context whole.
    expect(collapseChains({ nodes, edges }, { foldWholeLineages: true }).nodes.length).toBe(125);
  });

  it("keeps a pinned or degraded checkpoint drawn, and counts the badges of what it folds", () => {
    const graph = lineage(20);
    graph.nodes[8] = { ...graph.nodes[8]!, pins: 1, degraded: 1 };
    graph.nodes[12] = { ...graph.nodes[12]!, state: "retired", pins: 2 };
    const view = collapseChains(graph);
    expect(view.nodes.map((n) => n.id)).toEqual(expect.arrayContaining(["c8", "c12"]));
    const whole = collapseChains(graph, { foldWholeLineages: true });
    expect(whole.nodes.map((n) => n.id)).toEqual(expect.arrayContaining(["c8", "c12"]));
    expect(nodeBadges(graph.nodes[12]!)).toEqual(["pinned", "retired-held"]);
    // Outside the state filter, c8 folds away; its group still says what it holds.
    const groups = collapseChains(graph, { dimmed: new Set(["c8"]) }).nodes.flatMap((n) =>
      n.kind === "group" ? [n.group] : [],
    );
    expect(groups.find((g) => g.filteredOut)).toMatchObject({
      count: 1,
      firstId: "c8",
      marks: { pinned: 1, degraded: 1 },
    });
  });

  it("reveals a node inside a folded run and folds the dimmed ones even in an expanded chain", () => {
    const graph = lineage(20);
    const revealed = collapseChains(graph, { reveal: new Set(["c10"]) });
    expect(revealed.nodes.map((n) => n.id)).toContain("c10");
    expect(revealed.nodes.filter((n) => n.kind === "group")).toHaveLength(2);
    const dimmed = new Set(["c3", "c4", "c5"]);
    const view = collapseChains(graph, { expanded: new Set(["lineage:L1"]), dimmed });
    const groups = view.nodes.flatMap((n) => (n.kind === "group" ? [n.group] : []));
    expect(groups).toEqual([expect.objectContaining({ count: 3, filteredOut: true, firstId: "c3", lastId: "c5" })]);
    expect(view.edges.map((e) => `${e.source}>${e.target}`)).toEqual(
      expect.arrayContaining([`c2>${groups[0]!.id}`, `${groups[0]!.id}>c6`]),
    );
  });

  it("folding whole lineages keeps their edges on the folded node and leaves baselines that seeded them", () => {
    const graph = lineage(20);
    graph.nodes.push(
      node("B0", { class: "baseline", state: "superseded", chainId: "baseline:k", position: -1, workContextId: null }),
    );
    graph.edges.push(edge("B0", "B", "supersedes"));
    const view = collapseChains(graph, { foldWholeLineages: true });
    const group = view.nodes.find((n) => n.kind === "group");
    expect(view.nodes.map((n) => n.id).sort()).toEqual(["B", "B0", group!.id].sort());
    expect(view.edges.map((e) => `${e.kind} ${e.source} ${e.target}`).sort()).toEqual(
      [`seeded B ${group!.id}`, "supersedes B0 B"].sort(),
    );
  });
});

describe("filterGraph", () => {
  const graph = lineage(4);
  graph.nodes.push(
    node("o1", { agentId: "a2", agentName: "agent-2", chainId: "lineage:L9", lineageId: "L9", workContextId: "wc-9" }),
  );

  it("filters by work context and keeps the snapshot that seeded it as context", () => {
    const out = filterGraph(graph, { workContextId: "wc-1" });
    expect(out.nodes.map((n) => n.id).sort()).toEqual(["B", "c1", "c2", "c3", "c4"]);
    expect([...out.contextIds]).toEqual(["B"]);
    expect(out.edges).toHaveLength(4);
  });

  it("filters by agent, state and time", () => {
    expect(filterGraph(graph, { agentId: "a2" }).nodes.map((n) => n.id)).toEqual(["o1"]);
    // Other states are kept, dimmed, so the chain still joins what matched.
    const ready = filterGraph(graph, { states: ["ready"] });
    expect([...ready.dimmedIds].sort()).toEqual(["c1", "c2", "c3", "o1"]);
    expect(ready.edges).toHaveLength(4);
    const timed = filterGraph(graph, { from: 2000, to: 3000 });
    expect(timed.nodes.map((n) => n.id)).toEqual(["c2", "c3"]);
    expect(timed.edges).toEqual([{ kind: "chain", source: "c2", target: "c3" }]);
  });
});

describe("focusGraph and searchGraph", () => {
  it("focus keeps ancestors and descendants, not siblings", () => {
    const graph = lineage(3);
    graph.nodes.push(node("x1", { chainId: "lineage:L2", lineageId: "L2", workContextId: "wc-2", branch: "fix/x" }));
    graph.edges.push(edge("B", "x1", "seeded"));
    expect(focusGraph(graph, "c2").nodes.map((n) => n.id)).toEqual(["B", "c1", "c2", "c3"]);
    expect(focusGraph(graph, "B").nodes).toHaveLength(5);
    expect(searchGraph(graph.nodes, "FIX/").map((h) => [h.id, h.matched])).toEqual([["x1", "branch"]]);
    // c1..c3 by id, x1 by its work context (wc-2).
    expect(searchGraph(graph.nodes, "c")).toHaveLength(4);
    expect(searchGraph(graph.nodes, "  ")).toEqual([]);
  });
});
