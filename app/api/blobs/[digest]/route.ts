import { getCatalog } from "~/server/db/catalog.ts";
import { handleBlobGet, handleBlobMethodNotAllowed, handleBlobPut } from "~/server/http/blob-routes.ts";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type RouteContext = { params: Promise<{ digest: string }> };

export async function PUT(req: Request, ctx: RouteContext): Promise<Response> {
  return handleBlobPut(getCatalog().db, req, (await ctx.params).digest);
}

export async function GET(req: Request, ctx: RouteContext): Promise<Response> {
  return handleBlobGet(getCatalog().db, req, (await ctx.params).digest);
}

export async function HEAD(req: Request, ctx: RouteContext): Promise<Response> {
  return handleBlobGet(getCatalog().db, req, (await ctx.params).digest, { head: true });
}

function notAllowed(req: Request): Response {
  return handleBlobMethodNotAllowed(req);
}

export { notAllowed as POST, notAllowed as PATCH, notAllowed as DELETE };
