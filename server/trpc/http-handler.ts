// The app's tRPC over HTTP, in one function: the Next route serves it and tests call it, so
// tests exercise exactly what the app answers. Plain JSON calls are answered by json-calls.ts,
// everything else by tRPC's fetch adapter; node:http servers (serveApp) answer them without
// building a fetch Request and Response at all (handleTrpcNodeRequest).
import type { IncomingMessage, ServerResponse } from "node:http";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { Context } from "./init.ts";
import { answerHeaders, planJsonCalls } from "./json-calls.ts";
import { appRouter } from "./root.ts";

export const TRPC_ENDPOINT = "/api/trpc";
const OPTIONS = { endpoint: TRPC_ENDPOINT, maxBatchSize: 50 };

export async function handleTrpcRequest(
  req: Request,
  createContext: (req: Request) => Context | Promise<Context>,
): Promise<Response> {
  const calls = await planJsonCalls(appRouter, OPTIONS, {
    method: req.method,
    url: new URL(req.url),
    headers: req.headers,
  });
  if (calls) {
    const { status, body, headers } = await calls.answer({
      readJson: () => req.json(),
      createContext: () => createContext(req),
      signal: req.signal,
    });
    return new Response(body, { status, headers });
  }
  const response = await fetchRequestHandler({
    ...OPTIONS,
    req,
    router: appRouter,
    createContext: () => createContext(req),
  });
  // tRPC labels a few early refusals (e.g. an unsupported content type) text/plain; every
  // answer here is JSON.
  if (!response.headers.get("content-type")?.includes("application/json")) {
    response.headers.set("content-type", "application/json");
  }
  // A 503 (UNAVAILABLE) says when to retry, as plain JSON calls' answers do.
  const retryAfter = answerHeaders(response.status)["retry-after"];
  if (retryAfter) response.headers.set("retry-after", retryAfter);
  return response;
}

/**
 * Answers a node:http request for a plain JSON call, the bytes handleTrpcRequest would answer
 * (given the Request a node server makes of it: `url`, and `headers` from its string headers);
 * false, having read nothing, when the request is not one (the caller then makes a Request of it
 * for handleTrpcRequest). Procedures get no abort signal: a Request made of a node request
 * without one never aborts either.
 */
export async function handleTrpcNodeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  request: { url: URL; headers: Headers },
  createContext: () => Context | Promise<Context>,
): Promise<boolean> {
  const method = req.method ?? "GET";
  const calls = await planJsonCalls(appRouter, OPTIONS, { method, url: request.url, headers: request.headers });
  if (!calls) return false;
  const { status, body, headers } = await calls.answer({
    readJson: () => readJson(req),
    createContext,
    signal: undefined,
  });
  // Framed by its length rather than chunked, so any HTTP/1.1 client can read it.
  const bytes = Buffer.from(body);
  res.writeHead(status, { ...headers, "content-length": bytes.length });
  res.end(bytes);
  return true;
}

const utf8 = new TextDecoder();

/**
 * The body as fetch's Request.json() reads it (undici's utf8DecodeBytes): a leading BOM dropped,
 * then UTF-8 with bad bytes replaced (a decoder that drops a second BOM), then JSON.
 */
function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("error", reject);
    req.on("close", () => {
      if (!ended) reject(new Error("The request was closed before its body ended."));
    });
    req.on("end", () => {
      ended = true;
      let bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
      try {
        resolve(JSON.parse(bytes.length === 0 ? "" : utf8.decode(bytes)));
      } catch (error) {
        reject(error);
      }
    });
  });
}
