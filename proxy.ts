// Next's proxy: before a dashboard page renders, a catalog that does not answer gets the outage
// page (503, Retry-After) instead (server/http/outage-page.ts). API routes answer outages
// themselves, typed; static files need no catalog.
import { NextResponse } from "next/server";
import { catalogOutagePage } from "./server/http/outage-page.ts";

export async function proxy(): Promise<Response> {
  return (await catalogOutagePage()) ?? NextResponse.next();
}

export const config = {
  matcher: ["/((?!api/|_next/|favicon.ico|metrics).*)"],
};
