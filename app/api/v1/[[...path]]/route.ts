// The REST surface: every path under /api/v1 (the OpenAPI document at /api/v1/openapi.json, one
// operation per agent procedure) is answered by one handler, so an unknown path or method still
// gets a typed JSON error.
import { handleRestRequest } from "~/server/openapi/rest-handler.ts";
import { createContext } from "~/server/trpc/init.ts";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

function handler(req: Request): Promise<Response> {
  return handleRestRequest(req, () => createContext({ req }));
}

export { handler as GET, handler as POST, handler as PUT, handler as PATCH, handler as DELETE };
