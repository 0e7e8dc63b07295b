"use client";
// The drawing of a (filtered, collapsed) lineage graph with React Flow. Only what is on screen
// is rendered; positions come from dagre (graph-layout.ts).
import "@xyflow/react/dist/style.css";
import {
  Background,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  type Edge,
  type Node,
  type NodeProps,
  type NodeTypes,
  type ReactFlowInstance,
} from "@xyflow/react";
import { memo, useEffect, useMemo, useRef, useState } from "react";
import type { CollapsedGroup, GraphNode, ViewGraph } from "~/server/domain/lineage-graph.ts";
import { layoutGraphAsync } from "./graph-layout-async.ts";
import { layoutGraph, NODE_HEIGHT, NODE_WIDTH, type Positioned } from "./graph-layout.ts";

type SnapshotData = { node: GraphNode; context: boolean; selected: boolean; onSelect: (id: string) => void };
type GroupData = { group: CollapsedGroup; selected: boolean; onSelect: (id: string) => void };
type SnapshotFlowNode = Node<SnapshotData, "snapshot">;
type GroupFlowNode = Node<GroupData, "group">;

export function nodeLabel(node: GraphNode): string {
  if (node.class === "work-context") return `${node.workContextId ?? "work"} (forked)`;
  if (node.alias) return node.alias;
  if (node.class === "baseline") {
    const ref = (node.canonicalRef ?? "").replace(/^refs\/heads\//, "");
    return `${ref || "baseline"} @ ${node.headCommit?.slice(0, 7) ?? "?"}`;
  }
  return `${node.workContextId ?? "work"} #${node.position}`;
}

const KIND_LABEL: Record<GraphNode["class"], string> = {
  baseline: "baseline",
  checkpoint: "checkpoint",
  "work-context": "forked work context",
};

const SnapshotNodeView = memo(function SnapshotNodeView({ data }: NodeProps<SnapshotFlowNode>) {
  const n = data.node;
  const label = nodeLabel(n);
  // A forked work context with no checkpoint yet is its lineage, not a snapshot.
  const ids = n.class === "work-context" ? { "data-lineage-id": n.lineageId ?? "" } : { "data-snapshot-id": n.id };
  return (
    <div
      className={`gnode ${n.class} state-${n.state}${data.context ? " context" : ""}${data.selected ? " selected" : ""}`}
    >
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <button
        type="button"
        className="gnode-body"
        {...ids}
        title={label}
        aria-label={`${KIND_LABEL[n.class]} ${label}, ${n.state}${n.lineageState === "retired" ? ", lineage retired" : ""}`}
        onClick={() => data.onSelect(n.id)}
      >
        <span className="gnode-kind">{KIND_LABEL[n.class]}</span>
        <span className="gnode-title">{label}</span>
        <span className="gnode-meta">
          <span className={`badge ${n.state}`}>{n.state}</span> {n.agentName}
        </span>
      </button>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const GroupNodeView = memo(function GroupNodeView({ data }: NodeProps<GroupFlowNode>) {
  const g = data.group;
  const states = Object.entries(g.states)
    .map(([state, count]) => `${count} ${state}`)
    .join(", ");
  return (
    <div className={`gnode group${data.selected ? " selected" : ""}`}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <button
        type="button"
        className="gnode-body"
        data-group-id={g.id}
        aria-label={`${g.memberIds.length} folded ${g.class}s${g.workContextId ? ` of ${g.workContextId}` : ""}: ${states}`}
        onClick={() => data.onSelect(g.id)}
      >
        <span className="gnode-kind">folded {g.class === "baseline" ? "baselines" : "checkpoints"}</span>
        <span className="gnode-title">
          {g.class === "checkpoint" && g.workContextId ? `${g.workContextId} · ` : ""}
          {g.memberIds.length} {g.class}s
        </span>
        <span className="gnode-meta">{states}</span>
      </button>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const NODE_TYPES: NodeTypes = { snapshot: SnapshotNodeView, group: GroupNodeView };

const MAX_LABELLED_EDGES = 150;

const EDGE_STYLE: Record<string, { stroke: string; dash?: string; label?: string }> = {
  chain: { stroke: "#4b5563" },
  supersedes: { stroke: "#8a6d3b", dash: "6 4", label: "superseded by" },
  seeded: { stroke: "#2f5bd3", label: "seeded" },
  "degraded-from": { stroke: "#b3261e", dash: "2 3", label: "degraded from" },
  fork: { stroke: "#7b3fb3", dash: "8 3", label: "forked" },
};

export interface LineageGraphProps {
  view: ViewGraph;
  contextIds: ReadonlySet<string>;
  selectedId: string | null;
  onSelect: (id: string) => void;
  /** Called once, after the first frame that shows nodes (for the performance marks). */
  onFirstRender?: (info: { layoutMs: number; nodes: number; edges: number }) => void;
}

/** Larger views are laid out in a worker (an expanded 5,000-node graph takes seconds). */
const SYNC_LAYOUT_LIMIT = 600;

export function LineageGraph({ view: wanted, contextIds, selectedId, onSelect, onFirstRender }: LineageGraphProps) {
  const syncLayout = useMemo(() => (wanted.nodes.length <= SYNC_LAYOUT_LIMIT ? layoutGraph(wanted) : null), [wanted]);
  const [asyncLayout, setAsyncLayout] = useState<{ view: ViewGraph; layout: Positioned } | null>(null);
  useEffect(() => {
    if (wanted.nodes.length <= SYNC_LAYOUT_LIMIT) return;
    let live = true;
    void layoutGraphAsync(wanted).then((layout) => {
      if (live) setAsyncLayout({ view: wanted, layout });
    });
    return () => {
      live = false;
    };
  }, [wanted]);
  // Until a worker's layout arrives, the previous drawing stays (with a notice).
  const shown = syncLayout ? { view: wanted, layout: syncLayout } : asyncLayout;
  const pending = shown?.view !== wanted;
  if (!shown) {
    return (
      <div className="status" role="status">
        Laying out {wanted.nodes.length} nodes…
      </div>
    );
  }
  return (
    <DrawnGraph
      view={shown.view}
      layout={shown.layout}
      pending={pending ? wanted.nodes.length : null}
      contextIds={contextIds}
      selectedId={selectedId}
      onSelect={onSelect}
      onFirstRender={onFirstRender}
    />
  );
}

function DrawnGraph({
  view,
  layout,
  pending,
  contextIds,
  selectedId,
  onSelect,
  onFirstRender,
}: LineageGraphProps & { layout: Positioned; pending: number | null }) {
  const nodes = useMemo<(SnapshotFlowNode | GroupFlowNode)[]>(
    () =>
      view.nodes.map((v) => {
        const position = layout.positions.get(v.id) ?? { x: 0, y: 0 };
        const common = { id: v.id, position, width: NODE_WIDTH, height: NODE_HEIGHT, draggable: false };
        return v.kind === "snapshot"
          ? {
              ...common,
              type: "snapshot" as const,
              data: { node: v.node, context: contextIds.has(v.id), selected: v.id === selectedId, onSelect },
            }
          : { ...common, type: "group" as const, data: { group: v.group, selected: v.id === selectedId, onSelect } };
      }),
    [view, layout, contextIds, selectedId, onSelect],
  );
  const edges = useMemo<Edge[]>(
    () =>
      view.edges.map((e) => {
        const style = EDGE_STYLE[e.kind] ?? EDGE_STYLE.chain!;
        // Labels cost a text measurement each; on big graphs the legend and line styles say it.
        const labelled = view.edges.length <= MAX_LABELLED_EDGES;
        const label = !labelled ? undefined : e.count > 1 ? `${style.label ?? ""} ×${e.count}`.trim() : style.label;
        return {
          id: e.id,
          source: e.source,
          target: e.target,
          label,
          labelStyle: { fontSize: 11, fill: style.stroke },
          style: { stroke: style.stroke, strokeWidth: 1.5, strokeDasharray: style.dash },
          markerEnd: { type: MarkerType.ArrowClosed, color: style.stroke, width: 16, height: 16 },
          focusable: false,
          className: `edge-${e.kind}`,
        };
      }),
    [view],
  );

  const [initialized, setInitialized] = useState(false);
  const reported = useRef(false);
  // Every redraw after a new layout: a mark with how many nodes, for the bench.
  useEffect(() => {
    if (!initialized) return;
    const frame = requestAnimationFrame(() =>
      requestAnimationFrame(() =>
        performance.mark("strata:graph-drawn", { detail: { nodes: nodes.length, layoutMs: layout.ms } }),
      ),
    );
    return () => cancelAnimationFrame(frame);
  }, [initialized, nodes.length, layout.ms]);
  const instance = useRef<ReactFlowInstance<SnapshotFlowNode | GroupFlowNode> | null>(null);
  const firstView = useRef(view);
  // A new filter or an expanded chain: show the whole result again.
  useEffect(() => {
    if (view === firstView.current) return;
    const frame = requestAnimationFrame(() => void instance.current?.fitView({ maxZoom: 1, padding: 0.05 }));
    return () => cancelAnimationFrame(frame);
  }, [view]);
  useEffect(() => {
    if (!initialized || reported.current || nodes.length === 0 || !onFirstRender) return;
    reported.current = true;
    // Two frames: React committed, then the browser painted the nodes.
    requestAnimationFrame(() =>
      requestAnimationFrame(() => onFirstRender({ layoutMs: layout.ms, nodes: nodes.length, edges: edges.length })),
    );
  }, [initialized, nodes.length, edges.length, layout.ms, onFirstRender]);

  return (
    <>
      {pending !== null ? (
        <div className="graph-pending" role="status">
          Laying out {pending} nodes…
        </div>
      ) : null}
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={NODE_TYPES}
        onInit={(flow) => {
          instance.current = flow;
          setInitialized(true);
        }}
        // A click handler also gives nodes pointer events (they are neither draggable nor selectable).
        onNodeClick={(_, node) => onSelect(node.id)}
        onlyRenderVisibleElements
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        fitView
        fitViewOptions={{ maxZoom: 1, padding: 0.05 }}
        minZoom={0.05}
        maxZoom={2}
      >
        <Background gap={24} size={1} color="#d9dce1" />
        <Controls showInteractive={false} />
      </ReactFlow>
    </>
  );
}
