// The graph page's view as URL search parameters, so a view can be shared: filters, expanded
// chains, focus, the selection, a search's jump and the layout. Plain functions, no React.
import type { GraphLayoutKind } from "./lineage-graph.tsx";

export interface GraphUrlState {
  agentId: string;
  workContextId: string;
  states: string[];
  /** YYYY-MM-DD, UTC days. */
  from: string;
  to: string;
  expand: string[];
  expandAll: boolean;
  focus: string;
  selected: string;
  /** A node drawn on its own even inside a folded chain (set by a search or a jump). */
  jump: string;
  layout: GraphLayoutKind;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function readGraphUrlState(params: URLSearchParams): GraphUrlState {
  const day = (v: string | null) => (v && DAY.test(v) ? v : "");
  return {
    agentId: params.get("agent") ?? "",
    workContextId: params.get("workContext") ?? "",
    states: (params.get("states") ?? "").split(",").filter(Boolean),
    from: day(params.get("from")),
    to: day(params.get("to")),
    expand: params.getAll("expand"),
    expandAll: params.get("all") === "1",
    focus: params.get("focus") ?? "",
    selected: params.get("node") ?? "",
    jump: params.get("jump") ?? "",
    layout: params.get("layout") === "dag" ? "dag" : "lanes",
  };
}

export function graphUrlSearch(state: GraphUrlState): string {
  const p = new URLSearchParams();
  if (state.agentId) p.set("agent", state.agentId);
  if (state.workContextId) p.set("workContext", state.workContextId);
  if (state.states.length > 0) p.set("states", state.states.join(","));
  if (state.from) p.set("from", state.from);
  if (state.to) p.set("to", state.to);
  for (const chain of state.expand) p.append("expand", chain);
  if (state.expandAll) p.set("all", "1");
  if (state.focus) p.set("focus", state.focus);
  if (state.selected) p.set("node", state.selected);
  if (state.jump) p.set("jump", state.jump);
  if (state.layout === "dag") p.set("layout", "dag");
  const text = p.toString();
  return text ? `?${text}` : "";
}

function dayStart(value: string): number | undefined {
  return value ? new Date(`${value}T00:00:00Z`).getTime() : undefined;
}

function dayEnd(value: string): number | undefined {
  return value ? new Date(`${value}T23:59:59.999Z`).getTime() : undefined;
}

/** The graph procedure's input for a view. */
export function graphQueryInput(repositoryId: string, s: GraphUrlState) {
  return {
    repositoryId,
    ...(s.agentId ? { agentId: s.agentId } : {}),
    ...(s.workContextId ? { workContextId: s.workContextId } : {}),
    ...(s.states.length > 0 ? { states: s.states as ("ready" | "superseded")[] } : {}),
    ...(s.from ? { from: dayStart(s.from) } : {}),
    ...(s.to ? { to: dayEnd(s.to) } : {}),
    ...(s.expand.length > 0 ? { expand: s.expand } : {}),
    ...(s.expandAll ? { expandAll: true } : {}),
    ...(s.focus ? { focus: s.focus } : {}),
    ...(s.jump ? { reveal: [s.jump] } : {}),
  };
}
