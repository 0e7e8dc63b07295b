import { getAuth, handleAuthRequest } from "~/server/auth/dashboard-auth.ts";
import { getCatalog } from "~/server/db/catalog.ts";

export const dynamic = "force-dynamic";

// Built on first request, so `next build` needs no database. An outage answers UNAVAILABLE (503).
const handler = (req: Request) => handleAuthRequest(getAuth(), getCatalog().db, req);
export { handler as GET, handler as POST };
