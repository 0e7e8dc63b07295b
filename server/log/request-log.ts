// One log line per HTTP request, and its measures: the servers are made by createObservedServer,
// which wraps every request in observeRequest. The line names the request (id, also sent back
// as X-Request-Id), what it called (route, tRPC procedures), who (agent or user, as noted while
// it ran), how long it took, the status and the outcome (the Strata error code of an error
// answer). Bodies are never logged: an error answer's body is read only for its error code.
import { randomUUID } from "node:crypto";
import { createServer, ServerResponse, type IncomingMessage, type Server, type ServerOptions } from "node:http";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { logger } from "./logger.ts";
import { measure } from "./measures.ts";
import { runInRequest, type RequestContext } from "./request-context.ts";

const TRPC_PREFIX = "/api/trpc";
/** How much of an error answer is read for its code. */
const ERROR_BODY_LIMIT = 64 * 1024;
const ERROR_CODE = /^[A-Z][A-Z0-9_]{1,63}$/;
const ID_SEGMENT = /^(?:[0-9a-f]{16,}|[0-9a-f-]{32,36}|c[a-z0-9]{20,}|\d+|[A-Za-z0-9_-]{40,})$/i;

/** The tRPC procedures a path names (`/api/trpc/a.b,c.d`), each cut to a safe name. */
function proceduresOf(pathname: string): string[] | null {
  if (pathname !== TRPC_PREFIX && !pathname.startsWith(`${TRPC_PREFIX}/`)) return null;
  let names = pathname.slice(TRPC_PREFIX.length + 1);
  try {
    names = decodeURIComponent(names);
  } catch {
    // As sent.
  }
  return names
    .split(",")
    .slice(0, 50)
    .map((n) => (/^[A-Za-z0-9_.-]{1,100}$/.test(n) ? n : "?"));
}

/** A path as a bounded metrics label: ids become `:id`, unmatched paths one label. */
function routeLabel(pathname: string, status: number, procedures: string[] | null, outcome: string): string {
  if (procedures) {
    if (status === 404 || outcome === "NOT_FOUND" || procedures.length !== 1) {
      return procedures.length > 1 ? "trpc:batch" : "trpc:unknown";
    }
    return `trpc:${procedures[0]}`;
  }
  if (status === 404) return "not-found";
  if (pathname.startsWith("/_next/")) return "/_next";
  if (pathname.startsWith("/api/blobs/")) return "/api/blobs/:digest";
  const segments = pathname
    .split("/")
    .slice(0, 8)
    .map((s) => (ID_SEGMENT.test(s) ? ":id" : s.slice(0, 40)));
  return segments.join("/") || "/";
}

/** The Strata error codes an error answer's JSON holds (tRPC's data.strata, a route's error, a REST answer). */
function errorCodesIn(value: unknown, codes: string[], depth = 0): void {
  if (depth > 8 || value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    for (const item of value.slice(0, 50)) errorCodesIn(item, codes, depth + 1);
    return;
  }
  const o = value as Record<string, unknown>;
  // A REST answer (/api/v1) is the StrataError itself.
  if (depth === 0 && typeof o.code === "string" && typeof o.retryable === "boolean" && ERROR_CODE.test(o.code)) {
    codes.push(o.code);
    return;
  }
  const strata = o.strata as { code?: unknown } | null | undefined;
  if (typeof strata?.code === "string") {
    if (ERROR_CODE.test(strata.code)) codes.push(strata.code);
    return;
  }
  const error = o.error as { code?: unknown } | null | undefined;
  if (typeof error?.code === "string") {
    if (ERROR_CODE.test(error.code)) codes.push(error.code);
    return;
  }
  for (const child of Object.values(o)) errorCodesIn(child, codes, depth + 1);
}

function decoded(body: Buffer, encoding: string | undefined): Buffer {
  switch (encoding) {
    case "gzip":
      return gunzipSync(body);
    case "br":
      return brotliDecompressSync(body);
    case "deflate":
      return inflateSync(body);
    default:
      return body;
  }
}

