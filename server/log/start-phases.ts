// Where a long-running process's start went: named marks on Node's performance timeline, in ms
// since the process began (performance.timeOrigin), so the line that says a worker or server is
// ready can say what it waited for. A mark costs about a microsecond; nothing is kept but them.
import { performance } from "node:perf_hooks";

const PREFIX = "strata:start:";

/** Records that the process has reached `phase` now (the first mark of a phase counts). */
export function markStart(phase: string): void {
  performance.mark(`${PREFIX}${phase}`);
}

/**
 * Each phase reached so far, in the order reached, as ms since the process began; `node` is
 * when Node's own start was done (before the first line of strata ran).
 */
export function startPhases(): Record<string, number> {
  const phases: Record<string, number> = { node: Math.round(performance.nodeTiming.bootstrapComplete) };
  for (const mark of performance.getEntriesByType("mark")) {
    if (!mark.name.startsWith(PREFIX)) continue;
    const phase = mark.name.slice(PREFIX.length);
    if (!(phase in phases)) phases[phase] = Math.round(mark.startTime);
  }
  return phases;
}
