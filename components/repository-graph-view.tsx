"use client";
// A repository's lineage graph with filters (agent, work context, state, time), collapsed
// chains that expand on click, and the clicked node's detail beside it. Sets performance
// marks (strata:graph-data, strata:graph-rendered) that `npm run bench:ui` reads.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useCallback, useMemo, useState } from "react";
import { collapseChains, filterGraph, type GraphFilter } from "~/server/domain/lineage-graph.ts";
import { LineageGraph, nodeLabel } from "./lineage-graph.tsx";
import { QueryView, ShortId, StateBadge, When } from "./query-view.tsx";
import { RepositoryPoolView } from "./repository-pool-view.tsx";
import { RetireDialog } from "./retire-dialog.tsx";
import { useTRPC } from "./trpc.tsx";
import { useCan } from "./viewer.tsx";

/** Above this many nodes after folding chain middles, long work contexts fold whole. */
const MAX_FOLDED_NODES = 250;

const STATES = ["capturing", "ready", "superseded", "retired", "failed", "deleting", "deleted"];

function markOnce(name: string, detail?: unknown) {
  if (typeof performance === "undefined" || performance.getEntriesByName(name).length > 0) return;
  performance.mark(name, { detail });
}

function dayStart(value: string): number | null {
  return value ? new Date(`${value}T00:00:00Z`).getTime() : null;
}

function dayEnd(value: string): number | null {
  return value ? new Date(`${value}T23:59:59.999Z`).getTime() : null;
}

