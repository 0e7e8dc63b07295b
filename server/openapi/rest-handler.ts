// The REST surface over HTTP, in one function the Next route serves and tests call. Each
// operation calls its tRPC procedure exactly as tRPC's own handler does (json-calls.ts): the same
// context, middlewares (input boundary, agent token, strict schema), Idempotency-Key and error
// formatter, so there is one implementation and REST cannot drift from tRPC. Only the envelope
// differs: the input is plain JSON (no superjson `{json}`), the answer is superjson's JSON part
// (a Date an ISO 8601 string, a bigint a decimal string: what a tRPC client reads before it
// decodes), and an error is the StrataError itself with the HTTP status tRPC gives it.
import { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import {
  getErrorShape,
  getHTTPStatusCode,
  getTRPCErrorFromUnknown,
  type TRPCResponse,
} from "@trpc/server/unstable-core-do-not-import";
import { OUTAGE_RETRY_AFTER_SECONDS } from "../db/errors.ts";
import { ERROR_CODES, StrataError, type StrataErrorShape } from "../domain/errors.ts";
import type { Context } from "../trpc/init.ts";
import { invalidInput } from "../trpc/input-boundary.ts";
import { appRouter } from "../trpc/root.ts";
import { openApiDocument, OPENAPI_PATH, OPENAPI_URL } from "./openapi-document.ts";
import { queryPlan, readQueryInput, type QueryPlan } from "./query-input.ts";
import { REST_PREFIX, restOperations, type RestOperation } from "./rest-operations.ts";

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

function respond({ status, body, headers }: Answer): Response {
  const all: Record<string, string> = { "content-type": "application/json", ...headers };
  if (status === 503) all["retry-after"] = String(OUTAGE_RETRY_AFTER_SECONDS);
  return new Response(JSON.stringify(body ?? null), { status, headers: all });
}

/** A refusal made before any procedure runs, with the HTTP status of its code. */
function refusal(error: StrataError, headers?: Record<string, string>): Answer {
  const status = getHTTPStatusCodeFromError(new TRPCError({ code: ERROR_CODES[error.code].status }));
  return { status, body: error.toJSON(), headers };
}

const unreadable = (message: string) =>
  invalidInput([
    { path: [], problem: "unreadable_request", expected: null, message: `The request could not be read: ${message}` },
  ]);

let routes: Map<string, { operation: RestOperation; plan: QueryPlan }> | null = null;

/** The operations by URL path, each with how a GET reads its query string. */
function routeTable() {
  routes ??= new Map(
    restOperations().map((operation) => [
      operation.path,
      { operation, plan: operation.method === "GET" ? queryPlan(operation.input) : ({ kind: "none" } as const) },
    ]),
  );
  return routes;
}

/** The operation's input as the request carries it (query string or JSON body). */
async function readInput(req: Request, url: URL, plan: QueryPlan): Promise<unknown> {
  if (req.method === "GET") {
    try {
      return readQueryInput(plan, url.searchParams);
    } catch (error) {
      throw unreadable(`the input parameter is not JSON (${(error as Error).message}).`);
    }
  }
  const text = await req.text();
  if (text.trim() === "") return undefined;
  if (req.headers.get("content-type")?.toLowerCase().split(";", 1)[0]?.trim() !== "application/json") {
    throw new StrataError("UNSUPPORTED_MEDIA_TYPE", "The request's content type is not supported.", {
      hint: "Send the input as a JSON body with Content-Type: application/json.",
    });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw unreadable(`the body is not JSON (${(error as Error).message}).`);
  }
}

/** Calls the operation's procedure as tRPC's handler does; its answer or its formatted error. */
async function callOperation(
  operation: RestOperation,
  input: unknown,
  createContext: () => Context | Promise<Context>,
  signal: AbortSignal,
): Promise<Answer> {
  const config = appRouter._def._config;
  const type = operation.method === "GET" ? "query" : "mutation";
  let ctx: Context | undefined;
  try {
    ctx = await createContext();
    const data: unknown = await operation.call({
      path: operation.procedure,
      getRawInput: () => Promise.resolve(input),
      ctx,
      type,
      signal,
      batchIndex: 0,
    });
    return { status: 200, body: config.transformer.output.serialize(data).json };
  } catch (cause) {
    const error = getTRPCErrorFromUnknown(cause);
    const shape = getErrorShape({ config, ctx, error, input, path: operation.procedure, type });
    const strata = (shape.data as { strata: StrataErrorShape }).strata;
    return { status: getHTTPStatusCode({ error: shape } as TRPCResponse), body: strata };
  }
}

/** Answers a request for a path under REST_PREFIX. */
export async function handleRestRequest(
  req: Request,
  createContext: () => Context | Promise<Context>,
): Promise<Response> {
  const url = new URL(req.url);
  const path = url.pathname.slice(REST_PREFIX.length).replace(/\/+$/, "") || "/";
  if (path === OPENAPI_PATH) {
    if (req.method !== "GET") {
      return respond(
        refusal(new StrataError("METHOD_NOT_ALLOWED", `${req.method} is not served at ${url.pathname}; use GET.`), {
          allow: "GET",
        }),
      );
    }
    return respond({ status: 200, body: openApiDocument() });
  }
  const route = routeTable().get(path);
  if (!route) {
    return respond(
      refusal(
        new StrataError("NOT_FOUND", `No operation is served at ${url.pathname}.`, {
          hint: `The operations are listed in ${OPENAPI_URL}.`,
          data: { path: url.pathname },
        }),
      ),
    );
  }
  const { operation } = route;
  if (req.method !== operation.method) {
    return respond(
      refusal(
        new StrataError(
          "METHOD_NOT_ALLOWED",
          `${req.method} is not served at ${url.pathname}; use ${operation.method}.`,
          { hint: "Queries are GET with the input in the query string; mutations are POST with a JSON body." },
        ),
        { allow: operation.method },
      ),
    );
  }
  let input: unknown;
  try {
    input = await readInput(req, url, route.plan);
  } catch (error) {
    if (error instanceof StrataError) return respond(refusal(error));
    throw error;
  }
  return respond(await callOperation(operation, input, createContext, req.signal));
}
