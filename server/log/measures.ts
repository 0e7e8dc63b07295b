// What the process measures for /metrics: requests, acquires, the database statements acquires
// are coalesced into, job attempts, collection and sweep runs. Code reports a measure here; only
// a process that serves /metrics (strata serve) installs the sink (metrics.ts), so nothing else
// loads prom-client or keeps counters.

export type Measure =
  | { type: "request"; route: string; status: number; seconds: number }
  | { type: "acquire"; outcome: string; seconds: number }
  /** One set-based statement (PostgreSQL's acquire): how many requests it carried, its round trip. */
  | { type: "statement"; statement: "acquire"; outcome: "ok" | "error"; requests: number; seconds: number }
  | { type: "job"; kind: string; outcome: string; seconds: number }
  | { type: "run"; run: "collection" | "sweep"; outcome: string; seconds: number };

// On globalThis for the same reason as the logger: one sink per process, whichever bundle reports.
const SINK = Symbol.for("strata.measureSink");
type Sink = (measure: Measure) => void;
type Holder = { [SINK]?: Sink | null };

/** Records one measure (nothing when no sink is installed). */
export function measure(m: Measure): void {
  (globalThis as Holder)[SINK]?.(m);
}

/** Installs the sink measures go to (null removes it). */
export function setMeasureSink(sink: Sink | null): void {
  (globalThis as Holder)[SINK] = sink;
}
