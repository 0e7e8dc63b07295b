// A repository's lineage graph as plain data, and the two views the dashboard takes of it:
// filtered (by agent, work context, state, time) and collapsed (long chains folded into one
// expandable node, so a graph of thousands of snapshots lays out and draws quickly). No I/O:
// the service builds the graph, the browser filters and collapses it.

type GraphEdgeKind = "supersedes" | "chain" | "seeded" | "degraded-from" | "fork";

/**
 * One snapshot of the repository, with what the graph needs to draw and filter it; or, class
 * `work-context`, a forked work context that has no checkpoint yet (its lineage stands for it,
 * so the fork has somewhere to point). Its state is its lineage's.
 */
export interface GraphNode {
  id: string;
  class: "baseline" | "checkpoint" | "work-context";
  state: string;
  agentId: string;
  agentName: string;
  /** The chain the node belongs to: its lineage, or its baseline key. */
  chainId: string;
  /** Order within the chain (a checkpoint's sequence, a baseline's publication order). */
  position: number;
  workContextId: string | null;
  lineageId: string | null;
  /** The lineage's state, for checkpoints. */
  lineageState: string | null;
  canonicalRef: string | null;
  headCommit: string | null;
  alias: string | null;
  /** Milliseconds since the epoch. */
  createdAt: number;
}

/**
 * source → target, older to newer: a baseline superseded by the next of its key; a checkpoint
 * followed by the next of its lineage; a snapshot that seeded a lineage's checkpoint (its
 * recorded origin or a restore attribution); an original snapshot and the capture of the
 * worktree it only partly restored; a checkpoint and the first node of each work context an
 * authorized fork made from it (its first checkpoint, or its work-context node until it has one).
 */
export interface GraphEdge {
  source: string;
  target: string;
  kind: GraphEdgeKind;
}

export interface RepositoryGraph {
  repository: { id: string; name: string; identity: string };
  nodes: GraphNode[];
  edges: GraphEdge[];
  agents: { id: string; name: string }[];
  workContexts: string[];
  /** True when the repository has more snapshots than one graph carries. */
  truncated: boolean;
}

export interface GraphFilter {
  agentId?: string | null;
  workContextId?: string | null;
  /** Keep only these states (all when empty or absent). */
  states?: readonly string[] | null;
  /** Created at or after (ms). */
  from?: number | null;
  /** Created at or before (ms). */
  to?: number | null;
}

export interface FilteredGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** Nodes shown only because they seeded a node that matched (outside an agent or work-context filter). */
  contextIds: Set<string>;
}

function matches(node: GraphNode, filter: GraphFilter): boolean {
  if (filter.agentId && node.agentId !== filter.agentId) return false;
  if (filter.workContextId && node.workContextId !== filter.workContextId) return false;
  // A forked work context without checkpoints has no snapshot state to filter by.
  const stateless = node.class === "work-context";
  if (!stateless && filter.states && filter.states.length > 0 && !filter.states.includes(node.state)) return false;
  if (filter.from != null && node.createdAt < filter.from) return false;
  if (filter.to != null && node.createdAt > filter.to) return false;
  return true;
}

/**
 * The nodes that match every filter, and the edges between them. When the filter narrows to
 * an agent or a work context, the snapshots that seeded what is shown stay visible as context
 * (a work context's chain without the baseline it began from says too little).
 */
export function filterGraph(graph: Pick<RepositoryGraph, "nodes" | "edges">, filter: GraphFilter): FilteredGraph {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const kept = new Set(graph.nodes.filter((n) => matches(n, filter)).map((n) => n.id));
  const contextIds = new Set<string>();
  if (filter.agentId || filter.workContextId) {
    for (const edge of graph.edges) {
      if (
        (edge.kind === "seeded" || edge.kind === "degraded-from" || edge.kind === "fork") &&
        kept.has(edge.target) &&
        !kept.has(edge.source)
      ) {
        if (byId.has(edge.source)) contextIds.add(edge.source);
      }
    }
    for (const id of contextIds) kept.add(id);
  }
  return {
    nodes: graph.nodes.filter((n) => kept.has(n.id)),
    edges: graph.edges.filter((e) => kept.has(e.source) && kept.has(e.target)),
    contextIds,
  };
}

/** A run of consecutive chain members shown as one node. */
export interface CollapsedGroup {
  id: string;
  chainId: string;
  class: GraphNode["class"];
  memberIds: string[];
  /** How many members are in each state. */
  states: Record<string, number>;
  from: number;
  to: number;
  workContextId: string | null;
  agentName: string;
}

type ViewNode =
  { kind: "snapshot"; id: string; node: GraphNode } | { kind: "group"; id: string; group: CollapsedGroup };

interface ViewEdge {
  id: string;
  source: string;
  target: string;
  kind: GraphEdgeKind;
  /** How many graph edges this one stands for. */
  count: number;
}

