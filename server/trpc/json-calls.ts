// The plain JSON calls agents and the dashboard make (one query or mutation, or a batch of them),
// answered without tRPC's HTTP adapter. tRPC 11 turns every request into fetch Request, Headers,
// URL, three AbortSignal.any and a Response before and after calling the procedure; on a small
// call that cost more CPU than the call (~120 µs of ~200 µs per acquire, server side). This file
// answers exactly what tRPC's resolveResponse answers for those requests — same procedures and
// middlewares (called as tRPC's procedure caller calls them: callProcedure), same input reading
// (lazily, errors wrapped the same way), same error shapes (getErrorShape, so the app's
// errorFormatter), same status codes and headers — and declines everything else (other methods
// and content types, streaming, unknown or mixed procedures, oversized batches, connection
// params), which tRPC's handler then answers as before.
// http-handler.test.ts holds the two to the same bytes.
import {
  emptyObject,
  getAcceptHeader,
  getErrorShape,
  getHTTPStatusCode,
  getProcedureAtPath,
  getTRPCErrorFromUnknown,
  isAsyncIterable,
  isObject,
  isPromise,
  middlewareMarker,
  transformTRPCResponse,
  TRPCError,
  type AnyProcedure,
  type AnyRouter,
  type MiddlewareResult,
  type TRPCResponse,
} from "@trpc/server/unstable-core-do-not-import";
import { OUTAGE_RETRY_AFTER_SECONDS } from "../db/errors.ts";

/** What deciding needs of a request, before its body is read. */
export interface JsonCallRequest {
  method: string;
  url: URL;
  headers: { get(name: string): string | null };
}

interface JsonCallAnswer {
  status: number;
  /** The JSON text of the answer. */
  body: string;
  /** JSON_CALL_HEADERS, and Retry-After on a 503 (answerHeaders). */
  headers: Record<string, string>;
}

/** The headers tRPC sends with every JSON answer (in the order a fetch Headers lists them). */
const JSON_CALL_HEADERS = { "content-type": "application/json", vary: "trpc-accept, accept" } as const;

/** The headers of an answer with `status`: a 503 (UNAVAILABLE) says when to retry. */
export function answerHeaders(status: number): Record<string, string> {
  if (status !== 503) return JSON_CALL_HEADERS;
  return { ...JSON_CALL_HEADERS, "retry-after": String(OUTAGE_RETRY_AFTER_SECONDS) };
}

export interface JsonCalls {
  /**
   * Calls the procedures. `readJson` reads and parses the request body (POST); `signal` is what
   * procedures get as theirs.
   */
  answer<Ctx>(opts: {
    readJson: () => Promise<unknown>;
    createContext: () => Ctx | Promise<Ctx>;
    signal: AbortSignal | undefined;
  }): Promise<JsonCallAnswer>;
}

/** fetchRequestHandler's path: the URL's path after the endpoint, without slashes at either end. */
function trimSlashes(path: string): string {
  const start = path.startsWith("/") ? path.slice(1) : path;
  return start.endsWith("/") ? start.slice(0, -1) : start;
}

/** tRPC's test for a media type (case-insensitive, parameters ignored). */
function hasContentType(headers: JsonCallRequest["headers"], type: string): boolean {
  return headers.get("content-type")?.toLowerCase().split(";", 1)[0]?.trim() === type;
}

/** A result tRPC would have to stream (httpBatchStreamLink), which a JSON answer refuses. */
function isDataStream(value: unknown): boolean {
  if (!isObject(value)) return false;
  if (isAsyncIterable(value)) return true;
  return Object.values(value).some(isPromise) || Object.values(value).some(isAsyncIterable);
}

const METHOD_OF = { query: "GET", mutation: "POST" } as const;

/**
 * The calls `req` makes, when it is a plain JSON request for existing queries (GET) or mutations
 * (POST) of `router`; null when tRPC's own handler must answer it.
 */
