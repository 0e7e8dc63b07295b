// The lineage graph of one repository, for the dashboard: every snapshot as a node; baselines
// chained by supersession within their key, checkpoints by their lineage's predecessor links;
// "seeded from" edges from lineage origins and restore attributions; "degraded from" edges
// from captures of partly restored worktrees; "fork" edges from a checkpoint to each work
// context an authorized fork made from it (a work-context node until it has a checkpoint). A
// handful of queries whatever the size.
// The lineage graph of one repository, for the dashboard: every snapshot as a node (no cap:
// what the browser is sent is folded here, on the server); baselines chained by supersession
// within their key, checkpoints by their lineage's predecessor links; "seeded from" edges from
// lineage origins and restore attributions; "degraded from" edges from captures of partly
// restored worktrees; "fork" edges from a checkpoint to each work context an authorized fork
// made from it (a work-context node until it has a checkpoint). Each node carries its badges:
// the current baseline of its key (the acquire's rule), active pins, degraded restores, the
// last restore. A handful of queries whatever the size.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import {
  graphActivePinCounts,
  graphFingerprint,
  graphRestoreRows,
  graphSnapshotRows,
} from "../db/statements/lineage-graph.ts";
import { StrataError } from "../domain/errors.ts";
import {
  filterGraph,
  focusGraph,
  foldForBudget,
  searchGraph,
  type GraphEdge,
  type GraphNode,
  type GraphSearchHit,
  type RepositoryGraph,
  type ViewEdge,
  type ViewNode,
} from "../domain/lineage-graph.ts";
import { entityIdSchema, workContextIdSchema } from "../domain/snapshot-keys.ts";
import { isCurrentBaseline } from "../lineage/baselines.ts";

const repositoryGraphInput = z.strictObject({ repositoryId: entityIdSchema });
export type RepositoryGraphInput = z.input<typeof repositoryGraphInput>;

/** Restores whose snapshot really seeded the workspace (a failed one handed over to the next rung). */
const SEEDING_OUTCOMES = ["pending", "restored", "degraded"];

function baselineChainId(s: { agentId: string; backendKind: string; baseImage: string; canonicalRef: string | null }) {
  return `baseline:${s.agentId}:${s.backendKind}:${s.baseImage}:${s.canonicalRef ?? ""}`;
}

/** The first element whose createdAt is at or after `at`, by binary search over a sorted list. */
function firstAtOrAfter<T extends { createdAt: number }>(sorted: readonly T[], at: number): T | undefined {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]!.createdAt < at) lo = mid + 1;
    else hi = mid;
  }
  return sorted[lo];
}

/**
 * The graphs read last, by repository, with the fingerprint they were read at: a repository of
 * 50,000 snapshots takes seconds to read and build, and is shown again unchanged far more often
 * than it changes. Pins are not in it (they expire with time, without a write): they are read
 * on every request.
 */
const structures = new Map<string, { fingerprint: string; graph: RepositoryGraph }>();
const STRUCTURES_KEPT = 8;

/** The whole graph of a repository, every snapshot in it, with its active pins now. */
export async function repositoryGraph(db: Db, input: RepositoryGraphInput): Promise<RepositoryGraph> {
  const { graph, pinCounts } = await readGraph(db, input);
  return withPins(graph, pinCounts);
}

function withPins(graph: RepositoryGraph, pinCounts: ReadonlyMap<string, number>): RepositoryGraph {
  return { ...graph, nodes: graph.nodes.map((n) => (pinCounts.has(n.id) ? { ...n, pins: pinCounts.get(n.id)! } : n)) };
}

async function readGraph(db: Db, input: RepositoryGraphInput) {
  const opts = repositoryGraphInput.parse(input);
  const repository = await db.repository.findUnique({
    where: { id: opts.repositoryId },
    select: { id: true, name: true, identity: true },
  });
  if (!repository) throw new StrataError("NOT_FOUND", `Repository ${opts.repositoryId} was not found.`);
  const [fingerprint, pinCounts] = await Promise.all([
    graphFingerprint(db, repository.id),
    graphActivePinCounts(db, repository.id, new Date()),
  ]);
  const kept = structures.get(repository.id);
  if (kept?.fingerprint === fingerprint) return { graph: kept.graph, pinCounts, fingerprint };
  const graph = await buildGraph(db, repository);
  structures.delete(repository.id);
  structures.set(repository.id, { fingerprint, graph });
  if (structures.size > STRUCTURES_KEPT) structures.delete(structures.keys().next().value!);
  return { graph, pinCounts, fingerprint };
}

