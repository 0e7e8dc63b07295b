// What the process measures for /metrics: requests, acquires, the database statements acquires
// are coalesced into, job attempts, lease expiries and hand-backs, collection and sweep runs.
// Code reports a measure here; only a process that serves /metrics (`strata serve`, or `strata
// worker` given a metrics port) installs the sink (metrics.ts), so nothing else loads prom-client
// or keeps counters.

export type Measure =
  | { type: "request"; route: string; status: number; seconds: number }
  | { type: "acquire"; outcome: string; seconds: number }
  /** One set-based statement (PostgreSQL's acquire): how many requests it carried, its round trip. */
  | { type: "statement"; statement: "acquire"; outcome: "ok" | "error"; requests: number; seconds: number }
  /** One job attempt a worker of `host` ended. */
  | { type: "job"; kind: string; outcome: string; host: string; seconds: number }
  /**
   * Claims a worker of `host` ended for another worker: `expired` (their lease passed; any worker's
   * housekeeping) or `reclaimed` (their process is gone; a worker of the same host).
   */
  | { type: "claims"; event: "expired" | "reclaimed"; host: string; count: number }
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
