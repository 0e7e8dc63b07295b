"use client";
// The drawing of a repository's (filtered, folded) lineage graph with React Flow. Positions
// come from the lane layout (graph-layout-lanes.ts: agents' lanes on a time axis, the default)
// or from dagre (graph-layout.ts, the untimed layout). Each node is one Tab stop; arrows move
// between nodes, Enter selects, +/- zoom, and arrows pan when no node has the focus. Above a
// hundred-odd nodes React Flow is given only the part of the layout around the viewport
// (graph-viewport.ts), updated as the view moves; the minimap (graph-minimap.tsx), the fit
// button, keyboard moves and jumps read our own layout, which always holds every node.
import "@xyflow/react/dist/style.css";
import {
  Background,
  ControlButton,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  ViewportPortal,
  type Edge,
  type Node,
  type NodeProps,
  type NodeTypes,
  type ReactFlowInstance,
  type Viewport,
} from "@xyflow/react";
import { memo, useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import {
  graphNodeLabel,
  nodeBadges,
  type CollapsedGroup,
  type GraphNode,
  type NodeBadge,
  type ViewEdge,
  type ViewNode,
} from "~/server/domain/lineage-graph.ts";
import { layoutGraphAsync } from "./graph-layout-async.ts";
import { layoutLanes, type LaneBand, type LaneTick } from "./graph-layout-lanes.ts";
import { layoutGraph, NODE_HEIGHT, NODE_WIDTH, type Positioned } from "./graph-layout.ts";
import { GraphMinimap } from "./graph-minimap.tsx";
import { containsRect, cullGraph, layoutBounds, padRect, visibleRect, type Rect } from "./graph-viewport.ts";

type SnapshotData = { node: GraphNode; context: boolean; selected: boolean; focus: boolean };
type GroupData = { group: CollapsedGroup; selected: boolean };
type SnapshotFlowNode = Node<SnapshotData, "snapshot">;
type GroupFlowNode = Node<GroupData, "group">;
type FlowNode = SnapshotFlowNode | GroupFlowNode;

export type GraphLayoutKind = "lanes" | "dag";

const KIND_LABEL: Record<GraphNode["class"], string> = {
  baseline: "baseline",
  checkpoint: "checkpoint",
  "work-context": "forked work context",
};

export const BADGE_TEXT: Record<NodeBadge, string> = {
  current: "current",
  pinned: "pinned",
  degraded: "degraded",
  "last-restored": "last restored",
  "retired-held": "retired · held",
};

/** What a screen reader hears for a node: kind, label, state and badges. */
function snapshotAriaLabel(n: GraphNode): string {
  const badges = nodeBadges(n).map((b) =>
    b === "current" ? "current baseline of its key" : b === "pinned" ? `pinned (${n.pins})` : BADGE_TEXT[b],
  );
  return [
    `${KIND_LABEL[n.class]} ${graphNodeLabel(n)}`,
    n.state,
    ...(n.lineageState === "retired" && n.class !== "baseline" ? ["lineage retired"] : []),
    ...badges,
  ].join(", ");
}

function groupAriaLabel(g: CollapsedGroup): string {
  const states = Object.entries(g.states)
    .map(([state, count]) => `${count} ${state}`)
    .join(", ");
  const marks = (Object.entries(g.marks) as [NodeBadge, number][])
    .filter(([, c]) => c > 0)
    .map(([b, c]) => `${c} ${BADGE_TEXT[b]}`);
  return (
    `${g.count} ${g.filteredOut ? "filtered-out" : "folded"} ${g.class}s` +
    `${g.workContextId ? ` of ${g.workContextId}` : ""}: ${states}${marks.length ? `; ${marks.join(", ")}` : ""}`
  );
}

export function Badges({ badges, pins }: { badges: readonly NodeBadge[]; pins?: number }) {
  return (
    <>
      {badges.map((b) => (
        <span key={b} className={`graph-badge graph-badge-${b}`}>
          {b === "pinned" && pins && pins > 1 ? `pinned ×${pins}` : BADGE_TEXT[b]}
        </span>
      ))}
    </>
  );
}

const SnapshotNodeView = memo(function SnapshotNodeView({ data }: NodeProps<SnapshotFlowNode>) {
  const n = data.node;
  const badges = nodeBadges(n);
  const classes = [
    "gnode",
    n.class,
    `state-${n.state}`,
    ...badges.map((b) => `has-${b}`),
    data.context ? "context" : "",
    data.selected ? "selected" : "",
    data.focus ? "focused-node" : "",
  ];
  return (
    <div className={classes.filter(Boolean).join(" ")} title={graphNodeLabel(n)}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <div className="gnode-body">
        <span className="gnode-kind">
          {KIND_LABEL[n.class]} · {n.agentName}
        </span>
        <span className="gnode-title">{graphNodeLabel(n)}</span>
        <span className="gnode-meta">
          <span className={`badge ${n.state}`}>{n.state}</span>
          <Badges badges={badges} pins={n.pins} />
        </span>
      </div>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const GroupNodeView = memo(function GroupNodeView({ data }: NodeProps<GroupFlowNode>) {
  const g = data.group;
  const states = Object.entries(g.states)
    .map(([state, count]) => `${count} ${state}`)
    .join(", ");
  const marks = (Object.entries(g.marks) as [NodeBadge, number][]).filter(([, c]) => c > 0);
  return (
    <div className={`gnode group${g.filteredOut ? " filtered-out" : ""}${data.selected ? " selected" : ""}`}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <div className="gnode-body">
        <span className="gnode-kind">
          {g.filteredOut ? "filtered out" : "folded"} · {g.agentName}
        </span>
        <span className="gnode-title">
          {g.class === "checkpoint" && g.workContextId ? `${g.workContextId} · ` : ""}
          {g.count} {g.class}s
        </span>
        <span className="gnode-meta">
          {states}
          {marks.map(([b, c]) => (
            <span key={b} className={`graph-badge graph-badge-${b}`}>
              {c} {BADGE_TEXT[b]}
            </span>
          ))}
        </span>
      </div>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const NODE_TYPES: NodeTypes = { snapshot: SnapshotNodeView, group: GroupNodeView };

const MAX_LABELLED_EDGES = 150;
/**
 * Up to this many nodes every node stays in the page (findable, a Tab stop); above, React Flow
 * is given only the nodes inside the viewport and a margin (graph-viewport.ts) and draws those on
 * screen.
 */
const ALWAYS_RENDERED = 120;
/** The margin around the viewport whose nodes React Flow is given, as a fraction of the viewport. */
const WINDOW_MARGIN = 0.5;

/** Each edge kind's line, label and arrowhead colour is the theme's (app/globals.css, light and dark). */
const EDGE_STYLE: Record<string, { stroke: string; dash?: string; label?: string }> = {
  chain: { stroke: "var(--edge-chain)" },
  supersedes: { stroke: "var(--edge-supersedes)", dash: "6 4", label: "superseded by" },
  seeded: { stroke: "var(--edge-seeded)", label: "seeded" },
  "degraded-from": { stroke: "var(--edge-degraded)", dash: "2 3", label: "degraded from" },
  fork: { stroke: "var(--edge-fork)", dash: "8 3", label: "forked" },
};

export interface LineageGraphProps {
  nodes: readonly ViewNode[];
  edges: readonly ViewEdge[];
  layout: GraphLayoutKind;
  contextIds: ReadonlySet<string>;
  selectedId: string | null;
  focusId: string | null;
  onSelect: (id: string) => void;
  /** Called once, after the first frame that shows nodes (for the performance marks). */
  onFirstRender?: (info: { layoutMs: number; nodes: number; edges: number }) => void;
}

/** Larger dagre layouts run in a worker (an expanded 5,000-node graph takes seconds there). */
const SYNC_LAYOUT_LIMIT = 600;

type Laid = Positioned & { bands?: LaneBand[]; ticks?: LaneTick[] };

function laneItems(nodes: readonly ViewNode[]) {
  return nodes.map((v) =>
    v.kind === "snapshot"
      ? {
          id: v.id,
          chainId: v.node.chainId,
          agentId: v.node.agentId,
          agentName: v.node.agentName,
          at: v.node.createdAt,
        }
      : {
          id: v.id,
          chainId: v.group.chainId,
          agentId: v.group.agentId,
          agentName: v.group.agentName,
          at: v.group.from,
        },
  );
}

export function LineageGraph(props: LineageGraphProps) {
  const { nodes: wantedNodes, edges: wantedEdges, layout: kind } = props;
  const wanted = useMemo(() => ({ nodes: wantedNodes, edges: wantedEdges, kind }), [wantedNodes, wantedEdges, kind]);
  const syncLayout = useMemo<Laid | null>(() => {
    if (wanted.kind === "lanes") return layoutLanes(laneItems(wanted.nodes), wanted.edges);
    return wanted.nodes.length <= SYNC_LAYOUT_LIMIT ? layoutGraph(wanted) : null;
  }, [wanted]);
  const [asyncLayout, setAsyncLayout] = useState<{ view: typeof wanted; layout: Laid } | null>(null);
  useEffect(() => {
    if (syncLayout) return;
    let live = true;
    void layoutGraphAsync(wanted).then((layout) => {
      if (live) setAsyncLayout({ view: wanted, layout });
    });
    return () => {
      live = false;
    };
  }, [wanted, syncLayout]);
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
      {...props}
      nodes={shown.view.nodes}
      edges={shown.view.edges}
      laid={shown.layout}
      pending={pending ? wanted.nodes.length : null}
    />
  );
}

const PAN_STEP = 120;

function toFlowNode(
  v: ViewNode,
  position: { x: number; y: number },
  contextIds: ReadonlySet<string>,
  selectedId: string | null,
  focusId: string | null,
): FlowNode {
  const common = {
    id: v.id,
    position,
    width: NODE_WIDTH,
    height: NODE_HEIGHT,
    draggable: false,
    ariaRole: "button" as const,
  };
  if (v.kind === "snapshot") {
    const n = v.node;
    // A forked work context without checkpoints is its lineage, not a snapshot.
    const ids = n.class === "work-context" ? { "data-lineage-id": n.lineageId ?? "" } : { "data-snapshot-id": n.id };
    return {
      ...common,
      type: "snapshot" as const,
      ariaLabel: snapshotAriaLabel(n),
      // data-* attributes reach the node's element; React Flow's type lists only HTML ones.
      domAttributes: ids as NonNullable<Node["domAttributes"]>,
      data: { node: n, context: contextIds.has(v.id), selected: v.id === selectedId, focus: v.id === focusId },
    };
  }
  return {
    ...common,
    type: "group" as const,
    ariaLabel: groupAriaLabel(v.group),
    domAttributes: { "data-group-id": v.group.id } as NonNullable<Node["domAttributes"]>,
    data: { group: v.group, selected: v.id === selectedId },
  };
}

function DrawnGraph({
  nodes: viewNodes,
  edges: viewEdges,
  laid,
  pending,
  contextIds,
  selectedId,
  focusId,
  onSelect,
  onFirstRender,
}: LineageGraphProps & { laid: Laid; pending: number | null }) {
  const instance = useRef<ReactFlowInstance<FlowNode> | null>(null);
  const box = useRef<HTMLDivElement | null>(null);

  /** Each view node as React Flow wants it, made when first needed (a pan reuses them). */
  const flowNode = useMemo(() => {
    const made = new Map<string, FlowNode>();
    const byId = new Map(viewNodes.map((v) => [v.id, v]));
    return (id: string): FlowNode | undefined => {
      const seen = made.get(id);
      if (seen) return seen;
      const v = byId.get(id);
      if (!v) return undefined;
      const node = toFlowNode(v, laid.positions.get(v.id) ?? { x: 0, y: 0 }, contextIds, selectedId, focusId);
      made.set(id, node);
      return node;
    };
  }, [viewNodes, laid, contextIds, selectedId, focusId]);
  const flowEdges = useMemo<Edge[]>(
    () =>
      viewEdges.map((e) => {
        const style = EDGE_STYLE[e.kind] ?? EDGE_STYLE.chain!;
        // Labels cost a text measurement each; on big graphs the legend and line styles say it.
        const labelled = viewEdges.length <= MAX_LABELLED_EDGES;
        const label = !labelled ? undefined : e.count > 1 ? `${style.label ?? ""} ×${e.count}`.trim() : style.label;
        return {
          id: e.id,
          source: e.source,
          target: e.target,
          label,
          labelStyle: { fontSize: 11, fill: style.stroke },
          labelBgPadding: [4, 2] as [number, number],
          style: { stroke: style.stroke, strokeWidth: 1.5, strokeDasharray: style.dash },
          markerEnd: { type: MarkerType.ArrowClosed, color: style.stroke, width: 16, height: 16 },
          focusable: false,
          className: `edge-${e.kind}`,
        };
      }),
    [viewEdges],
  );

  // The part of the layout React Flow is given (null: all of it, a small graph). Set from the
  // viewport once React Flow is up, and again whenever a pan or zoom leaves it.
  const culled = viewNodes.length > ALWAYS_RENDERED;
  const [cullWindow, setCullWindow] = useState<{ rect: Rect; laid: Laid } | null>(null);
  const windowRef = useRef<Rect | null>(null);
  const laidRef = useRef(laid);
  laidRef.current = laid;
  const culledRef = useRef(culled);
  culledRef.current = culled;
  const follow = useCallback((viewport: Viewport) => {
    const el = box.current;
    if (!el || !culledRef.current) return;
    const seen = visibleRect(viewport, el.clientWidth || 1, el.clientHeight || 1);
    if (windowRef.current && containsRect(windowRef.current, seen)) return;
    windowRef.current = padRect(seen, WINDOW_MARGIN);
    setCullWindow({ rect: windowRef.current, laid: laidRef.current });
  }, []);
  // A canvas that grows (a wider window, the navigation collapsed) may show more than the window.
  useEffect(() => {
    const el = box.current;
    if (!el || typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(() => {
      const flow = instance.current;
      if (flow) follow(flow.getViewport());
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, [follow]);
  const { nodes, edges } = useMemo(() => {
    if (!culled) {
      const all = viewNodes.map((v) => flowNode(v.id)!);
      return { nodes: all, edges: flowEdges };
    }
    if (!cullWindow) return { nodes: [] as FlowNode[], edges: [] as Edge[] };
    const keep = [selectedId, focusId].filter((id): id is string => id !== null);
    const { nodeIds, edgeIds } = cullGraph(laid.positions, flowEdges, cullWindow.rect, keep);
    // In the view's order, as when every node is given: the Tab order follows it.
    const some: FlowNode[] = [];
    for (const v of viewNodes) if (nodeIds.has(v.id)) some.push(flowNode(v.id)!);
    return { nodes: some, edges: flowEdges.filter((e) => edgeIds.has(e.id)) };
  }, [culled, cullWindow, viewNodes, flowNode, flowEdges, laid, selectedId, focusId]);
  const minimapColors = useMemo(() => {
    const colors = new Map(viewNodes.map((v) => [v.id, minimapColor(v)]));
    return (id: string) => colors.get(id) ?? "#c4c8cf";
  }, [viewNodes]);

  const [initialized, setInitialized] = useState(false);
  const reported = useRef(false);

  // Every redraw after a new layout (once the part on screen is drawn): a mark with how many
  // nodes the view has and how many React Flow was given, for the bench.
  const markedLayout = useRef<Laid | null>(null);
  const windowReady = !culled || cullWindow?.laid === laid;
  useEffect(() => {
    if (!initialized || !windowReady || markedLayout.current === laid) return;
    markedLayout.current = laid;
    const detail = { nodes: viewNodes.length, drawn: nodes.length, layoutMs: laid.ms };
    requestAnimationFrame(() => requestAnimationFrame(() => performance.mark("strata:graph-drawn", { detail })));
  }, [initialized, windowReady, laid, viewNodes.length, nodes.length]);

  /** The readable default: zoom 1 (text at its CSS size), on the selection or the newest nodes. */
  const place = useCallback(
    (keepZoom: boolean) => {
      const flow = instance.current;
      const el = box.current;
      if (!flow || !el || viewNodes.length === 0) return;
      const zoom = keepZoom ? flow.getZoom() : 1;
      const selected = selectedId ? laid.positions.get(selectedId) : undefined;
      if (selected) {
        void flow.setCenter(selected.x + NODE_WIDTH / 2, selected.y + NODE_HEIGHT / 2, { zoom });
        return;
      }
      // The newest region: the rightmost node at the right edge, its lane in the middle.
      let newest: { x: number; y: number } | undefined;
      for (const p of laid.positions.values()) if (!newest || p.x > newest.x) newest = p;
      if (!newest) return;
      const width = el.clientWidth;
      // Left of the minimap (bottom right) where it is shown; CSS hides it on narrow screens.
      const minimap = el.querySelector<HTMLElement>(".react-flow__minimap");
      const margin = minimap && minimap.offsetWidth > 0 ? minimap.offsetWidth + 40 : 24;
      const x = Math.min(16, width - margin - (newest.x + NODE_WIDTH) * zoom);
      const y = el.clientHeight / 2 - (newest.y + NODE_HEIGHT / 2) * zoom;
      void flow.setViewport({ x, y, zoom });
    },
    [viewNodes.length, laid, selectedId],
  );
  // First drawing: the newest region (or the selection from the URL).
  const placed = useRef(false);
  useEffect(() => {
    if (!initialized || placed.current) return;
    placed.current = true;
    place(false);
    follow(instance.current!.getViewport());
  }, [initialized, place, follow]);
  // A new view (a chain expanded, a filter, a jump): the selection stays centred, at the same zoom.
  const firstLayout = useRef(laid);
  useEffect(() => {
    if (laid === firstLayout.current || !initialized) return;
    const frame = requestAnimationFrame(() => {
      place(true);
      // The part of the new layout on screen (the old window's rect is of the old positions).
      windowRef.current = null;
      follow(instance.current!.getViewport());
    });
    return () => cancelAnimationFrame(frame);
    // Only a new layout moves the view; a new selection alone does not.
  }, [laid, initialized]);
  // A node selected outside the part on screen (a jump, a shared link): bring it into view.
  useEffect(() => {
    const flow = instance.current;
    const el = box.current;
    const at = selectedId ? laid.positions.get(selectedId) : undefined;
    if (!initialized || !flow || !el || !at) return;
    const { x, y, zoom } = flow.getViewport();
    const left = at.x * zoom + x;
    const top = at.y * zoom + y;
    const inside =
      left >= 0 &&
      top >= 0 &&
      left + NODE_WIDTH * zoom <= el.clientWidth &&
      top + NODE_HEIGHT * zoom <= el.clientHeight;
    if (!inside) void flow.setCenter(at.x + NODE_WIDTH / 2, at.y + NODE_HEIGHT / 2, { zoom });
    follow(flow.getViewport());
  }, [selectedId, laid, initialized, follow]);
  useEffect(() => {
    if (!initialized || reported.current || nodes.length === 0 || !onFirstRender) return;
    reported.current = true;
    // Two frames: React committed, then the browser painted the nodes.
    const info = { layoutMs: laid.ms, nodes: viewNodes.length, edges: viewEdges.length };
    requestAnimationFrame(() => requestAnimationFrame(() => onFirstRender(info)));
  }, [initialized, nodes.length, viewNodes.length, viewEdges.length, laid.ms, onFirstRender]);

  /** The nearest node from `fromId` in an arrow's direction (the layout's coordinates). */
  const neighbour = useCallback(
    (fromId: string, key: string): string | null => {
      const from = laid.positions.get(fromId);
      if (!from) return null;
      const dir = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowDown: [0, 1], ArrowUp: [0, -1] }[key];
      if (!dir) return null;
      let best: string | null = null;
      let bestScore = Infinity;
      for (const [id, p] of laid.positions) {
        if (id === fromId) continue;
        const dx = p.x - from.x;
        const dy = p.y - from.y;
        const along = dx * dir[0]! + dy * dir[1]!;
        if (along <= 0) continue;
        const across = Math.abs(dir[0] ? dy : dx);
        const score = along + across * 3;
        if (score < bestScore) {
          bestScore = score;
          best = id;
        }
      }
      return best;
    },
    [laid],
  );

  const focusNode = useCallback(
    (id: string) => {
      const flow = instance.current;
      const el = box.current;
      const find = () => el?.querySelector<HTMLElement>(`.react-flow__node[data-id="${CSS.escape(id)}"]`);
      const now = find();
      if (now) {
        now.focus();
        return;
      }
      // Off screen (not rendered): bring it into view, then focus it once drawn (a few frames:
      // the window moves, React Flow draws the node).
      const p = laid.positions.get(id);
      if (flow && p) {
        void flow.setCenter(p.x + NODE_WIDTH / 2, p.y + NODE_HEIGHT / 2, { zoom: flow.getZoom() });
        follow(flow.getViewport());
      }
      let frames = 0;
      const attempt = () => {
        const drawn = find();
        if (drawn) drawn.focus();
        else if ((frames += 1) < 30) requestAnimationFrame(attempt);
      };
      requestAnimationFrame(attempt);
    },
    [laid, follow],
  );

  /** The whole layout in view (every node, not only those React Flow was given). */
  const fitWhole = useCallback(() => {
    const flow = instance.current;
    const all = layoutBounds(laid.positions);
    if (!flow || !all) return;
    void flow.fitBounds(
      { x: all.left, y: all.top, width: all.right - all.left, height: all.bottom - all.top },
      { padding: 0.1 },
    );
    follow(flow.getViewport());
  }, [laid, follow]);

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const flow = instance.current;
    if (!flow) return;
    const target = event.target as HTMLElement;
    const nodeEl = target.closest<HTMLElement>(".react-flow__node");
    const nodeId = nodeEl?.dataset.id ?? null;
    if (event.key === "+" || event.key === "=") {
      event.preventDefault();
      void flow.zoomIn();
    } else if (event.key === "-" || event.key === "_") {
      event.preventDefault();
      void flow.zoomOut();
    } else if (nodeId && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      onSelect(nodeId);
    } else if (event.key.startsWith("Arrow")) {
      event.preventDefault();
      if (nodeId) {
        const next = neighbour(nodeId, event.key);
        if (next) focusNode(next);
      } else if (target === box.current || target.closest(".react-flow__pane, .react-flow__renderer")) {
        const { x, y, zoom } = flow.getViewport();
        const d = { ArrowRight: [-1, 0], ArrowLeft: [1, 0], ArrowDown: [0, -1], ArrowUp: [0, 1] }[event.key];
        if (d) void flow.setViewport({ x: x + d[0]! * PAN_STEP, y: y + d[1]! * PAN_STEP, zoom });
      }
    }
  };

  return (
    <div
      ref={box}
      className="graph-keys"
      tabIndex={0}
      role="group"
      aria-label="Lineage graph: Tab to a node, arrows move between nodes, Enter selects; with no node focused arrows pan; + and - zoom"
      aria-keyshortcuts="ArrowUp ArrowDown ArrowLeft ArrowRight Enter + -"
      onKeyDown={onKeyDown}
    >
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
        onMove={culled ? (_, viewport) => follow(viewport) : undefined}
        // A click handler also gives nodes pointer events (they are neither draggable nor selectable).
        onNodeClick={(_, node) => onSelect(node.id)}
        onlyRenderVisibleElements={culled}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        disableKeyboardA11y={false}
        minZoom={0.05}
        maxZoom={2}
      >
        <Background gap={24} size={1} color="#d9dce1" />
        {/* React Flow's own "fit view" fits the nodes it was given: only the part on screen. */}
        <Controls showInteractive={false} showFitView={false}>
          <ControlButton
            className="react-flow__controls-fitview"
            onClick={fitWhole}
            title="Fit View"
            aria-label="Fit View"
          >
            <svg viewBox="0 0 32 30" aria-hidden="true">
              <path d="M3.7 11.1V4.9c0-.7.5-1.2 1.2-1.2h6.2V0H4.9A4.9 4.9 0 0 0 0 4.9v6.2h3.7zM20.9 3.7h6.2c.7 0 1.2.5 1.2 1.2v6.2H32V4.9A4.9 4.9 0 0 0 27.1 0h-6.2v3.7zM28.3 18.9v6.2c0 .7-.5 1.2-1.2 1.2h-6.2V30h6.2a4.9 4.9 0 0 0 4.9-4.9v-6.2h-3.7zM11.1 26.3H4.9c-.7 0-1.2-.5-1.2-1.2v-6.2H0v6.2A4.9 4.9 0 0 0 4.9 30h6.2v-3.7z" />
            </svg>
          </ControlButton>
        </Controls>
        <GraphMinimap positions={laid.positions} colorOf={minimapColors} ariaLabel="Minimap of the whole graph" />
        {laid.bands ? (
          <ViewportPortal>
            {laid.bands.map((b) => (
              <div
                key={b.agentName}
                className="graph-band"
                style={{ transform: `translate(-8px, ${b.top - 8}px)`, height: b.height + 16 }}
              >
                <span className="graph-band-label">{b.agentName}</span>
              </div>
            ))}
            {(laid.ticks ?? []).map((t) => (
              <div key={t.x} className="graph-tick" style={{ transform: `translate(${t.x}px, 0px)` }}>
                {new Date(t.at).toLocaleString(undefined, {
                  month: "short",
                  day: "numeric",
                  hour: "2-digit",
                  minute: "2-digit",
                })}
              </div>
            ))}
          </ViewportPortal>
        ) : null}
      </ReactFlow>
    </div>
  );
}

function minimapColor(v: ViewNode): string {
  if (v.kind !== "snapshot") return "#9aa1ad";
  const n = v.node;
  if (n.degraded > 0) return "#b3261e";
  if (n.current) return "#1f7a4d";
  if (n.pins > 0) return "#2f5bd3";
  return n.state === "ready" ? "#57b382" : "#c4c8cf";
}