/** Reads and builds the graph, every node with no pins (withPins adds them). */
async function buildGraph(db: Db, repository: RepositoryGraph["repository"]): Promise<RepositoryGraph> {
  const [rows, lineages, restoreRows] = await Promise.all([
    graphSnapshotRows(db, repository.id),
    db.lineage.findMany({
      where: { repositoryId: repository.id },
      select: {
        id: true,
        state: true,
        originSnapshotId: true,
        forkedFromId: true,
        agentId: true,
        workContextId: true,
        createdAt: true,
        _count: { select: { checkpoints: true } },
      },
    }),
    graphRestoreRows(db, repository.id),
  ]);
  const restores = restoreRows.filter((r) => r.lineageId !== null);
  const degradedCount = new Map<string, number>();
  for (const r of restoreRows) {
    if (r.outcome === "degraded") degradedCount.set(r.snapshotId, (degradedCount.get(r.snapshotId) ?? 0) + 1);
  }
  let lastRestoredId: string | null = null;
  let lastRestoredAt = -Infinity;
  for (const r of rows) {
    if (r.lastRestoredAt !== null && r.lastRestoredAt > lastRestoredAt) {
      lastRestoredAt = r.lastRestoredAt;
      lastRestoredId = r.id;
    }
  }
  // Forks that have not captured anything yet are drawn as their work context.
  const waitingForks = lineages.filter((l) => l.forkedFromId !== null && l._count.checkpoints === 0);
  const agents = await db.agent.findMany({
    where: { id: { in: [...new Set([...rows.map((r) => r.agentId), ...waitingForks.map((l) => l.agentId)])] } },
    select: { id: true, name: true },
    orderBy: { name: "asc" },
  });
  const agentName = new Map(agents.map((a) => [a.id, a.name]));
  const lineageById = new Map(lineages.map((l) => [l.id, l]));

  // Baselines are numbered within their key in publication order.
  const baselineCount = new Map<string, number>();
  const nodes: GraphNode[] = rows.map((r) => {
    const isBaseline = r.class === "baseline";
    const chainId = isBaseline ? baselineChainId(r) : `lineage:${r.lineageId ?? r.id}`;
    let position = r.sequence ?? 0;
    if (isBaseline) {
      position = (baselineCount.get(chainId) ?? 0) + 1;
      baselineCount.set(chainId, position);
    }
    return {
      id: r.id,
      class: isBaseline ? "baseline" : "checkpoint",
      state: r.state,
      agentId: r.agentId,
      agentName: agentName.get(r.agentId) ?? r.agentId,
      chainId,
      position,
      workContextId: r.workContextId,
      lineageId: r.lineageId,
      lineageState: r.lineageId ? (lineageById.get(r.lineageId)?.state ?? null) : null,
      canonicalRef: r.canonicalRef,
      headCommit: r.headCommit,
      branch: r.branch,
      alias: r.alias,
      createdAt: r.createdAt,
      current: isCurrentBaseline(r),
      pins: 0,
      degraded: degradedCount.get(r.id) ?? 0,
      lastRestoredAt: r.lastRestoredAt,
      lastRestored: r.id === lastRestoredId,
      previousId: null,
    };
  });
  const forkNodeOf = new Map<string, string>();
  for (const lineage of waitingForks) {
    const id = `work-context:${lineage.id}`;
    forkNodeOf.set(lineage.id, id);
    nodes.push({
      id,
      class: "work-context",
      state: lineage.state,
      agentId: lineage.agentId,
      agentName: agentName.get(lineage.agentId) ?? lineage.agentId,
      chainId: `lineage:${lineage.id}`,
      position: 0,
      workContextId: lineage.workContextId,
      lineageId: lineage.id,
      lineageState: lineage.state,
      canonicalRef: null,
      headCommit: null,
      branch: null,
      alias: null,
      createdAt: lineage.createdAt.getTime(),
      current: false,
      pins: 0,
      degraded: 0,
      lastRestoredAt: null,
      lastRestored: false,
      previousId: null,
    });
  }
  const present = new Set(nodes.map((n) => n.id));
  const edges = new Map<string, GraphEdge>();
  const addEdge = (source: string | null | undefined, target: string, kind: GraphEdge["kind"]) => {
    if (!source || source === target || !present.has(source) || !present.has(target)) return;
    const key = `${kind}:${source}->${target}`;
    if (!edges.has(key)) edges.set(key, { source, target, kind });
  };

  const lastOfKey = new Map<string, string>();
  const checkpointsByLineage = new Map<string, GraphNode[]>();
  const predecessorOf = new Map<string, string | null>();
  for (const [i, r] of rows.entries()) {
    const node = nodes[i]!;
    if (node.class === "baseline") {
      // Fence losers and failed captures never superseded anything.
      if (r.state !== "failed") {
        addEdge(lastOfKey.get(node.chainId), node.id, "supersedes");
        lastOfKey.set(node.chainId, node.id);
      }
    } else {
      addEdge(r.predecessorId, node.id, "chain");
      predecessorOf.set(node.id, r.predecessorId);
      if (r.lineageId) {
        const list = checkpointsByLineage.get(r.lineageId);
        if (list) list.push(node);
        else checkpointsByLineage.set(r.lineageId, [node]);
      }
    }
    addEdge(r.degradedFromId, node.id, "degraded-from");
  }
  // rows are oldest first, so each lineage's list is sorted by createdAt.
  const forkedFrom = new Map<string, string>();
  for (const lineage of lineages) {
    const first = checkpointsByLineage.get(lineage.id)?.[0];
    if (lineage.forkedFromId) {
      forkedFrom.set(lineage.id, lineage.forkedFromId);
      const target = first?.id ?? forkNodeOf.get(lineage.id);
      if (target) addEdge(lineage.forkedFromId, target, "fork");
    }
    // A fork's origin is the checkpoint it was forked from until the ladder moves it: the
    // fork edge says that already.
    const origin = lineage.originSnapshotId !== lineage.forkedFromId ? lineage.originSnapshotId : null;
    if (first && origin && predecessorOf.get(first.id) !== origin) addEdge(origin, first.id, "seeded");
  }
  for (const restore of restores) {
    if (!SEEDING_OUTCOMES.includes(restore.outcome) || !restore.lineageId || !restore.snapshotId) continue;
    const seeded = firstAtOrAfter(checkpointsByLineage.get(restore.lineageId) ?? [], restore.createdAt);
    // Resuming a lineage from its own head is the chain edge already; a fork restoring the
    // checkpoint it was forked from is the fork edge.
    if (!seeded || predecessorOf.get(seeded.id) === restore.snapshotId) continue;
    if (forkedFrom.get(restore.lineageId) === restore.snapshotId) continue;
    addEdge(restore.snapshotId, seeded.id, "seeded");
  }

  // Each node's predecessor: along its chain first, else where it was seeded or forked from.
  const previous = new Map<string, { id: string; rank: number }>();
  const RANK: Record<GraphEdge["kind"], number> = { chain: 0, supersedes: 0, fork: 1, seeded: 2, "degraded-from": 3 };
  for (const e of edges.values()) {
    const seen = previous.get(e.target);
    if (!seen || RANK[e.kind] < seen.rank) previous.set(e.target, { id: e.source, rank: RANK[e.kind] });
  }
  for (const n of nodes) n.previousId = previous.get(n.id)?.id ?? null;

  return {
    repository,
    nodes,
    edges: [...edges.values()],
    agents,
    workContexts: [...new Set(nodes.map((n) => n.workContextId).filter((w): w is string => w !== null))].sort(),
  };
}