/** The outcome of an answered request: OK, the error code(s) its answer holds, else HTTP_<status>. */
function outcomeOf(res: ServerResponse, chunks: Buffer[] | null, finished: boolean): string {
  if (!finished) return "CLIENT_CLOSED";
  const codes: string[] = [];
  if (chunks && chunks.length > 0) {
    try {
      const encoding = res.getHeader("content-encoding");
      const body = decoded(Buffer.concat(chunks), typeof encoding === "string" ? encoding : undefined);
      errorCodesIn(JSON.parse(body.toString("utf8")), codes);
    } catch {
      // Not JSON (a page, or cut at the limit): the status says it.
    }
  }
  if (codes.length > 0) return [...new Set(codes)].join(",");
  return res.statusCode < 400 ? "OK" : `HTTP_${res.statusCode}`;
}

/**
 * A response that keeps the first bytes of an error answer (status ≥ 400, or a tRPC batch's 207)
 * for its code. The servers make every response one (createObservedServer), so the capture is
 * two methods of one class rather than `write` and `end` put on each response: functions set as
 * a response's own properties made V8 keep about 2 kB per request past two young-generation
 * collections, which fed a full collection every two to three seconds under a steady 1,000
 * requests/s (docs/perf/2026-12-acquire-latency.md, "What the request log cost").
 */
export class ObservedResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  #errorBody: Buffer[] | null = null;
  #kept = 0;

  /** What was kept of the answer's bytes: null unless it is an error answer with a body. */
  errorBody(): Buffer[] | null {
    return this.#errorBody;
  }

  #keep(chunk: unknown, encoding: unknown): void {
    if (chunk === undefined || chunk === null || typeof chunk === "function") return;
    if (this.statusCode < 400 && this.statusCode !== 207) return;
    if (this.#kept >= ERROR_BODY_LIMIT) return;
    const buffer = Buffer.isBuffer(chunk)
      ? chunk
      : typeof chunk === "string"
        ? Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8")
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk)
          : null;
    if (!buffer) return;
    (this.#errorBody ??= []).push(buffer.subarray(0, ERROR_BODY_LIMIT - this.#kept));
    this.#kept += buffer.length;
  }

  override write(chunk: unknown, ...rest: unknown[]): boolean {
    this.#keep(chunk, rest[0]);
    return (super.write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  }

  override end(chunk?: unknown, ...rest: unknown[]): this {
    this.#keep(chunk, rest[0]);
    return (super.end as (...args: unknown[]) => this).call(this, chunk, ...rest);
  }
}

/**
 * Answers a request with `answer` inside its request context, then logs its one line and records
 * its measures when the response is done (or the client went away).
 */
function observeRequest(req: IncomingMessage, res: ObservedResponse, answer: () => unknown): void {
  const started = performance.now();
  const context: RequestContext = { id: randomUUID() };
  res.setHeader("x-request-id", context.id);
  res.once("close", () => {
    const seconds = (performance.now() - started) / 1000;
    const pathname = (req.url ?? "/").split("?")[0] ?? "/";
    const procedures = proceduresOf(pathname);
    const outcome = outcomeOf(res, res.errorBody(), res.writableFinished);
    const status = res.writableFinished ? res.statusCode : 499;
    const route = routeLabel(pathname, status, procedures, outcome);
    const fields = {
      reqId: context.id,
      method: req.method,
      path: pathname.length > 300 ? `${pathname.slice(0, 300)}…` : pathname,
      route,
      ...(procedures ? { procedures } : {}),
      ...(context.agentId ? { agentId: context.agentId, agentName: context.agentName } : {}),
      ...(context.userId ? { userId: context.userId } : {}),
      status,
      outcome,
      durationMs: Math.round(seconds * 10_000) / 10,
    };
    const log = logger();
    if (status >= 500) log.error(fields, "request");
    // Static assets and metric scrapes would drown the requests people look for.
    else if (route === "/_next" || route === "/metrics") log.debug(fields, "request");
    else log.info(fields, "request");
    measure({ type: "request", route, status, seconds });
    if (procedures?.length === 1 && procedures[0] === "workspace.acquire") {
      measure({ type: "acquire", outcome, seconds });
    }
  });
  runInRequest(context, answer);
}

/** An HTTP server that answers every request with `answer` inside observeRequest. */
export function createObservedServer(
  options: ServerOptions,
  answer: (req: IncomingMessage, res: ObservedResponse) => unknown,
): Server<typeof IncomingMessage, typeof ObservedResponse> {
  return createServer({ ...options, ServerResponse: ObservedResponse }, (req, res) =>
    observeRequest(req, res, () => answer(req, res)),
  );
}
