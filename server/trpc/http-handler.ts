// The app's tRPC over HTTP, in one function: the Next route serves it and tests call it, so
// tests exercise exactly what the app answers.
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { Context } from "./init.ts";
import { appRouter } from "./root.ts";

export const TRPC_ENDPOINT = "/api/trpc";

export async function handleTrpcRequest(
  req: Request,
  createContext: (req: Request) => Context | Promise<Context>,
): Promise<Response> {
  const response = await fetchRequestHandler({
    endpoint: TRPC_ENDPOINT,
    req,
    router: appRouter,
    maxBatchSize: 50,
    createContext: () => createContext(req),
  });
  // tRPC labels a few early refusals (e.g. an unsupported content type) text/plain; every
  // answer here is JSON.
  if (!response.headers.get("content-type")?.includes("application/json")) {
    response.headers.set("content-type", "application/json");
  }
  return response;
}