export async function planJsonCalls(
  router: AnyRouter,
  opts: { endpoint: string; maxBatchSize: number },
  req: JsonCallRequest,
): Promise<JsonCalls | null> {
  const { method, url, headers } = req;
  if (method !== "GET" && method !== "POST") return null;
  // tRPC reads GET requests without a content type as JSON too.
  if (!hasContentType(headers, "application/json") && !(method === "GET" && headers.get("content-type") === null)) {
    return null;
  }
  if (getAcceptHeader(headers as Headers) === "application/jsonl") return null;
  const { searchParams } = url;
  if (searchParams.has("connectionParams")) return null;
  let path: string;
  try {
    path = decodeURIComponent(trimSlashes(trimSlashes(url.pathname).slice(trimSlashes(opts.endpoint).length)));
  } catch {
    return null;
  }
  const isBatchCall = searchParams.get("batch") === "1";
  const paths = isBatchCall ? path.split(",") : [path];
  if (paths.length > opts.maxBatchSize) return null;
  const procedures: AnyProcedure[] = [];
  for (const p of paths) {
    const procedure = await getProcedureAtPath(router, p);
    if (!procedure) return null;
    const type = procedure._def.type as string;
    if (type !== "query" && type !== "mutation") return null;
    if (METHOD_OF[type] !== method) return null;
    // A procedure with its own caller (experimental_caller) is called through it: tRPC's handler.
    if (procedure._def.experimental_caller) return null;
    procedures.push(procedure);
  }
  const type = procedures[0]!._def.type as "query" | "mutation";
  const config = router._def._config;

  return {
    async answer<Ctx>({
      readJson,
      createContext,
      signal,
    }: {
      readJson: () => Promise<unknown>;
      createContext: () => Ctx | Promise<Ctx>;
      signal: AbortSignal | undefined;
    }): Promise<JsonCallAnswer> {
      // jsonContentTypeHandler: the inputs are read once, when a procedure first asks for one.
      const inputs = memo(async () => {
        let raw: unknown = undefined;
        if (method === "GET") {
          const queryInput = searchParams.get("input");
          if (queryInput) raw = JSON.parse(queryInput);
        } else raw = await readJson();
        const byIndex: Record<number, unknown> = emptyObject();
        if (raw === undefined) return byIndex;
        if (!isBatchCall) {
          byIndex[0] = config.transformer.input.deserialize(raw);
          return byIndex;
        }
        if (!isObject(raw)) {
          throw new TRPCError({
            code: "BAD_REQUEST",
            message: '"input" needs to be an object when doing a batch call',
          });
        }
        for (const index of paths.keys()) {
          const input = (raw as Record<number, unknown>)[index];
          if (input !== undefined) byIndex[index] = config.transformer.input.deserialize(input);
        }
        return byIndex;
      });
      let ctx: Ctx | undefined;
      let ctxError: TRPCError | undefined;
      try {
        ctx = await createContext();
      } catch (cause) {
        ctxError = getTRPCErrorFromUnknown(cause);
      }
      const calls = procedures.map(async (procedure, index): Promise<[TRPCError, undefined] | [undefined, unknown]> => {
        try {
          if (ctxError) throw ctxError;
          const data: unknown = await callProcedure(procedure, {
            path: paths[index]!,
            getRawInput: async () => (await inputs.read())[index],
            ctx,
            type,
            signal,
            batchIndex: index,
          });
          return [undefined, data];
        } catch (cause) {
          return [getTRPCErrorFromUnknown(cause), undefined];
        }
      });
      const shapeOf = (error: TRPCError, index: number) => ({
        error: getErrorShape({
          config,
          ctx,
          error,
          input: inputs.result()?.[index],
          path: paths[index],
          type,
        }),
      });
      try {
        if (!isBatchCall) {
          const [error, data] = await calls[0]!;
          if (!error && isDataStream(data)) {
            throw new TRPCError({
              code: "UNSUPPORTED_MEDIA_TYPE",
              message: "Cannot use stream-like response in non-streaming request - use httpBatchStreamLink",
            });
          }
          const response: TRPCResponse = error ? shapeOf(error, 0) : { result: { data } };
          const status = getHTTPStatusCode([response]);
          return {
            status,
            body: JSON.stringify(transformTRPCResponse(config, response)),
            headers: answerHeaders(status),
          };
        }
        const responses: TRPCResponse[] = (await Promise.all(calls)).map(([error, data], index) => {
          if (error) return shapeOf(error, index);
          if (isDataStream(data)) {
            return shapeOf(
              new TRPCError({
                code: "UNSUPPORTED_MEDIA_TYPE",
                message: "Cannot use stream-like response in non-streaming request - use httpBatchStreamLink",
              }),
              index,
            );
          }
          return { result: { data } };
        });
        const status = getHTTPStatusCode(responses);
        return {
          status,
          body: JSON.stringify(transformTRPCResponse(config, responses)),
          headers: answerHeaders(status),
        };
      } catch (cause) {
        // resolveResponse's last resort: one error, without path or input.
        const response = {
          error: getErrorShape({
            config,
            ctx,
            error: getTRPCErrorFromUnknown(cause),
            type,
            path: undefined,
            input: undefined,
          }),
        };
        const status = getHTTPStatusCode(response);
        return {
          status,
          body: JSON.stringify(transformTRPCResponse(config, response)),
          headers: answerHeaders(status),
        };
      }
    },
  };
}

