// Big layouts in a web worker, so expanding a 5,000-node graph never freezes the page. Kept
// apart from graph-layout.ts, which the worker itself imports.
import { layoutGraph, type LayoutInput, type Positioned } from "./graph-layout.ts";

let worker: Worker | null | undefined;
let nextRequest = 0;
const waiting = new Map<number, (result: Positioned) => void>();

function layoutWorker(): Worker | null {
  if (worker !== undefined) return worker;
  try {
    worker = new Worker(new URL("./graph-layout.worker.ts", import.meta.url), { type: "module" });
    worker.onmessage = (
      event: MessageEvent<{ id: number; positions: [string, { x: number; y: number }][]; ms: number }>,
    ) => {
      waiting.get(event.data.id)?.({ positions: new Map(event.data.positions), ms: event.data.ms });
      waiting.delete(event.data.id);
    };
  } catch {
    worker = null;
  }
  return worker;
}

/** Lays out in a web worker, so a big graph never freezes the page; on this thread if there is none. */
export function layoutGraphAsync(view: LayoutInput): Promise<Positioned> {
  const w = layoutWorker();
  if (!w) return Promise.resolve(layoutGraph(view));
  const id = (nextRequest += 1);
  const input: LayoutInput = {
    nodes: view.nodes.map((n) => ({ id: n.id })),
    edges: view.edges.map((e) => ({ source: e.source, target: e.target, kind: e.kind })),
  };
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    w.postMessage({ id, input });
  });
}
