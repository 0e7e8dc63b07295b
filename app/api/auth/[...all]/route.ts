import { getAuth } from "~/server/auth/dashboard-auth.ts";

export const dynamic = "force-dynamic";

// Built on first request, so `next build` needs no database.
export const GET = (req: Request) => getAuth().handler(req);
export const POST = (req: Request) => getAuth().handler(req);
