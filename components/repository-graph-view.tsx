"use client";
// A repository's lineage graph: filters (agent, work context, state, time), folded chains that
// expand on demand, search and jump, focus on one node's ancestry, the current baseline of each
// key, and the selected node's detail beside it. The server filters and folds; everything the
// view shows is in the URL, so a view can be shared. Sets performance marks
// (strata:graph-data, strata:graph-rendered) that `npm run bench:ui` reads.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useSearchParams } from "next/navigation";
import { useCallback, useMemo, useRef, useState } from "react";
import { graphNodeLabel, nodeBadges, type CollapsedGroup, type GraphNode } from "~/server/domain/lineage-graph.ts";
import { GraphLegend } from "./graph-legend.tsx";
import { GraphSearch } from "./graph-search.tsx";
import { graphQueryInput, graphUrlSearch, readGraphUrlState, type GraphUrlState } from "./graph-url-state.ts";
import { Badges, LineageGraph } from "./lineage-graph.tsx";
import { QueryView, ShortId, StateBadge, When } from "./query-view.tsx";
import { RepositoryPoolView } from "./repository-pool-view.tsx";
import { RetireDialog } from "./retire-dialog.tsx";
import { useTRPC } from "./trpc.tsx";
import { useCan } from "./viewer.tsx";

const STATES = ["capturing", "ready", "superseded", "retired", "failed", "deleting", "deleted"];

function markOnce(name: string, detail?: unknown) {
  if (typeof performance === "undefined" || performance.getEntriesByName(name).length > 0) return;
  performance.mark(name, { detail });
}

