// A repository's lineage graph as plain data, and the views the dashboard takes of it:
// filtered (by agent, work context, state, time), focused (one node's ancestors and
// descendants), searched, and folded (long chains as one expandable node, so a graph of tens of
// thousands of snapshots reaches the browser as a few hundred nodes). No I/O: the service
// builds the graph and its view on the server; the browser only draws the view.

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
  branch: string | null;
  alias: string | null;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /**
   * The baseline a new task for this node's baseline key gets now (the acquire's rule: the one
   * ready baseline of the key). Never true for a checkpoint.
   */
  current: boolean;
  /** Active pins on it (restores in flight, partial-restore and live holds, support pins). */
  pins: number;
  /** Degraded restores recorded against it (discarded ones included). */
  degraded: number;
  /** When a restore was last seeded from it (ms), if ever. */
  lastRestoredAt: number | null;
  /** The snapshot of this repository a restore was most recently seeded from. */
  lastRestored: boolean;
  /**
   * What it follows: the previous checkpoint of its lineage or baseline of its key, else the
   * snapshot it was seeded or forked from (what "diff with predecessor" compares it with).
   */
  previousId: string | null;
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
}

/** A badge a node carries in the drawing and the legend, in the order they are shown. */
export type NodeBadge = "current" | "pinned" | "degraded" | "last-restored" | "retired-held";

/** What a node says about itself beyond its state: the operator's questions, answered on the node. */
export function nodeBadges(node: Pick<GraphNode, "current" | "pins" | "degraded" | "lastRestored" | "state">) {
  const badges: NodeBadge[] = [];
  if (node.current) badges.push("current");
  if (node.pins > 0) badges.push("pinned");
  if (node.degraded > 0) badges.push("degraded");
  if (node.lastRestored) badges.push("last-restored");
  // Retired, but an active pin still holds its content: GC cannot reclaim it yet.
  if (node.state === "retired" && node.pins > 0) badges.push("retired-held");
  return badges;
}

export interface GraphFilter {
  agentId?: string | null;
  workContextId?: string | null;
  /** Keep only these states (all when empty or absent); the rest fold into "filtered out" groups. */
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
  /**
   * Nodes outside the state filter. They are not dropped: they fold into groups, so the edges
   * between the nodes that match still run through them (a ready head still shows the baseline
   * chain it began from, instead of standing alone).
   */
  dimmedIds: Set<string>;
}

function matches(node: GraphNode, filter: GraphFilter): boolean {
  if (filter.agentId && node.agentId !== filter.agentId) return false;
  if (filter.workContextId && node.workContextId !== filter.workContextId) return false;
  if (filter.from != null && node.createdAt < filter.from) return false;
  if (filter.to != null && node.createdAt > filter.to) return false;
  return true;
}

function matchesState(node: GraphNode, states: readonly string[] | null | undefined): boolean {
  // A forked work context without checkpoints has no snapshot state to filter by.
  return node.class === "work-context" || !states || states.length === 0 || states.includes(node.state);
}

/**
 * The nodes that match the agent, work context and time filters, and the edges between them.
 * When the filter narrows to an agent or a work context, the snapshots that seeded what is
 * shown stay visible as context (a work context's chain without the baseline it began from
 * says too little). The state filter marks the others dimmed.
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
  const nodes = graph.nodes.filter((n) => kept.has(n.id));
  return {
    nodes,
    edges: graph.edges.filter((e) => kept.has(e.source) && kept.has(e.target)),
    contextIds,
    dimmedIds: new Set(nodes.filter((n) => !matchesState(n, filter.states)).map((n) => n.id)),
  };
}

/** The node, everything it descends from and everything that descends from it, along every edge. */
export function focusGraph<G extends Pick<RepositoryGraph, "nodes" | "edges">>(graph: G, id: string): G {
  const out = new Map<string, string[]>();
  const into = new Map<string, string[]>();
  for (const e of graph.edges) {
    (out.get(e.source) ?? out.set(e.source, []).get(e.source)!).push(e.target);
    (into.get(e.target) ?? into.set(e.target, []).get(e.target)!).push(e.source);
  }
  const kept = new Set([id]);
  for (const links of [out, into]) {
    const stack = [id];
    while (stack.length > 0) {
      for (const next of links.get(stack.pop()!) ?? []) {
        if (!kept.has(next)) {
          kept.add(next);
          stack.push(next);
        }
      }
    }
  }
  return {
    ...graph,
    nodes: graph.nodes.filter((n) => kept.has(n.id)),
    edges: graph.edges.filter((e) => kept.has(e.source) && kept.has(e.target)),
  };
}

