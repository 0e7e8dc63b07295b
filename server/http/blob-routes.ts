// HTTP for blobs, as plain functions over a catalog handle so tests call them without a
// server: PUT streams the request body into the blob store, GET streams a stored blob out.
// Both need an agent token; neither holds a whole blob in memory. A verified PUT grants the
// agent the digest; GET answers only for granted digests, and a blob that is stored but not
// granted gets the very answer of one that is not stored, so existence does not leak.
import { randomUUID } from "node:crypto";
import { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import { ERROR_CODES, isStrataError, StrataError } from "../domain/errors.ts";
import type { AgentScope } from "../domain/scope.ts";
import { authenticateAgent } from "../auth/agents.ts";
import { errorFields, logger } from "../log/logger.ts";
import { currentRequest } from "../log/request-context.ts";
import { openBlob, parseDigest, putBlob } from "../content/blobs.ts";
import type { Db } from "../db/catalog.ts";
import { asCatalogUnavailable, OUTAGE_RETRY_AFTER_SECONDS } from "../db/errors.ts";

function errorResponse(error: StrataError, extraHeaders: Record<string, string> = {}): Response {
  const status = getHTTPStatusCodeFromError(new TRPCError({ code: ERROR_CODES[error.code].status }));
  const headers: Record<string, string> = { "content-type": "application/json", ...extraHeaders };
  if (error.code === "UNAUTHORIZED") headers["www-authenticate"] = 'Bearer realm="strata"';
  if (status === 503) headers["retry-after"] = String(OUTAGE_RETRY_AFTER_SECONDS);
  return new Response(JSON.stringify({ error: error.toJSON() }), { status, headers });
}

/** The calling agent, or the UNAUTHORIZED error to answer with. */
async function authorize(db: Db, req: Request): Promise<AgentScope | StrataError> {
  const agent = await authenticateAgent(db, req.headers.get("authorization"));
  if (agent) return agent;
  return new StrataError("UNAUTHORIZED", "A valid agent token is required.", {
    hint: "Send Authorization: Bearer <token>; `strata agent create NAME` prints a token.",
  });
}

async function handle(fn: () => Promise<Response>): Promise<Response> {
  try {
    return await fn();
  } catch (error) {
    if (isStrataError(error)) return errorResponse(error);
    const outage = asCatalogUnavailable(error);
    if (outage) return errorResponse(outage);
    // The request's own id (its X-Request-Id and log line) when it has one.
    const requestId = currentRequest()?.id ?? randomUUID();
    logger().error({ reqId: requestId, route: "blob", err: errorFields(error) }, "request failed");
    return errorResponse(
      new StrataError("INTERNAL", `The blob request failed (request ${requestId}).`, { data: { requestId } }),
    );
  }
}

const EMPTY = () => new ReadableStream<Uint8Array>({ start: (c) => c.close() });

/** PUT /api/blobs/<sha256>: 201 when new for this agent, 200 when it already had the digest. */
export function handleBlobPut(db: Db, req: Request, digest: string): Promise<Response> {
  return handle(async () => {
    const agent = await authorize(db, req);
    if (agent instanceof StrataError) return errorResponse(agent);
    const result = await putBlob(db, {
      digest: parseDigest(digest),
      body: req.body ?? EMPTY(),
      signal: req.signal,
      grantTo: agent.agentId,
    });
    return Response.json(result, { status: result.created ? 201 : 200 });
  });
}

/** GET (or HEAD) /api/blobs/<sha256>: the bytes, streamed chunk by chunk. */
export function handleBlobGet(db: Db, req: Request, digest: string, opts: { head?: boolean } = {}): Promise<Response> {
  return handle(async () => {
    const agent = await authorize(db, req);
    if (agent instanceof StrataError) return errorResponse(agent);
    const { info, stream } = await openBlob(db, parseDigest(digest), agent.agentId);
    const headers = {
      "content-type": "application/octet-stream",
      "content-length": String(info.sizeBytes),
      etag: `"${info.digest}"`,
      // A digest names its bytes for ever.
      "cache-control": "private, max-age=31536000, immutable",
    };
    if (opts.head) {
      await stream.cancel();
      return new Response(null, { status: 200, headers });
    }
    return new Response(stream, { status: 200, headers });
  });
}

/** Any other method on /api/blobs/<sha256>: 405, as typed JSON like every other answer. */
export function handleBlobMethodNotAllowed(req: Request): Response {
  return errorResponse(
    new StrataError("METHOD_NOT_ALLOWED", `${req.method} is not served on /api/blobs/<sha256>; use PUT, GET or HEAD.`),
    { allow: "GET, HEAD, PUT" },
  );
}
