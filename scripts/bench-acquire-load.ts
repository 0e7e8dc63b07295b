// bench:acquire's load generator, shared by the in-process runs (scripts/bench-acquire.ts) and
// the HTTP clients' process (scripts/bench-acquire-clients.ts): which acquire request i is, and
// closed-loop or paced clients driving an acquire function while timing each call.
import { performance } from "node:perf_hooks";
import type { AcquireWorkspaceInput } from "../server/acquire/acquire-workspace.ts";
import type { RestorePlan } from "../server/domain/views.ts";

export const AGENTS = 10;

export interface Shape {
  repositories: number;
  baselineKeys: number;
  lineages: number;
}

type Kind = "resume" | "new" | "cold";

/** Half resume an existing work context, 40% start new work on a baselined key, 10% start cold. */
function request(i: number, shape: Shape) {
  const roll = (i * 7919) % 10;
  const kind: Kind = roll < 5 ? "resume" : roll < 9 ? "new" : "cold";
  if (kind === "resume") {
    const l = (i * 104_729) % shape.lineages;
    return {
      kind,
      agent: l % AGENTS,
      repository: (Math.floor(l / AGENTS) % shape.repositories) as number,
      workContextId: `wc-${l}`,
      canonicalRef: "main",
    };
  }
  const k = (i * 15_485_863) % shape.baselineKeys;
  return {
    kind,
    agent: k % AGENTS,
    repository: Math.floor(k / AGENTS),
    workContextId: undefined,
    canonicalRef: kind === "cold" ? "never-published" : "main",
  };
}

/** Closed loop: each client starts its next acquire as soon as one returns. Paced: acquire i is due at i / rate. */
export interface Load {
  clients: number;
  /** Acquires per second in total, or null for closed loops. */
  rate: number | null;
}

/** One acquire as the bench's request i asks it, by agent number. */
export type Acquire = (agent: number, input: AcquireWorkspaceInput) => Promise<RestorePlan>;

export interface LoadResult {
  /** Each acquire's latency in ms, in the order they finished. */
  latencies: number[];
  /** Acquires by the rung of the plan they got. */
  rungs: Record<string, number>;
  elapsedMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs acquires offset … offset + total - 1 with `load.clients` concurrent clients. */
export async function runLoad(acquire: Acquire, shape: Shape, load: Load, total: number, offset: number) {
  const { clients, rate } = load;
  const latencies: number[] = [];
  const rungs: Record<string, number> = { checkpoint: 0, baseline: 0, cold: 0 };
  let next = 0;
  const started = performance.now();
  async function client(): Promise<void> {
    for (;;) {
      const i = next++;
      if (i >= total) return;
      const r = request(offset + i, shape);
      // A paced acquire counts from when it was due, so waiting for a free client is latency too
      // (or from when it started, if the timer fired a little early).
      const due = rate === null ? null : started + (i * 1000) / rate;
      if (due !== null && due > performance.now()) await sleep(due - performance.now());
      const t0 = Math.min(due ?? Infinity, performance.now());
      const plan = await acquire(r.agent, {
        repository: { identity: `bench.test/acme/repo-${r.repository}` },
        backendKind: "modal",
        baseImage: "img-1",
        canonicalRef: r.canonicalRef,
        workContextId: r.workContextId,
        workspace: `/bench/${offset + i}`,
        host: "bench",
      });
      latencies.push(performance.now() - t0);
      rungs[plan.rung] = (rungs[plan.rung] ?? 0) + 1;
    }
  }
  await Promise.all(Array.from({ length: clients }, () => client()));
  return { latencies, rungs, elapsedMs: performance.now() - started } satisfies LoadResult;
}
