// Runs dagre off the main thread for big graphs (graph-layout.ts posts here).
import { layoutGraph, type LayoutInput } from "./graph-layout.ts";

const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<{ id: number; input: LayoutInput }>) => void) | null;
  postMessage(message: unknown): void;
};

scope.onmessage = (event) => {
  const result = layoutGraph(event.data.input);
  scope.postMessage({ id: event.data.id, positions: [...result.positions], ms: result.ms });
};