export function RepositoryGraphView({
  repositoryId,
  initialWorkContext = "",
}: {
  repositoryId: string;
  initialWorkContext?: string;
}) {
  const trpc = useTRPC();
  const query = useQuery({
    ...trpc.dashboard.graph.queryOptions({ repositoryId }),
    staleTime: 60_000,
    refetchOnWindowFocus: false,
  });
  const graph = query.data;
  // Marked while rendering: the moment the data is here, before anything is laid out.
  if (graph) markOnce("strata:graph-data", { nodes: graph.nodes.length, edges: graph.edges.length });

  const [agentId, setAgentId] = useState("");
  const [workContextId, setWorkContextId] = useState(initialWorkContext);
  const [states, setStates] = useState<string[]>([]);
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const [expandAll, setExpandAll] = useState(false);
  const [selectedId, setSelectedId] = useState<string | null>(null);
  const [retiring, setRetiring] = useState<{ kind: "lineage" | "snapshot"; id: string; label: string } | null>(null);
  const canRetire = useCan("retire");

  const filter: GraphFilter = useMemo(
    () => ({ agentId, workContextId, states, from: dayStart(from), to: dayEnd(to) }),
    [agentId, workContextId, states, from, to],
  );
  const filtered = useMemo(() => (graph ? filterGraph(graph, filter) : null), [graph, filter]);
  const allChains = useMemo(() => new Set(filtered?.nodes.map((n) => n.chainId) ?? []), [filtered]);
  const view = useMemo(() => {
    if (!filtered) return null;
    const options = { expanded: expandAll ? allChains : expanded };
    const folded = collapseChains(filtered, options);
    // Still too many nodes to lay out and draw quickly: fold long work contexts whole.
    return folded.nodes.length > MAX_FOLDED_NODES && !expandAll
      ? { ...collapseChains(filtered, { ...options, foldWholeLineages: true }), wholeLineages: true }
      : { ...folded, wholeLineages: false };
  }, [filtered, expanded, expandAll, allChains]);
  const onSelect = useCallback((id: string) => setSelectedId(id), []);
  const onFirstRender = useCallback((info: { layoutMs: number; nodes: number; edges: number }) => {
    markOnce("strata:graph-rendered", info);
  }, []);

  const selectedNode = graph?.nodes.find((n) => n.id === selectedId) ?? null;
  // A forked work context without checkpoints: the fork edge into it names its checkpoint.
  const forkedFrom =
    selectedNode?.class === "work-context"
      ? (graph?.edges.find((e) => e.kind === "fork" && e.target === selectedNode.id)?.source ?? null)
      : null;
  const selectedView = view?.nodes.find((n) => n.id === selectedId);
  const selectedGroup = selectedView?.kind === "group" ? selectedView.group : null;

  return (
    <QueryView query={query} isEmpty={(g) => g.nodes.length === 0} empty={emptyGraph}>
      {(g) => (
        <>
          <h1>{g.repository.name}</h1>
          <p className="lede mono">{g.repository.identity}</p>
          <form className="filters" aria-label="Graph filters" onSubmit={(e) => e.preventDefault()}>
            <label>
              Agent
              <select value={agentId} onChange={(e) => setAgentId(e.target.value)}>
                <option value="">All agents</option>
                {g.agents.map((a) => (
                  <option key={a.id} value={a.id}>
                    {a.name}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Work context
              <select value={workContextId} onChange={(e) => setWorkContextId(e.target.value)}>
                <option value="">All work contexts</option>
                {g.workContexts.map((w) => (
                  <option key={w} value={w}>
                    {w}
                  </option>
                ))}
              </select>
            </label>
            <label>
              From
              <input type="date" value={from} onChange={(e) => setFrom(e.target.value)} />
            </label>
            <label>
              To
              <input type="date" value={to} onChange={(e) => setTo(e.target.value)} />
            </label>
            <fieldset>
              <legend>States</legend>
              {STATES.map((s) => (
                <label key={s} className="check">
                  <input
                    type="checkbox"
                    checked={states.includes(s)}
                    onChange={(e) => setStates((cur) => (e.target.checked ? [...cur, s] : cur.filter((x) => x !== s)))}
                  />
                  {s}
                </label>
              ))}
            </fieldset>
            <div className="filter-actions">
              <button type="button" onClick={() => setExpandAll((v) => !v)} aria-pressed={expandAll}>
                {expandAll ? "Collapse long chains" : "Expand every chain"}
              </button>
              <button
                type="button"
                onClick={() => {
                  setAgentId("");
                  setWorkContextId("");
                  setStates([]);
                  setFrom("");
                  setTo("");
                }}
              >
                Clear filters
              </button>
            </div>
          </form>
          <p className="graph-summary" data-testid="graph-summary">
            {snapshotCount(filtered?.nodes ?? [])} of {snapshotCount(g.nodes)} snapshots shown as{" "}
            {view?.nodes.length ?? 0} nodes
            {g.truncated ? " (the newest only: this repository has more)" : ""}
            {g.nodes.length > snapshotCount(g.nodes)
              ? `, with ${g.nodes.length - snapshotCount(g.nodes)} forked work contexts that have no checkpoint yet`
              : ""}
            . Long chains are folded; click one to expand it.
          </p>
          <GraphLegend />
          <div className="graph-layout">
            <div
              className="graph-canvas panel"
              data-testid="lineage-graph"
              data-graph-nodes={snapshotCount(g.nodes)}
              data-view-nodes={view?.nodes.length ?? 0}
            >
              {view && view.nodes.length > 0 ? (
                <LineageGraph
                  view={view}
                  contextIds={filtered?.contextIds ?? new Set()}
                  selectedId={selectedId}
                  onSelect={onSelect}
                  onFirstRender={onFirstRender}
                />
              ) : (
                <div className="status">No snapshot matches these filters.</div>
              )}
            </div>
            <aside className="graph-detail panel" aria-label="Selected node" aria-live="polite">
              {selectedNode?.class === "work-context" ? (
                <>
                  <h2>{nodeLabel(selectedNode)}</h2>
                  <dl className="facts">
                    <dt>Kind</dt>
                    <dd>forked work context, no checkpoint yet</dd>
                    <dt>Lineage</dt>
                    <dd>
                      <ShortId id={selectedNode.lineageId} /> ({selectedNode.lineageState})
                    </dd>
                    <dt>Agent</dt>
                    <dd>{selectedNode.agentName}</dd>
                    <dt>Forked</dt>
                    <dd>
                      <When at={new Date(selectedNode.createdAt)} />
                    </dd>
                  </dl>
                  {forkedFrom ? (
                    <p>
                      <Link href={`/snapshots/${forkedFrom}`}>Open the checkpoint it was forked from</Link>
                    </p>
                  ) : null}
                  <p className="muted">Its first acquire restores that checkpoint.</p>
                  {canRetire && selectedNode.lineageId && selectedNode.lineageState === "active" ? (
                    <button
                      type="button"
                      className="danger"
                      onClick={() =>
                        setRetiring({
                          kind: "lineage",
                          id: selectedNode.lineageId!,
                          label: `work context ${selectedNode.workContextId}`,
                        })
                      }
                    >
                      Retire lineage…
                    </button>
                  ) : null}
                </>
              ) : selectedNode ? (
                <>
                  <h2>{nodeLabel(selectedNode)}</h2>
                  <dl className="facts">
                    <dt>Class</dt>
                    <dd>{selectedNode.class}</dd>
                    <dt>State</dt>
                    <dd>
                      <StateBadge state={selectedNode.state} />
                    </dd>
                    <dt>Agent</dt>
                    <dd>{selectedNode.agentName}</dd>
                    {selectedNode.class === "baseline" ? (
                      <>
                        <dt>Ref</dt>
                        <dd className="mono">{selectedNode.canonicalRef}</dd>
                      </>
                    ) : (
                      <>
                        <dt>Work context</dt>
                        <dd className="mono">{selectedNode.workContextId}</dd>
                        <dt>Lineage</dt>
                        <dd>
                          <ShortId id={selectedNode.lineageId} /> ({selectedNode.lineageState})
                        </dd>
                      </>
                    )}
                    <dt>HEAD</dt>
                    <dd>
                      <ShortId id={selectedNode.headCommit} />
                    </dd>
                    <dt>Created</dt>
                    <dd>
                      <When at={new Date(selectedNode.createdAt)} />
                    </dd>
                  </dl>
                  <p>
                    <Link href={`/snapshots/${selectedNode.id}`}>Open snapshot</Link>
                  </p>
                  {canRetire && selectedNode.lineageId && selectedNode.lineageState === "active" ? (
                    <button
                      type="button"
                      className="danger"
                      onClick={() =>
                        setRetiring({
                          kind: "lineage",
                          id: selectedNode.lineageId!,
                          label: `work context ${selectedNode.workContextId}`,
                        })
                      }
                    >
                      Retire lineage…
                    </button>
                  ) : null}
                </>
              ) : selectedGroup ? (
                <>
                  <h2>
                    {selectedGroup.memberIds.length} folded {selectedGroup.class}s
                  </h2>
                  <p>
                    {selectedGroup.workContextId ? `Work context ${selectedGroup.workContextId}, ` : ""}
                    {selectedGroup.agentName}; from <When at={new Date(selectedGroup.from)} /> to{" "}
                    <When at={new Date(selectedGroup.to)} />.
                  </p>
                  <p>
                    {Object.entries(selectedGroup.states)
                      .map(([s, c]) => `${c} ${s}`)
                      .join(", ")}
                  </p>
                  <button
                    type="button"
                    className="primary"
                    onClick={() => {
                      setExpanded((cur) => new Set([...cur, selectedGroup.chainId]));
                      setSelectedId(selectedGroup.memberIds[0] ?? null);
                    }}
                  >
                    Expand this chain
                  </button>
                </>
              ) : (
                <p className="muted">Select a node to see its detail.</p>
              )}
            </aside>
          </div>
          <RepositoryPoolView repositoryId={g.repository.id} />
          {retiring ? (
            <RetireDialog
              kind={retiring.kind}
              id={retiring.id}
              label={retiring.label}
              onClose={() => setRetiring(null)}
            />
          ) : null}
        </>
      )}
    </QueryView>
  );
}

/** Snapshots among graph nodes (a forked work context without checkpoints is none). */
function snapshotCount(nodes: readonly { class: string }[]): number {
  return nodes.filter((n) => n.class !== "work-context").length;
}

const emptyGraph = {
  title: "No snapshots in this repository yet",
  body: (
    <p>
      Its graph appears once an agent publishes a baseline or appends a checkpoint: baselines in supersession chains,
      each work context&apos;s checkpoints, and where each lineage was seeded from.
    </p>
  ),
};

function GraphLegend() {
  return (
    <ul className="legend" aria-label="Legend">
      <li>
        <span className="swatch state-ready" /> ready
      </li>
      <li>
        <span className="swatch state-superseded" /> superseded
      </li>
      <li>
        <span className="swatch state-retired" /> retired
      </li>
      <li>
        <span className="swatch state-capturing" /> capturing
      </li>
      <li>
        <span className="swatch state-deleted" /> failed / deleting / deleted
      </li>
      <li>
        <span className="line chain" /> checkpoint chain
      </li>
      <li>
        <span className="line supersedes" /> superseded by
      </li>
      <li>
        <span className="line seeded" /> seeded from
      </li>
      <li>
        <span className="line degraded" /> degraded from
      </li>
      <li>
        <span className="line fork" /> forked from
      </li>
    </ul>
  );
}