export function RepositoryGraphView({ repositoryId }: { repositoryId: string }) {
  const trpc = useTRPC();
  const pathname = usePathname();
  const params = useSearchParams();
  // The view lives in the URL; a copy in state answers a click at once (a checkbox is checked
  // now, not after the navigation), and the URL is written with history.replaceState, which
  // Next's router follows without fetching the page again.
  const fromUrl = useMemo(() => readGraphUrlState(new URLSearchParams(params.toString())), [params]);
  const [url, setState] = useState(fromUrl);
  const [seen, setSeen] = useState(fromUrl);
  if (graphUrlSearch(fromUrl) !== graphUrlSearch(seen)) {
    // Back, forward, or a link to another view of this page.
    setSeen(fromUrl);
    setState(fromUrl);
  }
  const current = useRef(url);
  current.current = url;
  const setUrl = useCallback(
    (change: Partial<GraphUrlState>) => {
      const next = { ...current.current, ...change };
      current.current = next;
      setState(next);
      window.history.replaceState(window.history.state, "", `${pathname}${graphUrlSearch(next)}`);
    },
    [pathname],
  );

  const query = useQuery({
    ...trpc.dashboard.graph.queryOptions(graphQueryInput(repositoryId, url)),
    staleTime: 60_000,
    refetchOnWindowFocus: false,
    placeholderData: keepPreviousData,
  });
  const graph = query.data;
  // Marked while rendering: the moment the data is here, before anything is laid out.
  if (graph) markOnce("strata:graph-data", { nodes: graph.nodes.length, edges: graph.edges.length });

  const [retiring, setRetiring] = useState<{ kind: "lineage" | "snapshot"; id: string; label: string } | null>(null);
  const canRetire = useCan("retire");
  const onSelect = useCallback((id: string) => setUrl({ selected: id }), [setUrl]);
  const onFirstRender = useCallback((info: { layoutMs: number; nodes: number; edges: number }) => {
    markOnce("strata:graph-rendered", info);
  }, []);
  const contextIds = useMemo(() => new Set(graph?.contextIds ?? []), [graph]);
  const jump = useCallback(
    (id: string) => {
      setUrl({ selected: id, jump: id });
      showGraph();
    },
    [setUrl],
  );

  const selectedView = graph?.nodes.find((n) => n.id === url.selected);
  const selectedNode = selectedView?.kind === "snapshot" ? selectedView.node : null;
  const selectedGroup = selectedView?.kind === "group" ? selectedView.group : null;

  return (
    <QueryView query={query} isEmpty={(g) => g.totals.snapshots + g.totals.waitingForks === 0} empty={emptyGraph}>
      {(g) => (
        <>
          <h1>{g.repository.name}</h1>
          <p className="lede mono">{g.repository.identity}</p>
          <form className="filters" aria-label="Graph filters" onSubmit={(e) => e.preventDefault()}>
            <label>
              Agent
              <select value={url.agentId} onChange={(e) => setUrl({ agentId: e.target.value })}>
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
              <select value={url.workContextId} onChange={(e) => setUrl({ workContextId: e.target.value })}>
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
              <input type="date" value={url.from} onChange={(e) => setUrl({ from: e.target.value })} />
            </label>
            <label>
              To
              <input type="date" value={url.to} onChange={(e) => setUrl({ to: e.target.value })} />
            </label>
            <fieldset>
              <legend>States</legend>
              {STATES.map((s) => (
                <label key={s} className="check">
                  <input
                    type="checkbox"
                    checked={url.states.includes(s)}
                    onChange={(e) =>
                      setUrl({ states: e.target.checked ? [...url.states, s] : url.states.filter((x) => x !== s) })
                    }
                  />
                  {s}
                </label>
              ))}
            </fieldset>
            <div className="filter-actions">
              <button type="button" onClick={() => setUrl({ expandAll: !url.expandAll })} aria-pressed={url.expandAll}>
                {url.expandAll ? "Collapse long chains" : "Expand every chain"}
              </button>
              <button
                type="button"
                onClick={() => setUrl({ layout: url.layout === "lanes" ? "dag" : "lanes" })}
                aria-pressed={url.layout === "lanes"}
              >
                {url.layout === "lanes" ? "Untimed layout" : "Lanes on a time axis"}
              </button>
              <button
                type="button"
                onClick={() => setUrl({ agentId: "", workContextId: "", states: [], from: "", to: "", focus: "" })}
              >
                Clear filters
              </button>
            </div>
          </form>
          <GraphSearch repositoryId={g.repository.id} onJump={jump} />
          <CurrentBaselines baselines={g.currentBaselines} selected={url.selected} onJump={jump} />
          <p className="graph-summary" data-testid="graph-summary">
            {g.matched} of {g.totals.snapshots} snapshots shown as {g.nodes.length} nodes
            {g.totals.waitingForks > 0
              ? `, with ${g.totals.waitingForks} forked work contexts that have no checkpoint yet`
              : ""}
            .{" "}
            {g.wholeLineages
              ? "Long work contexts are folded whole; select one to expand it."
              : "Long chains are folded; select one to expand it."}
            {url.states.length > 0 ? " Snapshots in other states are folded into grey groups." : ""}
            {query.isFetching ? " Updating…" : ""}
          </p>
          {g.focus ? (
            <p className="graph-focus-note" role="status">
              Focus: only the ancestors and descendants of <ShortId id={g.focus} />.{" "}
              <button type="button" onClick={() => setUrl({ focus: "" })}>
                Show the whole graph
              </button>
            </p>
          ) : null}
          <GraphLegend />
          <div className="graph-layout">
            <div
              className="graph-canvas panel"
              data-testid="lineage-graph"
              data-graph-nodes={g.totals.snapshots}
              data-view-nodes={g.nodes.length}
              data-layout={url.layout}
            >
              {g.nodes.length > 0 ? (
                <LineageGraph
                  nodes={g.nodes}
                  edges={g.edges}
                  layout={url.layout}
                  contextIds={contextIds}
                  selectedId={url.selected || null}
                  focusId={g.focus}
                  onSelect={onSelect}
                  onFirstRender={onFirstRender}
                />
              ) : (
                <div className="status">No snapshot matches these filters.</div>
              )}
            </div>
            <aside className="graph-detail panel" aria-label="Selected node" aria-live="polite">
              {selectedNode ? (
                <NodeDetail
                  node={selectedNode}
                  focused={g.focus === selectedNode.id}
                  chainExpanded={url.expand.includes(selectedNode.chainId)}
                  onFocus={(on) => setUrl({ focus: on ? selectedNode.id : "" })}
                  onFold={() => setUrl({ expand: url.expand.filter((c) => c !== selectedNode.chainId) })}
                  onRetire={
                    canRetire && selectedNode.lineageId && selectedNode.lineageState === "active"
                      ? () =>
                          setRetiring({
                            kind: "lineage",
                            id: selectedNode.lineageId!,
                            label: `work context ${selectedNode.workContextId}`,
                          })
                      : null
                  }
                />
              ) : selectedGroup ? (
                <GroupDetail
                  group={selectedGroup}
                  onExpand={() =>
                    setUrl({
                      expand: [...new Set([...url.expand, selectedGroup.chainId])],
                      selected: selectedGroup.firstId,
                    })
                  }
                />
              ) : url.selected ? (
                <p className="muted">
                  The selected node is not in this view (filtered out or folded).{" "}
                  <button type="button" onClick={() => jump(url.selected)}>
                    Show it
                  </button>
                </p>
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

/** On a phone the canvas is above the detail and below the filters: bring it on screen. */
function showGraph() {
  // After the page has re-rendered (the detail beside or below the graph changes height).
  requestAnimationFrame(() => {
    const canvas = document.querySelector("[data-testid=lineage-graph]");
    const box = canvas?.getBoundingClientRect();
    if (box && (box.top < 0 || box.bottom > window.innerHeight)) canvas?.scrollIntoView({ block: "start" });
  });
}

function CurrentBaselines({
  baselines,
  selected,
  onJump,
}: {
  baselines: { snapshotId: string; agentName: string; canonicalRef: string | null; headCommit: string | null }[];
  selected: string;
  onJump: (id: string) => void;
}) {
  if (baselines.length === 0) return null;
  return (
    <section className="graph-current" aria-labelledby="graph-current-title">
      <h2 id="graph-current-title">Current baseline per key</h2>
      <p className="muted">What a new task for each agent and ref starts from now (the acquire&apos;s rule).</p>
      <ul>
        {baselines.map((b) => (
          <li key={b.snapshotId}>
            <button type="button" onClick={() => onJump(b.snapshotId)} aria-pressed={selected === b.snapshotId}>
              {b.agentName} · {(b.canonicalRef ?? "").replace(/^refs\/heads\//, "")} →{" "}
              <span className="mono">{b.headCommit?.slice(0, 7) ?? "?"}</span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

function NodeDetail({
  node,
  focused,
  chainExpanded,
  onFocus,
  onFold,
  onRetire,
}: {
  node: GraphNode;
  focused: boolean;
  chainExpanded: boolean;
  onFocus: (on: boolean) => void;
  onFold: () => void;
  onRetire: (() => void) | null;
}) {
  const badges = nodeBadges(node);
  const workContext = node.class === "work-context";
  return (
    <>
      <h2>{graphNodeLabel(node)}</h2>
      {badges.length > 0 ? (
        <p className="graph-detail-badges">
          <Badges badges={badges} pins={node.pins} />
        </p>
      ) : null}
      <dl className="facts">
        <dt>{workContext ? "Kind" : "Class"}</dt>
        <dd>{workContext ? "forked work context, no checkpoint yet" : node.class}</dd>
        {!workContext ? (
          <>
            <dt>State</dt>
            <dd>
              <StateBadge state={node.state} />
            </dd>
          </>
        ) : null}
        <dt>Agent</dt>
        <dd>{node.agentName}</dd>
        {node.class === "baseline" ? (
          <>
            <dt>Ref</dt>
            <dd className="mono">{node.canonicalRef}</dd>
            <dt>Current</dt>
            <dd>
              {node.current
                ? "yes: a new task for this agent and ref starts from it"
                : "no: a newer baseline of its key replaced it"}
            </dd>
          </>
        ) : (
          <>
            <dt>Work context</dt>
            <dd className="mono">{node.workContextId}</dd>
            <dt>Lineage</dt>
            <dd>
              <ShortId id={node.lineageId} /> ({node.lineageState})
            </dd>
          </>
        )}
        {!workContext ? (
          <>
            <dt>HEAD</dt>
            <dd>
              <ShortId id={node.headCommit} />
            </dd>
            <dt>Active pins</dt>
            <dd>{node.pins}</dd>
            <dt>Degraded restores</dt>
            <dd>{node.degraded}</dd>
            <dt>Last restored</dt>
            <dd>{node.lastRestoredAt ? <When at={new Date(node.lastRestoredAt)} /> : "never"}</dd>
          </>
        ) : null}
        <dt>{workContext ? "Forked" : "Created"}</dt>
        <dd>
          <When at={new Date(node.createdAt)} />
        </dd>
      </dl>
      <ul className="graph-actions">
        {!workContext ? (
          <li>
            <Link href={`/snapshots/${node.id}`}>Open snapshot</Link>
          </li>
        ) : null}
        {node.previousId && !workContext ? (
          <li>
            <Link href={`/diff?from=${encodeURIComponent(node.previousId)}&to=${encodeURIComponent(node.id)}`}>
              Diff with predecessor
            </Link>
          </li>
        ) : null}
        {workContext && node.previousId ? (
          <li>
            <Link href={`/snapshots/${node.previousId}`}>Open the checkpoint it was forked from</Link>
          </li>
        ) : null}
        <li>
          <button type="button" onClick={() => onFocus(!focused)} aria-pressed={focused}>
            {focused ? "Leave focus" : "Focus: ancestors and descendants"}
          </button>
        </li>
        {chainExpanded ? (
          <li>
            <button type="button" onClick={onFold}>
              Fold this chain again
            </button>
          </li>
        ) : null}
      </ul>
      {workContext ? <p className="muted">Its first acquire restores that checkpoint.</p> : null}
      {onRetire ? (
        <button type="button" className="danger" onClick={onRetire}>
          Retire lineage…
        </button>
      ) : null}
    </>
  );
}

function GroupDetail({ group, onExpand }: { group: CollapsedGroup; onExpand: () => void }) {
  const marks = Object.entries(group.marks).filter(([, c]) => c > 0);
  return (
    <>
      <h2>
        {group.count} {group.filteredOut ? "filtered-out" : "folded"} {group.class}s
      </h2>
      <p>
        {group.workContextId ? `Work context ${group.workContextId}, ` : ""}
        {group.agentName}; from <When at={new Date(group.from)} /> to <When at={new Date(group.to)} />.
      </p>
      <p>
        {Object.entries(group.states)
          .map(([s, c]) => `${c} ${s}`)
          .join(", ")}
      </p>
      {marks.length > 0 ? <p>Inside: {marks.map(([b, c]) => `${c} ${b.replace("-", " ")}`).join(", ")}.</p> : null}
      {group.filteredOut ? (
        <p className="muted">Outside the state filter; clear it to see them.</p>
      ) : (
        <button type="button" className="primary" onClick={onExpand}>
          Expand this chain
        </button>
      )}
    </>
  );
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
