// The HTTP request being answered, for its log line: the server starts one per request and the
// code that learns who is calling (agent token, session cookie) notes it here.
import { AsyncLocalStorage } from "node:async_hooks";

export interface RequestContext {
  /** Also sent back as the X-Request-Id header. */
  readonly id: string;
  agentId?: string;
  agentName?: string;
  userId?: string;
}

// Kept on globalThis: the Next app's bundle and the CLI's each carry a copy of this module, and
// a request `strata serve` started must be the one the app's route handlers annotate.
const STORAGE = Symbol.for("strata.requestContext");
const storage = (): AsyncLocalStorage<RequestContext> => {
  const g = globalThis as { [STORAGE]?: AsyncLocalStorage<RequestContext> };
  return (g[STORAGE] ??= new AsyncLocalStorage<RequestContext>());
};

/** Runs `answer` as the request `context` (everything it awaits sees the context). */
export function runInRequest<T>(context: RequestContext, answer: () => T): T {
  return storage().run(context, answer);
}

/** The request being answered, if any. */
export function currentRequest(): RequestContext | undefined {
  return storage().getStore();
}

/** Notes who the current request acts for (nothing happens outside a request). */
export function noteRequestIdentity(identity: { agentId: string; agentName: string } | { userId: string }): void {
  const context = storage().getStore();
  if (context) Object.assign(context, identity);
}
