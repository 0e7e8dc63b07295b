// Dashboard pages during a catalog outage. Next's proxy (proxy.ts) asks before each page render
// whether the catalog answers; when it does not, the page is answered 503 with Retry-After, a
// short "Catalog unavailable — retrying" page that loads itself again every 3 s. The session
// cookie is not touched, so the user is still signed in when the catalog is back. Anything other
// than an outage lets the page render (and report its own error).
import { getCatalog } from "../db/catalog.ts";
import { isDatabaseUnavailable } from "../db/errors.ts";

const RETRY_SECONDS = 3;

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="${RETRY_SECONDS}">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Catalog unavailable · Strata</title>
<style>body{font-family:system-ui,sans-serif;margin:0;display:grid;place-items:center;min-height:100vh;background:#f8fafc;color:#0f172a}
main{max-width:32rem;padding:2rem;text-align:center}h1{font-size:1.25rem;margin:0 0 .5rem}p{color:#475569;margin:0}</style></head>
<body><main role="status"><h1>Catalog unavailable — retrying</h1>
<p>Strata cannot reach its catalog database right now. This page tries again every ${RETRY_SECONDS} seconds; you stay signed in.</p></main></body></html>
`;

/** The outage page when the catalog does not answer; null when it does (the page renders). */
export async function catalogOutagePage(): Promise<Response | null> {
  try {
    const { db, dialect } = getCatalog();
    await dialect.now(db);
    return null;
  } catch (error) {
    if (!isDatabaseUnavailable(error)) return null;
    return new Response(PAGE, {
      status: 503,
      headers: {
        "content-type": "text/html; charset=utf-8",
        "retry-after": String(RETRY_SECONDS),
        "cache-control": "no-store",
      },
    });
  }
}
