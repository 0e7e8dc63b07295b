// Which nodes and edges of a laid-out graph React Flow is given: those inside the viewport plus
// a margin, computed from our own layout positions. React Flow ingests (measures, stores, diffs)
// every node it is handed, even with onlyRenderVisibleElements; an expanded 5,000-node graph
// handed whole took seconds. Culled here, a pan or zoom that leaves the margin asks for a new
// window, and nothing else changes: every node keeps its position, and the minimap, search,
// keyboard moves and selection read the layout, not React Flow's store.
import { NODE_HEIGHT, NODE_WIDTH } from "./graph-layout.ts";

/** A rectangle in the layout's coordinates. */
export interface Rect {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export interface ViewportState {
  x: number;
  y: number;
  zoom: number;
}

/** The box around every laid-out node (null when there is none). */
export function layoutBounds(positions: ReadonlyMap<string, { x: number; y: number }>): Rect | null {
  let left = Infinity;
  let top = Infinity;
  let right = -Infinity;
  let bottom = -Infinity;
  for (const p of positions.values()) {
    left = Math.min(left, p.x);
    top = Math.min(top, p.y);
    right = Math.max(right, p.x + NODE_WIDTH);
    bottom = Math.max(bottom, p.y + NODE_HEIGHT);
  }
  return Number.isFinite(left) ? { left, top, right, bottom } : null;
}

/** The part of the layout on screen: React Flow's viewport over a width × height canvas. */
export function visibleRect(viewport: ViewportState, width: number, height: number): Rect {
  const left = (0 - viewport.x) / viewport.zoom;
  const top = (0 - viewport.y) / viewport.zoom;
  return { left, top, right: left + width / viewport.zoom, bottom: top + height / viewport.zoom };
}

/** `rect` grown by `fraction` of its own size on every side. */
export function padRect(rect: Rect, fraction: number): Rect {
  const dx = (rect.right - rect.left) * fraction;
  const dy = (rect.bottom - rect.top) * fraction;
  return { left: rect.left - dx, top: rect.top - dy, right: rect.right + dx, bottom: rect.bottom + dy };
}

export function containsRect(outer: Rect, inner: Rect): boolean {
  return (
    inner.left >= outer.left && inner.top >= outer.top && inner.right <= outer.right && inner.bottom <= outer.bottom
  );
}

function nodeMeets(p: { x: number; y: number }, r: Rect): boolean {
  return p.x + NODE_WIDTH >= r.left && p.x <= r.right && p.y + NODE_HEIGHT >= r.top && p.y <= r.bottom;
}

/**
 * The ids of the nodes meeting `window`, the edges with an end in it or crossing it (the box
 * between their ends meets it), and the far ends of those edges (React Flow draws an edge only
 * between nodes it has). `keep` is always included (the selection, the focused node).
 */
export function cullGraph(
  positions: ReadonlyMap<string, { x: number; y: number }>,
  edges: readonly { id: string; source: string; target: string }[],
  window: Rect,
  keep: Iterable<string> = [],
): { nodeIds: Set<string>; edgeIds: Set<string> } {
  const nodeIds = new Set<string>();
  for (const [id, p] of positions) if (nodeMeets(p, window)) nodeIds.add(id);
  for (const id of keep) if (positions.has(id)) nodeIds.add(id);
  const edgeIds = new Set<string>();
  const ends: string[] = [];
  for (const e of edges) {
    const a = positions.get(e.source);
    const b = positions.get(e.target);
    if (!a || !b) continue;
    let take = nodeIds.has(e.source) || nodeIds.has(e.target);
    if (!take) {
      const box = {
        left: Math.min(a.x, b.x),
        top: Math.min(a.y, b.y),
        right: Math.max(a.x, b.x) + NODE_WIDTH,
        bottom: Math.max(a.y, b.y) + NODE_HEIGHT,
      };
      take =
        box.right >= window.left && box.left <= window.right && box.bottom >= window.top && box.top <= window.bottom;
    }
    if (!take) continue;
    edgeIds.add(e.id);
    ends.push(e.source, e.target);
  }
  for (const id of ends) nodeIds.add(id);
  return { nodeIds, edgeIds };
}