/** How a node is named in the drawing, the detail and the search's hits. */
export function graphNodeLabel(
  node: Pick<GraphNode, "class" | "workContextId" | "alias" | "canonicalRef" | "headCommit" | "position">,
): string {
  if (node.class === "work-context") return `${node.workContextId ?? "work"} (forked)`;
  if (node.alias) return node.alias;
  if (node.class === "baseline") {
    const ref = (node.canonicalRef ?? "").replace(/^refs\/heads\//, "");
    return `${ref || "baseline"} @ ${node.headCommit?.slice(0, 7) ?? "?"}`;
  }
  return `${node.workContextId ?? "work"} #${node.position}`;
}

/** A hit of the graph's search: which node, and what of it matched. */
export interface GraphSearchHit {
  id: string;
  label: string;
  class: GraphNode["class"];
  state: string;
  matched: "id" | "alias" | "commit" | "branch" | "ref" | "work context";
  text: string;
  createdAt: number;
}

/**
 * Nodes whose snapshot id, alias or HEAD commit starts with the text, or whose branch, baseline
 * ref or work context contains it (case-insensitive); the newest first, at most `limit`.
 */
export function searchGraph(nodes: readonly GraphNode[], text: string, limit = 20): GraphSearchHit[] {
  const q = text.trim().toLowerCase();
  if (q.length === 0) return [];
  const hits: GraphSearchHit[] = [];
  for (let i = nodes.length - 1; i >= 0; i -= 1) {
    const n = nodes[i]!;
    const hit = (matched: GraphSearchHit["matched"], value: string) =>
      hits.push({
        id: n.id,
        label: graphNodeLabel(n),
        class: n.class,
        state: n.state,
        matched,
        text: value,
        createdAt: n.createdAt,
      });
    const prefix = (v: string | null) => v !== null && v.toLowerCase().startsWith(q);
    const contains = (v: string | null) => v !== null && v.toLowerCase().includes(q);
    if (n.class !== "work-context" && prefix(n.id)) hit("id", n.id);
    else if (prefix(n.alias)) hit("alias", n.alias!);
    else if (prefix(n.headCommit)) hit("commit", n.headCommit!);
    else if (contains(n.branch)) hit("branch", n.branch!);
    else if (contains(n.canonicalRef)) hit("ref", n.canonicalRef!);
    else if (contains(n.workContextId)) hit("work context", n.workContextId!);
    else continue;
    if (hits.length >= limit) break;
  }
  return hits.sort((a, b) => b.createdAt - a.createdAt);
}

/** Badge counts over the members of a folded group. */
type GroupMarks = Record<NodeBadge, number>;

/** A run of consecutive chain members shown as one node. */
export interface CollapsedGroup {
  id: string;
  chainId: string;
  class: GraphNode["class"];
  count: number;
  /** The oldest and newest member. */
  firstId: string;
  lastId: string;
  /** How many members are in each state. */
  states: Record<string, number>;
  /** How many members carry each badge (a pinned checkpoint folded away still says so). */
  marks: GroupMarks;
  from: number;
  to: number;
  workContextId: string | null;
  agentId: string;
  agentName: string;
  /** Members outside the state filter, folded so the edges still run through them. */
  filteredOut: boolean;
}

export type ViewNode =
  { kind: "snapshot"; id: string; node: GraphNode } | { kind: "group"; id: string; group: CollapsedGroup };

export interface ViewEdge {
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
  /** Chains that have (or had, before expansion) a folded run. */
  collapsibleChains: Set<string>;
}

export interface CollapseOptions {
  /** Chains the person expanded: shown in full (except what the state filter folds). */
  expanded?: ReadonlySet<string>;
  /** Every chain expanded. */
  expandAll?: boolean;
  /** Chains of at most this many nodes are never collapsed. */
  maxPlainChain?: number;
  /** Shorter runs than this stay as single nodes. */
  minRun?: number;
  /** Nodes outside the state filter: folded in runs of any length, even in an expanded chain. */
  dimmed?: ReadonlySet<string>;
  /** Nodes drawn on their own whatever else holds (the selection, a search's jump). */
  reveal?: ReadonlySet<string>;
  /**
   * Fold every long checkpoint chain whole, into one node (its edges attach to that node), for
   * graphs that are still too large with only the middles folded. Baseline chains keep the
   * baselines that seeded something; nodes with a badge stay drawn.
   */
  foldWholeLineages?: boolean;
}

const CHAIN_EDGES: ReadonlySet<GraphEdgeKind> = new Set(["chain", "supersedes"]);
/** States that are a chain's live end; always drawn. */
const LIVE_STATES: ReadonlySet<string> = new Set(["ready", "capturing"]);
const BADGES: readonly NodeBadge[] = ["current", "pinned", "degraded", "last-restored", "retired-held"];

/**
 * Folds the middle of long chains. A node stays drawn when it is an end of its chain, a live
 * head, carries a badge, or is joined to anything outside its chain (it seeded a lineage, or
 * was seeded); every run of at least `minRun` other consecutive members becomes one group node.
 */
export function collapseChains(
  graph: Pick<FilteredGraph, "nodes" | "edges">,
  options: CollapseOptions = {},
): ViewGraph {
  const expanded = options.expanded ?? new Set<string>();
  const maxPlain = options.maxPlainChain ?? 6;
  const minRun = Math.max(2, options.minRun ?? 3);
  const dimmed = options.dimmed ?? new Set<string>();
  const reveal = options.reveal ?? new Set<string>();

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
    const open = options.expandAll === true || expanded.has(chainId);
    const long = members.length > maxPlain;
    // Each member is drawn alone ("keep"), foldable ("fold"), or outside the state filter ("dim").
    const kindOf = (n: GraphNode, i: number): "keep" | "fold" | "dim" => {
      if (reveal.has(n.id)) return "keep";
      if (dimmed.has(n.id)) return "dim";
      if (!long || open) return "keep";
      if (nodeBadges(n).length > 0) return "keep";
      if (whole) return "fold";
      return i === 0 || i === members.length - 1 || LIVE_STATES.has(n.state) || anchored.has(n.id) ? "keep" : "fold";
    };
    const runs: { kind: "fold" | "dim"; members: GraphNode[] }[] = [];
    let run: { kind: "fold" | "dim"; members: GraphNode[] } | null = null;
    const close = () => {
      if (run && (run.kind === "dim" || run.members.length >= (whole ? 2 : minRun))) runs.push(run);
      run = null;
    };
    members.forEach((n, i) => {
      const kind = kindOf(n, i);
      if (kind === "keep") return close();
      if (run?.kind !== kind) close();
      run ??= { kind, members: [] };
      run.members.push(n);
    });
    close();
    if (long) {
      // Collapsible whenever it would fold without the expansion.
      if (open || runs.some((r) => r.kind === "fold")) collapsibleChains.add(chainId);
    }
    const folded = new Map<string, { kind: "fold" | "dim"; members: GraphNode[] }>();
    for (const r of runs) folded.set(r.members[0]!.id, r);
    const inRun = new Set<string>();
    for (const r of folded.values()) for (const n of r.members) inRun.add(n.id);
    for (const n of members) {
      const r = folded.get(n.id);
      if (r) {
        const groupId = `group:${chainId}:${n.id}`;
        const states: Record<string, number> = {};
        const marks = Object.fromEntries(BADGES.map((b) => [b, 0])) as GroupMarks;
        let from = Infinity;
        let to = -Infinity;
        for (const m of r.members) {
          states[m.state] = (states[m.state] ?? 0) + 1;
          for (const b of nodeBadges(m)) marks[b] += 1;
          from = Math.min(from, m.createdAt);
          to = Math.max(to, m.createdAt);
          viewOf.set(m.id, groupId);
        }
        nodes.push({
          kind: "group",
          id: groupId,
          group: {
            id: groupId,
            chainId,
            class: n.class,
            count: r.members.length,
            firstId: n.id,
            lastId: r.members.at(-1)!.id,
            states,
            marks,
            from,
            to,
            workContextId: n.workContextId,
            agentId: n.agentId,
            agentName: n.agentName,
            filteredOut: r.kind === "dim",
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

/**
 * The view of a graph that the browser can draw quickly: chain middles folded, and when that
 * still leaves more than `budget` nodes, long checkpoint chains folded whole (level of detail;
 * each expands on demand). Nothing is ever dropped: every snapshot is a node or in a group.
 */
export function foldForBudget(
  graph: Pick<FilteredGraph, "nodes" | "edges">,
  options: Omit<CollapseOptions, "foldWholeLineages">,
  budget: number,
): ViewGraph & { wholeLineages: boolean } {
  const folded = collapseChains(graph, options);
  if (folded.nodes.length <= budget || options.expandAll) return { ...folded, wholeLineages: false };
  const whole = collapseChains(graph, { ...options, foldWholeLineages: true });
  return {
    ...whole,
    collapsibleChains: new Set([...folded.collapsibleChains, ...whole.collapsibleChains]),
    wholeLineages: true,
  };
}