interface CallOptions {
  path: string;
  getRawInput: () => Promise<unknown>;
  ctx: unknown;
  type: "query" | "mutation";
  signal: AbortSignal | undefined;
  batchIndex: number;
  input?: unknown;
}

type Middleware = (opts: Record<string, unknown>) => Promise<MiddlewareResult<unknown> | undefined>;

/**
 * Calls a procedure as tRPC's procedure caller does (createProcedureCaller and callRecursive):
 * each middleware in turn gets the call's options, its meta and a `next` that calls the one after
 * it with the context merged, the input replaced or the raw input read anew; a throw becomes a
 * failed result. The same steps, with the language's object spread where tRPC's build copies
 * through a down-levelled helper (key arrays, closures, property descriptors at every step): an
 * acquire over HTTP allocates about a tenth less (docs/perf/2026-12-acquire-latency.md).
 */
async function callProcedure(procedure: AnyProcedure, opts: CallOptions): Promise<unknown> {
  const { middlewares, meta } = procedure._def as unknown as { middlewares: Middleware[]; meta: unknown };
  const step = async (index: number, stepOpts: CallOptions): Promise<MiddlewareResult<unknown> | undefined> => {
    try {
      return await middlewares[index]!({
        ...stepOpts,
        meta,
        input: stepOpts.input,
        next: (nextOpts?: { ctx?: object; input?: unknown; getRawInput?: () => Promise<unknown> }) =>
          step(index + 1, {
            ...stepOpts,
            ctx: nextOpts?.ctx ? { ...(stepOpts.ctx as object), ...nextOpts.ctx } : stepOpts.ctx,
            input: nextOpts && "input" in nextOpts ? nextOpts.input : stepOpts.input,
            getRawInput: nextOpts?.getRawInput ?? stepOpts.getRawInput,
          }),
      });
    } catch (cause) {
      return { ok: false, error: getTRPCErrorFromUnknown(cause), marker: middlewareMarker };
    }
  };
  const result = await step(0, opts);
  if (!result) {
    throw new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: "No result from middlewares - did you forget to `return next()`?",
    });
  }
  if (!result.ok) throw result.error;
  return result.data;
}

/** tRPC's memo: one read, whose failure is BAD_REQUEST unless it already was a TRPCError. */
function memo<T>(read: () => Promise<T>) {
  let value: { value: T } | null = null;
  let pending: Promise<T> | null = null;
  return {
    read: async (): Promise<T> => {
      if (value) return value.value;
      pending ??= read().catch((cause: unknown) => {
        if (cause instanceof TRPCError) throw cause;
        throw new TRPCError({
          code: "BAD_REQUEST",
          message: cause instanceof Error ? cause.message : "Invalid input",
          cause,
        });
      });
      const result = await pending;
      value = { value: result };
      pending = null;
      return result;
    },
    result: (): T | undefined => value?.value,
  };
}
