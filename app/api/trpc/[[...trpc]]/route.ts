// Every path under /api/trpc, /api/trpc itself included, reaches tRPC, so even a request that
// names no procedure (or uses a method tRPC does not serve) gets a typed JSON error.
import { handleTrpcRequest } from "~/server/trpc/http-handler.ts";
import { createContext } from "~/server/trpc/init.ts";

export const dynamic = "force-dynamic";

function handler(req: Request): Promise<Response> {
  return handleTrpcRequest(req, (request) => createContext({ req: request }));
}

export { handler as GET, handler as POST, handler as PUT, handler as PATCH, handler as DELETE };
