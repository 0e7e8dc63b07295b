// The lineage graph of one repository, for the dashboard: every snapshot as a node; baselines
// chained by supersession within their key, checkpoints by their lineage's predecessor links;
// "seeded from" edges from lineage origins and restore attributions; "degraded from" edges
// from captures of partly restored worktrees; "fork" edges from a checkpoint to each work
// context an authorized fork made from it (a work-context node until it has a checkpoint). A
// handful of queries whatever the size.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { StrataError } from "../domain/errors.ts";
import type { GraphEdge, GraphNode, RepositoryGraph } from "../domain/lineage-graph.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";

/** More snapshots than this in one repository and the graph shows the newest ones. */
const GRAPH_NODE_LIMIT = 20_000;

export const repositoryGraphInput = z.strictObject({
  repositoryId: entityIdSchema,
  limit: z.number().int().min(1).max(GRAPH_NODE_LIMIT).default(GRAPH_NODE_LIMIT),
});
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

export async function repositoryGraph(db: Db, input: RepositoryGraphInput): Promise<RepositoryGraph> {
  const opts = repositoryGraphInput.parse(input);
  const repository = await db.repository.findUnique({
    where: { id: opts.repositoryId },
    select: { id: true, name: true, identity: true },
  });
  if (!repository) throw new StrataError("NOT_FOUND", `Repository ${opts.repositoryId} was not found.`);

  const [newest, lineages, restores] = await Promise.all([
    db.snapshot.findMany({
      where: { repositoryId: repository.id },
      orderBy: [{ createdAt: "desc" }, { id: "asc" }],
      take: opts.limit + 1,
      select: {
        id: true,
        class: true,
        state: true,
        agentId: true,
        backendKind: true,
        baseImage: true,
        canonicalRef: true,
        lineageId: true,
        workContextId: true,
        sequence: true,
        predecessorId: true,
        headCommit: true,
        alias: true,
        degradedFromId: true,
        createdAt: true,
      },
    }),
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
    db.restore.findMany({
      where: { repositoryId: repository.id, snapshotId: { not: null }, lineageId: { not: null } },
      select: { snapshotId: true, lineageId: true, createdAt: true, outcome: true },
    }),
  ]);
  const truncated = newest.length > opts.limit;
  const rows = newest.slice(0, opts.limit).reverse();
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
      alias: r.alias,
      createdAt: r.createdAt.getTime(),
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
      alias: null,
      createdAt: lineage.createdAt.getTime(),
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
    const seeded = firstAtOrAfter(checkpointsByLineage.get(restore.lineageId) ?? [], restore.createdAt.getTime());
    // Resuming a lineage from its own head is the chain edge already; a fork restoring the
    // checkpoint it was forked from is the fork edge.
    if (!seeded || predecessorOf.get(seeded.id) === restore.snapshotId) continue;
    if (forkedFrom.get(restore.lineageId) === restore.snapshotId) continue;
    addEdge(restore.snapshotId, seeded.id, "seeded");
  }

  return {
    repository,
    nodes,
    edges: [...edges.values()],
    agents,
    workContexts: [...new Set(nodes.map((n) => n.workContextId).filter((w): w is string => w !== null))].sort(),
    truncated,
  };
}
