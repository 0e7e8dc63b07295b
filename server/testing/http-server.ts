// Test support: the app's HTTP routes (tRPC, REST, the blob routes, and optionally sign-in and
// /metrics) behind a real node:http server on a test catalog, so tests send real requests and
// read real answers. Every request is observed as `strata serve` observes it (its log line).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { handleBlobGet, handleBlobMethodNotAllowed, handleBlobPut } from "../http/blob-routes.ts";
import { sessionUser, type Auth } from "../auth/dashboard-auth.ts";
import type { Db } from "../db/catalog.ts";
import type { UserScope } from "../domain/scope.ts";
import { answerMetrics, METRICS_PATH, type Metrics } from "../log/metrics.ts";
import { noteRequestIdentity } from "../log/request-context.ts";
import { createObservedServer } from "../log/request-log.ts";
import { createContextInner } from "../trpc/init.ts";
import { handleTrpcNodeRequest, handleTrpcRequest, TRPC_ENDPOINT } from "../trpc/http-handler.ts";
import { handleRestRequest } from "../openapi/rest-handler.ts";
import { REST_PREFIX } from "../openapi/rest-operations.ts";

/**
 * The URL and headers of the Request a node request makes (a header sent twice is left out);
 * throws where making that Request would.
 */
function urlAndHeaders(req: IncomingMessage): { url: URL; headers: Headers } {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value);
  }
  const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
  if (url.username || url.password) throw new TypeError("A Request's URL cannot hold credentials.");
  return { url, headers };
}

function toRequest(req: IncomingMessage, { url, headers }: { url: URL; headers: Headers }): Request {
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(url, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    duplex: "half",
  } as RequestInit);
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}

export interface TestServerOptions {
  db: Db;
  /** The signed-in dashboard user of a request (the app reads a session cookie). */
  userFor?: (req: { headers: Headers }) => UserScope | null;
  /**
   * Dashboard sign-in as the app has it: /api/auth/* is this better-auth instance's, and a
   * request's session cookie signs its user in (instead of userFor).
   */
  auth?: Auth;
  /** /metrics as `strata serve` answers it. */
  metrics?: { metrics: Metrics | null; token: string | undefined };
}

export interface TestServer {
  url: string;
  close(): Promise<void>;
}

/** What Next answers for a path no route matches. */
const nextNotFound = () =>
  new Response("<!DOCTYPE html><h1>404</h1>", { status: 404, headers: { "content-type": "text/html" } });

/** A path segment as Next hands it to a route: decoded, or as sent when it is not valid UTF-8. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const isTrpcPath = (path: string) => path === TRPC_ENDPOINT || path.startsWith(`${TRPC_ENDPOINT}/`);

/** The request's dashboard user, noted on the request (as the app's createContext does). */
async function userOf(req: { headers: Headers }, opts: TestServerOptions): Promise<UserScope | null> {
  const { auth } = opts;
  const user = auth
    ? req.headers.has("cookie")
      ? await sessionUser(auth, req.headers)
      : null
    : (opts.userFor?.(req) ?? null);
  if (user) noteRequestIdentity({ userId: user.userId });
  return user;
}

function route(req: Request, opts: TestServerOptions): Promise<Response> {
  const path = new URL(req.url).pathname;
  if (opts.auth && path.startsWith("/api/auth/")) return opts.auth.handler(req);
  const blob = /^\/api\/blobs\/([^/]+)$/.exec(path);
  if (blob) {
    const digest = decodeSegment(blob[1] ?? "");
    if (req.method === "PUT") return handleBlobPut(opts.db, req, digest);
    if (req.method === "GET") return handleBlobGet(opts.db, req, digest);
    if (req.method === "HEAD") return handleBlobGet(opts.db, req, digest, { head: true });
    return Promise.resolve(handleBlobMethodNotAllowed(req));
  }
  // app/api/trpc/[[...trpc]]/route.ts: /api/trpc and every path beneath it.
  if (isTrpcPath(path)) {
    return handleTrpcRequest(req, async (request) =>
      createContextInner({
        db: opts.db,
        authorization: request.headers.get("authorization"),
        user: await userOf(request, opts),
        idempotencyKey: request.headers.get("idempotency-key"),
      }),
    );
  }
  // app/api/v1/[[...path]]/route.ts: the REST surface and its OpenAPI document.
  if (path === REST_PREFIX || path.startsWith(`${REST_PREFIX}/`)) {
    return handleRestRequest(req, async () =>
      createContextInner({
        db: opts.db,
        authorization: req.headers.get("authorization"),
        user: await userOf(req, opts),
        idempotencyKey: req.headers.get("idempotency-key"),
      }),
    );
  }
  return Promise.resolve(nextNotFound());
}

/** Serves the app's API routes on 127.0.0.1 at a free port. */
export function serveApp(opts: TestServerOptions): Promise<TestServer> {
  // Room for the long query strings tests send (Node's default header limit is 16 KiB).
  const server = createObservedServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => {
    const failed = () => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(500);
      res.end();
    };
    let parts: { url: URL; headers: Headers };
    try {
      parts = urlAndHeaders(req);
    } catch {
      res.writeHead(400);
      res.end();
      return;
    }
    if (opts.metrics && parts.url.pathname === METRICS_PATH) {
      answerMetrics(req, res, opts.metrics).catch(failed);
      return;
    }
    const answer = async () => {
      // Plain JSON tRPC calls skip the fetch Request and Response (see handleTrpcNodeRequest).
      if (isTrpcPath(parts.url.pathname)) {
        const context = async () =>
          createContextInner({
            db: opts.db,
            authorization: parts.headers.get("authorization"),
            user: await userOf(parts, opts),
            idempotencyKey: parts.headers.get("idempotency-key"),
          });
        if (await handleTrpcNodeRequest(req, res, parts, context)) return;
      }
      let request: Request;
      try {
        request = toRequest(req, parts);
      } catch {
        res.writeHead(400);
        res.end();
        return;
      }
      await send(res, await route(request, opts));
    };
    answer().catch(failed);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}