const SNAPSHOT_STATES = ["capturing", "ready", "superseded", "retired", "failed", "deleting", "deleted"] as const;
/** A graph node's id: a snapshot's, or a forked work context's (`work-context:<lineage id>`). */
const nodeIdSchema = z.string().min(1).max(200);
/** A chain: a lineage, or a baseline key. */
const chainIdSchema = z.string().min(1).max(1000);

export const repositoryGraphViewInput = z.strictObject({
  repositoryId: entityIdSchema,
  agentId: entityIdSchema.optional(),
  workContextId: workContextIdSchema.optional(),
  states: z.array(z.enum(SNAPSHOT_STATES)).max(SNAPSHOT_STATES.length).optional(),
  /** Created at or after / at or before (ms since the epoch). */
  from: z.number().int().nonnegative().optional(),
  to: z.number().int().nonnegative().optional(),
  /** Chains shown in full. */
  expand: z.array(chainIdSchema).max(1000).optional(),
  expandAll: z.boolean().optional(),
  /** Only this node's ancestors and descendants. */
  focus: nodeIdSchema.optional(),
  /** Nodes drawn on their own even inside a folded run (the selection, a search's jump). */
  reveal: z.array(nodeIdSchema).max(50).optional(),
});
export type RepositoryGraphViewInput = z.input<typeof repositoryGraphViewInput>;

/** Above this many nodes after folding chain middles, long work contexts fold whole. */
const VIEW_NODE_BUDGET = 250;

interface CurrentBaseline {
  snapshotId: string;
  agentId: string;
  agentName: string;
  canonicalRef: string | null;
  headCommit: string | null;
  createdAt: number;
}