export interface ViewGraph {
  nodes: ViewNode[];
  edges: ViewEdge[];
  /** Chains that have (or had, before expansion) a collapsed run. */
  collapsibleChains: Set<string>;
}

export interface CollapseOptions {
  /** Chains the person expanded: shown in full. */
  expanded?: ReadonlySet<string>;
  /** Chains of at most this many nodes are never collapsed. */
  maxPlainChain?: number;
  /** Shorter runs than this stay as single nodes. */
  minRun?: number;
  /**
   * Fold every long checkpoint chain whole, into one node (its edges attach to that node), for
   * graphs that are still too large with only the middles folded. Baseline chains keep the
   * baselines that seeded something.
   */
  foldWholeLineages?: boolean;
}

const CHAIN_EDGES: ReadonlySet<GraphEdgeKind> = new Set(["chain", "supersedes"]);
/** States that are a chain's live end; always drawn. */
const LIVE_STATES: ReadonlySet<string> = new Set(["ready", "capturing"]);

/**
 * Folds the middle of long chains. A node stays drawn when it is an end of its chain, a live
 * head, or joined to anything outside its chain (it seeded a lineage, or was seeded); every
 * run of at least `minRun` other consecutive members becomes one group node.
 */
export function collapseChains(
  graph: Pick<FilteredGraph, "nodes" | "edges">,
  options: CollapseOptions = {},
): ViewGraph {
  const expanded = options.expanded ?? new Set<string>();
  const maxPlain = options.maxPlainChain ?? 6;
  const minRun = Math.max(2, options.minRun ?? 3);

  const chains = new Map<string, GraphNode[]>();
  for (const node of graph.nodes) {
    const chain = chains.get(node.chainId);
    if (chain) chain.push(node);
    else chains.set(node.chainId, [node]);
  }
  const chainOf = new Map(graph.nodes.map((n) => [n.id, n.chainId]));
  const anchored = new Set<string>();
  for (const edge of graph.edges) {
    if (!CHAIN_EDGES.has(edge.kind) || chainOf.get(edge.source) !== chainOf.get(edge.target)) {
      anchored.add(edge.source);
      anchored.add(edge.target);
    }
  }

  const viewOf = new Map<string, string>();
  const nodes: ViewNode[] = [];
  const collapsibleChains = new Set<string>();
  for (const [chainId, members] of chains) {
    members.sort((a, b) => a.position - b.position || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
    const whole = options.foldWholeLineages === true && members[0]?.class === "checkpoint";
    const keep = (n: GraphNode, i: number) =>
      !whole && (i === 0 || i === members.length - 1 || LIVE_STATES.has(n.state) || anchored.has(n.id));
    const runs: GraphNode[][] = [];
    if (members.length > maxPlain) {
      let run: GraphNode[] = [];
      members.forEach((n, i) => {
        if (keep(n, i)) {
          if (run.length >= minRun) runs.push(run);
          run = [];
        } else run.push(n);
      });
      if (run.length >= minRun) runs.push(run);
    }
    if (runs.length > 0) collapsibleChains.add(chainId);
    const folded = new Map<string, GraphNode[]>();
    if (!expanded.has(chainId)) for (const run of runs) folded.set(run[0]!.id, run);
    const inRun = new Set<string>();
    for (const run of folded.values()) for (const n of run) inRun.add(n.id);
    for (const n of members) {
      const run = folded.get(n.id);
      if (run) {
        const groupId = `group:${chainId}:${n.id}`;
        const states: Record<string, number> = {};
        for (const m of run) {
          states[m.state] = (states[m.state] ?? 0) + 1;
          viewOf.set(m.id, groupId);
        }
        nodes.push({
          kind: "group",
          id: groupId,
          group: {
            id: groupId,
            chainId,
            class: n.class,
            memberIds: run.map((m) => m.id),
            states,
            from: Math.min(...run.map((m) => m.createdAt)),
            to: Math.max(...run.map((m) => m.createdAt)),
            workContextId: n.workContextId,
            agentName: n.agentName,
          },
        });
      } else if (!inRun.has(n.id)) {
        viewOf.set(n.id, n.id);
        nodes.push({ kind: "snapshot", id: n.id, node: n });
      }
    }
  }

  const edges = new Map<string, ViewEdge>();
  for (const edge of graph.edges) {
    const source = viewOf.get(edge.source);
    const target = viewOf.get(edge.target);
    if (!source || !target || source === target) continue;
    const key = `${edge.kind}:${source}->${target}`;
    const existing = edges.get(key);
    if (existing) existing.count += 1;
    else edges.set(key, { id: key, source, target, kind: edge.kind, count: 1 });
  }
  return { nodes, edges: [...edges.values()], collapsibleChains };
}
