// Positions for the (collapsed) lineage graph: dagre, left to right, oldest on the left.
import dagre from "@dagrejs/dagre";

export const NODE_WIDTH = 224;
export const NODE_HEIGHT = 92;

export interface Positioned {
  positions: Map<string, { x: number; y: number }>;
  ms: number;
}

/** What a layout needs: ids and edges (plain data, so it can go to a worker). */
export interface LayoutInput {
  nodes: readonly { id: string }[];
  edges: readonly { source: string; target: string; kind: string }[];
}

export function layoutGraph(view: LayoutInput): Positioned {
  const started = performance.now();
  const g = new dagre.graphlib.Graph({ multigraph: false });
  g.setGraph({ rankdir: "LR", nodesep: 22, ranksep: 100, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of view.nodes) g.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const edge of view.edges) {
    // Chains weigh more, so a lineage reads as one straight row.
    const weight = edge.kind === "chain" || edge.kind === "supersedes" ? 4 : 1;
    g.setEdge(edge.source, edge.target, { weight, minlen: 1 });
  }
  dagre.layout(g);
  const positions = new Map<string, { x: number; y: number }>();
  for (const node of view.nodes) {
    const at = g.node(node.id);
    // dagre gives centres; React Flow wants top-left corners.
    positions.set(node.id, { x: (at?.x ?? 0) - NODE_WIDTH / 2, y: (at?.y ?? 0) - NODE_HEIGHT / 2 });
  }
  return { positions, ms: performance.now() - started };
}