/** What the graph page draws: the folded view, and the facts its summary and key list need. */
export interface RepositoryGraphView {
  repository: RepositoryGraph["repository"];
  agents: RepositoryGraph["agents"];
  workContexts: string[];
  /** Snapshots in the repository, and forked work contexts still without a checkpoint. */
  totals: { snapshots: number; waitingForks: number };
  /** Snapshots that pass every filter (the state filter's others are folded, not counted). */
  matched: number;
  nodes: ViewNode[];
  edges: ViewEdge[];
  /** Nodes shown only as the context of what matched. */
  contextIds: string[];
  collapsibleChains: string[];
  /** Long work contexts are folded whole (the graph is too big to draw with only their middles folded). */
  wholeLineages: boolean;
  /** For each baseline key, the baseline a new task gets now. */
  currentBaselines: CurrentBaseline[];
  focus: string | null;
}

/**
 * The repository's graph as the page draws it: filtered, focused on one node if asked, and
 * folded on the server so that what crosses the network is a few hundred nodes at any size.
 */
export async function repositoryGraphView(db: Db, input: RepositoryGraphViewInput): Promise<RepositoryGraphView> {
  const opts = repositoryGraphViewInput.parse(input);
  if (opts.from !== undefined && opts.to !== undefined && opts.from > opts.to) {
    throw new StrataError("INVALID_INPUT", "The graph's time filter starts after it ends.", {
      hint: "Choose a From date on or before the To date.",
    });
  }
  const read = await readGraph(db, { repositoryId: opts.repositoryId });
  const key = JSON.stringify([read.fingerprint, [...read.pinCounts].sort(), opts]);
  const cached = views.get(key);
  if (cached) return cached;
  const view = buildView(withPins(read.graph, read.pinCounts), opts);
  views.set(key, view);
  if (views.size > VIEWS_KEPT) views.delete(views.keys().next().value!);
  return view;
}

/** Views answered last (a page reloaded, a view shared), by graph fingerprint, pins and input. */
const views = new Map<string, RepositoryGraphView>();
const VIEWS_KEPT = 32;

function buildView(graph: RepositoryGraph, opts: z.output<typeof repositoryGraphViewInput>): RepositoryGraphView {
  let source: Pick<RepositoryGraph, "nodes" | "edges"> = graph;
  if (opts.focus !== undefined) {
    if (!graph.nodes.some((n) => n.id === opts.focus)) {
      throw new StrataError("NOT_FOUND", `Node ${opts.focus} is not in this repository's graph.`);
    }
    source = focusGraph(graph, opts.focus);
  }
  const filtered = filterGraph(source, {
    agentId: opts.agentId ?? null,
    workContextId: opts.workContextId ?? null,
    states: opts.states ?? null,
    from: opts.from ?? null,
    to: opts.to ?? null,
  });
  const view = foldForBudget(
    filtered,
    {
      expanded: new Set(opts.expand ?? []),
      expandAll: opts.expandAll ?? false,
      dimmed: filtered.dimmedIds,
      reveal: new Set([...(opts.reveal ?? []), ...(opts.focus ? [opts.focus] : [])]),
    },
    VIEW_NODE_BUDGET,
  );
  const isSnapshot = (n: GraphNode) => n.class !== "work-context";
  return {
    repository: graph.repository,
    agents: graph.agents,
    workContexts: graph.workContexts,
    totals: {
      snapshots: graph.nodes.filter(isSnapshot).length,
      waitingForks: graph.nodes.filter((n) => !isSnapshot(n)).length,
    },
    matched: filtered.nodes.filter((n) => isSnapshot(n) && !filtered.dimmedIds.has(n.id)).length,
    nodes: view.nodes,
    edges: view.edges,
    contextIds: [...filtered.contextIds],
    collapsibleChains: [...view.collapsibleChains],
    wholeLineages: view.wholeLineages,
    currentBaselines: graph.nodes
      .filter((n) => n.current)
      .map((n) => ({
        snapshotId: n.id,
        agentId: n.agentId,
        agentName: n.agentName,
        canonicalRef: n.canonicalRef,
        headCommit: n.headCommit,
        createdAt: n.createdAt,
      }))
      .sort(
        (a, b) => a.agentName.localeCompare(b.agentName) || (a.canonicalRef ?? "").localeCompare(b.canonicalRef ?? ""),
      ),
    focus: opts.focus ?? null,
  };
}

export const searchRepositoryGraphInput = z.strictObject({
  repositoryId: entityIdSchema,
  text: z.string().trim().min(1).max(200),
  limit: z.number().int().min(1).max(50).default(20),
});
export type SearchRepositoryGraphInput = z.input<typeof searchRepositoryGraphInput>;

/** Nodes of the repository's graph by snapshot id, alias, commit, branch, baseline ref or work context. */
export async function searchRepositoryGraph(db: Db, input: SearchRepositoryGraphInput): Promise<GraphSearchHit[]> {
  const opts = searchRepositoryGraphInput.parse(input);
  const graph = await repositoryGraph(db, { repositoryId: opts.repositoryId });
  return searchGraph(graph.nodes, opts.text, opts.limit);
}
