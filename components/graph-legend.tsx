// The lineage graph's legend: every node kind, state colour, badge and edge style the drawing uses.
import { BADGE_TEXT } from "./lineage-graph.tsx";

const BADGE_MEANING = {
  current: "the baseline a new task for its key gets now",
  pinned: "held by an active pin (a restore in flight, a partial-restore or live hold, support)",
  degraded: "a restore from it came back degraded",
  "last-restored": "the snapshot most recently restored in this repository",
  "retired-held": "retired, but a pin still keeps its content from collection",
} as const;

export function GraphLegend() {
  return (
    <details className="graph-legend" open>
      <summary>Legend</summary>
      <ul className="legend" aria-label="Legend: nodes">
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
          <span className="swatch graph-swatch-baseline" /> baseline (thick top edge)
        </li>
        <li>
          <span className="swatch graph-swatch-work-context" /> forked work context, no checkpoint yet (dashed)
        </li>
        <li>
          <span className="swatch graph-swatch-group" /> folded run of a chain (hatched; select to expand)
        </li>
        <li>
          <span className="swatch graph-swatch-filtered" /> filtered out by state (grey hatched)
        </li>
        <li>
          <span className="swatch graph-swatch-context" /> shown as context of a filter (faded, dashed)
        </li>
      </ul>
      <ul className="legend" aria-label="Legend: badges">
        {(Object.keys(BADGE_MEANING) as (keyof typeof BADGE_MEANING)[]).map((b) => (
          <li key={b}>
            <span className={`graph-badge graph-badge-${b}`}>{BADGE_TEXT[b]}</span> {BADGE_MEANING[b]}
          </li>
        ))}
      </ul>
      <ul className="legend" aria-label="Legend: edges">
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
    </details>
  );
}
