// One way to reach a Strata server over HTTP with an agent token: tRPC (superjson) for calls,
// /api/blobs/<sha256> for bytes. Failures come back as the StrataErrors the server raised, so
// callers check the same codes as against a local database. Reads, and the creating calls that
// carry an Idempotency-Key (docs/api.md "Idempotency"), are sent again with backoff while they
// fail transiently, so a lost answer never makes the server do the work twice; nothing else is
// ever sent twice.
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createTRPCClient, httpBatchLink, httpLink, splitLink, TRPCClientError } from "@trpc/client";
import superjson from "superjson";
import { ERROR_CODES, StrataError, type ErrorCode } from "../server/domain/errors.ts";
import type { CaptureStore } from "../server/backends/backend.ts";
import type { DependencyCachePort } from "../server/caches/dependency-port.ts";
import type { AppRouter } from "../server/trpc/root.ts";

export interface ServerOptions {
  /** The server's address, e.g. https://strata.example.com */
  url: string;
  /** An agent token (`strata agent create NAME` prints one). */
  token: string;
  fetch?: typeof fetch;
}

/** How a transient failure is retried: `attempts` tries in all, pausing `baseDelayMs`, doubling. */
export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
}

const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 250 };

/**
 * The creating procedures whose work the server does once per Idempotency-Key (the routers wrap
 * them in withIdempotencyKey): only these mutations are ever sent twice.
 */
export const KEYED_PROCEDURES: ReadonlySet<string> = new Set([
  "job.enqueueCapture",
  "job.enqueueRestore",
  "workspace.acquire",
  "checkpoint.append",
  "baseline.publish",
  "snapshot.publish",
]);

/**
 * The failures sending the same call again can cure: the server, its database or the network
 * was unavailable (an answer lost on the way is one), or it timed out. Others would answer the
 * same again.
 */
function isTransient(error: StrataError): boolean {
  return (
    error.retryable && (error.code === "UNAVAILABLE" || error.code === "TIMEOUT" || error.code === "BLOB_STORE_FAILED")
  );
}

interface StrataShape {
  code?: unknown;
  message?: string;
  hint?: string | null;
  data?: Record<string, unknown> | null;
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && code in ERROR_CODES;
}

/** The StrataError a server described (tRPC's error.data.strata, or a blob route's JSON body). */
function fromShape(shape: StrataShape | undefined | null, fallback: string): StrataError | null {
  if (!shape || !isErrorCode(shape.code)) return null;
  return new StrataError(shape.code, shape.message ?? fallback, {
    hint: shape.hint ?? undefined,
    data: shape.data ?? undefined,
  });
}

/** The StrataError behind a failed call; `unreachable` (UNAVAILABLE) when the server was not reached. */
function remoteError(error: unknown, unreachable: ErrorCode = "UNAVAILABLE"): StrataError {
  if (error instanceof StrataError) return error;
  if (error instanceof TRPCClientError) {
    const typed = fromShape((error.data as { strata?: StrataShape } | undefined)?.strata, error.message);
    if (typed) return typed;
    if (error.data === undefined || error.data === null) {
      return new StrataError(unreachable, `The Strata server could not be reached: ${error.message}`, { cause: error });
    }
    return new StrataError("INTERNAL", `The Strata server failed: ${error.message}`, { cause: error });
  }
  return new StrataError(unreachable, `The Strata server could not be reached: ${(error as Error).message}`, {
    cause: error,
  });
}

/** The StrataError of a blob route's non-OK response. */
async function blobResponseError(response: Response, what: string, fallbackCode: ErrorCode): Promise<StrataError> {
  const body = (await response.json().catch(() => null)) as { error?: StrataShape } | null;
  const message = `${what} answered ${response.status}.`;
  return fromShape(body?.error, message) ?? new StrataError(fallbackCode, message);
}

/** Runs `fn` again with backoff while it fails transiently; its failure as the server's StrataError. */
async function withRetries<T>(policy: RetryPolicy, fn: () => Promise<T>, unreachable?: ErrorCode): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await fn();
    } catch (error) {
      const failure = remoteError(error, unreachable);
      if (attempt >= policy.attempts || !isTransient(failure)) throw failure;
      await sleep(policy.baseDelayMs * 2 ** (attempt - 1));
    }
  }
}

type TrpcClient = ReturnType<typeof createTRPCClient<AppRouter>>;

/**
 * The tRPC client with the retries of this file: every `.query(…)` retried while transient, every
 * `.mutate(…)` of a keyed procedure sent under one fresh Idempotency-Key and retried with it, any
 * other `.mutate(…)` sent once. Failures are StrataErrors.
 */
