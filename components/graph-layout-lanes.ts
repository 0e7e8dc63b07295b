// The default layout of the lineage graph: lanes on a time axis, as GitHub's network graph
// draws branches. Each agent has a band; each chain (a work context's lineage, a baseline key)
// runs in one lane of its agent's band, and a lane is reused once its chain has ended. Columns
// follow creation time (never backwards), so what happened at the same time lines up, and an
// edge always points right. Linear in the number of nodes: 5,000 nodes lay out in milliseconds.
import { NODE_HEIGHT, NODE_WIDTH, type Positioned } from "./graph-layout.ts";

const LANE_GAP = 26;
const COLUMN_GAP = 100;
const BAND_GAP = 40;
const MARGIN = 16;

/** What the lane layout needs of a view node. */
export interface LaneItem {
  id: string;
  chainId: string;
  agentId: string;
  agentName: string;
  /** When it (or a folded group's oldest member) was created, ms. */
  at: number;
}

export interface LaneBand {
  agentName: string;
  top: number;
  height: number;
}

export interface LaneTick {
  x: number;
  at: number;
}

export interface LaneLayout extends Positioned {
  bands: LaneBand[];
  /** Times along the top, at most one per few columns. */
  ticks: LaneTick[];
}

export function layoutLanes(
  items: readonly LaneItem[],
  edges: readonly { source: string; target: string }[],
): LaneLayout {
  const started = performance.now();
  const order = [...items].sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const lastOfChain = new Map<string, string>();
  for (const item of order) lastOfChain.set(item.chainId, item.id);
  const sources = new Map<string, string[]>();
  for (const e of edges) {
    const list = sources.get(e.target);
    if (list) list.push(e.source);
    else sources.set(e.target, [e.source]);
  }

  interface Lane {
    lastColumn: number;
    ended: boolean;
  }
  const lanesOfAgent = new Map<string, Lane[]>();
  const laneOfChain = new Map<string, { lane: Lane; index: number }>();
  const column = new Map<string, number>();
  const laneIndex = new Map<string, number>();
  const columnTimes: number[] = [];
  let floor = 0;
  for (const item of order) {
    let c = floor;
    const own = laneOfChain.get(item.chainId);
    if (own) c = Math.max(c, own.lane.lastColumn + 1);
    for (const s of sources.get(item.id) ?? []) {
      const sc = column.get(s);
      if (sc !== undefined) c = Math.max(c, sc + 1);
    }
    let placed = own;
    if (!placed) {
      const lanes = lanesOfAgent.get(item.agentId) ?? [];
      lanesOfAgent.set(item.agentId, lanes);
      const free = lanes.findIndex((l) => l.ended && l.lastColumn < c);
      if (free >= 0) {
        lanes[free]!.ended = false;
        placed = { lane: lanes[free]!, index: free };
      } else {
        lanes.push({ lastColumn: -1, ended: false });
        placed = { lane: lanes.at(-1)!, index: lanes.length - 1 };
      }
      laneOfChain.set(item.chainId, placed);
    }
    placed.lane.lastColumn = c;
    if (lastOfChain.get(item.chainId) === item.id) {
      placed.lane.ended = true;
      laneOfChain.delete(item.chainId);
    }
    column.set(item.id, c);
    laneIndex.set(item.id, placed.index);
    columnTimes[c] ??= item.at;
    floor = c;
  }

  // Bands in agent-name order, each as tall as its lanes.
  const agents = [...new Map(items.map((i) => [i.agentId, i.agentName])).entries()].sort((a, b) =>
    a[1].localeCompare(b[1]),
  );
  const bandTop = new Map<string, number>();
  const bands: LaneBand[] = [];
  let y = MARGIN + 28;
  for (const [agentId, agentName] of agents) {
    const lanes = lanesOfAgent.get(agentId)?.length ?? 1;
    const height = lanes * (NODE_HEIGHT + LANE_GAP) - LANE_GAP;
    bandTop.set(agentId, y);
    bands.push({ agentName, top: y, height });
    y += height + BAND_GAP;
  }
  const step = NODE_WIDTH + COLUMN_GAP;
  const positions = new Map<string, { x: number; y: number }>();
  for (const item of items) {
    positions.set(item.id, {
      x: MARGIN + (column.get(item.id) ?? 0) * step,
      y: (bandTop.get(item.agentId) ?? 0) + (laneIndex.get(item.id) ?? 0) * (NODE_HEIGHT + LANE_GAP),
    });
  }
  const ticks: LaneTick[] = [];
  const every = Math.max(1, Math.ceil(columnTimes.length / 200));
  for (let c = 0; c < columnTimes.length; c += every) {
    const at = columnTimes[c];
    if (at !== undefined) ticks.push({ x: MARGIN + c * step, at });
  }
  return { positions, bands, ticks, ms: performance.now() - started };
}