function retryingProxy(client: TrpcClient, policy: RetryPolicy): TrpcClient {
  const at = (target: unknown, path: string[]): unknown =>
    new Proxy(target as object, {
      get(obj, prop) {
        const value = Reflect.get(obj, prop) as unknown;
        if (typeof prop !== "string") return value;
        if (prop === "query" && typeof value === "function") {
          return (input: unknown, opts?: object) =>
            withRetries(policy, () => (value as (i: unknown, o?: object) => Promise<unknown>)(input, opts));
        }
        if (prop === "mutate" && typeof value === "function") {
          const mutate = value as (i: unknown, o?: object) => Promise<unknown>;
          const procedure = path.join(".");
          if (!KEYED_PROCEDURES.has(procedure)) {
            return (input: unknown, opts?: object) =>
              withRetries({ ...policy, attempts: 1 }, () => mutate(input, opts));
          }
          return (input: unknown, opts?: { context?: Record<string, unknown> }) => {
            const keyed = { ...opts, context: { ...opts?.context, idempotencyKey: randomUUID() } };
            return withRetries(policy, () => mutate(input, keyed));
          };
        }
        return value !== null && (typeof value === "object" || typeof value === "function")
          ? at(value, [...path, prop])
          : value;
      },
    });
  return at(client, []) as TrpcClient;
}

export function connectServer(opts: ServerOptions & { retry?: Partial<RetryPolicy> }) {
  const base = opts.url.replace(/\/+$/, "");
  const authorization = `Bearer ${opts.token}`;
  const doFetch = opts.fetch ?? fetch;
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...opts.retry };
  const url = `${base}/api/trpc`;
  const client = createTRPCClient<AppRouter>({
    links: [
      // A keyed call goes alone (httpLink), with its own header: a batch shares one.
      splitLink({
        condition: (op) => typeof op.context.idempotencyKey === "string",
        true: httpLink({
          url,
          transformer: superjson,
          headers: ({ op }) => ({ authorization, "idempotency-key": String(op.context.idempotencyKey) }),
          fetch: doFetch,
        }),
        false: httpBatchLink({ url, transformer: superjson, headers: { authorization }, fetch: doFetch }),
      }),
    ],
  });
  /** Runs a call once, turning its failure into the server's StrataError. */
  const call = <T>(fn: () => Promise<T>): Promise<T> => withRetries({ ...policy, attempts: 1 }, fn);
  /** Runs a read, again while it fails transiently. */
  const read = <T>(fn: () => Promise<T>): Promise<T> => withRetries(policy, fn);
  /**
   * Runs one creating call (fn passes `opts` to its mutate) under a fresh Idempotency-Key, and
   * again with that key while it fails transiently.
   */
  const once = <T>(fn: (opts: { context: { idempotencyKey: string } }) => Promise<T>): Promise<T> => {
    const opts = { context: { idempotencyKey: randomUUID() } };
    return withRetries(policy, () => fn(opts));
  };
  const blobUrl = (digest: string) => `${base}/api/blobs/${digest}`;
  return {
    client,
    api: retryingProxy(client, policy),
    call,
    read,
    once,
    policy,
    authorization,
    fetch: doFetch,
    blobUrl,
  };
}

export type ServerConnection = ReturnType<typeof connectServer>;

/** A connection for `target`: itself when it is one already. */
export function connectionOf(target: ServerOptions | ServerConnection): ServerConnection {
  return "client" in target ? target : connectServer(target);
}

async function* chunksOf(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        done = true;
        return;
      }
      yield next.value;
    }
  } finally {
    // Stopping early (a manifest probe) cancels the download.
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/**
 * The server's blob store for the token's agent: which digests it lacks, PUT and GET. A PUT is
 * idempotent by its digest, so it is retried like a read.
 */
export function remoteBlobStore(connection: ServerConnection): CaptureStore {
  const { client, read, policy, authorization, fetch: doFetch, blobUrl } = connection;
  return {
    missing: (digests) => read(async () => (await client.blob.missing.mutate({ digests: [...digests] })).missing),

    put: (digest, bytes) =>
      withRetries(policy, async () => {
        let response: Response;
        try {
          response = await doFetch(blobUrl(digest), {
            method: "PUT",
            headers: { authorization, "content-type": "application/octet-stream" },
            body: bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes),
          });
        } catch (error) {
          throw remoteError(error, "BLOB_STORE_FAILED");
        }
        if (response.ok) return;
        throw await blobResponseError(response, `PUT /api/blobs/${digest}`, "BLOB_STORE_FAILED");
      }),

    async open(digest, signal) {
      const response = await withRetries(policy, async () => {
        let answer: Response;
        try {
          answer = await doFetch(blobUrl(digest), { headers: { authorization }, signal });
        } catch (error) {
          throw remoteError(error);
        }
        if (!answer.ok || !answer.body) {
          const message = `GET /api/blobs/${digest} answered ${answer.status}.`;
          const body = (await answer.json().catch(() => null)) as { error?: StrataShape } | null;
          throw (
            fromShape(body?.error, message) ??
            new StrataError(answer.status === 404 ? "BLOB_MISSING" : "UNAVAILABLE", message, { data: { digest } })
          );
        }
        return answer;
      });
      return chunksOf(response.body!);
    },
  };
}

/** Dependency caches on the server, for the token's agent. */
export function remoteDependencyPort(connection: ServerConnection): DependencyCachePort {
  const { client, call, read } = connection;
  return {
    store: remoteBlobStore(connection),
    find: (input) => read(() => client.dependencyCache.find.query(input)),
    publish: (input) => call(() => client.dependencyCache.publish.mutate(input)),
  };
}
