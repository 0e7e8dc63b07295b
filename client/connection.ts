// One way to reach a Strata server over HTTP with an agent token: tRPC (superjson) for calls,
// /api/blobs/<sha256> for bytes. Failures come back as the StrataErrors the server raised, so
// callers check the same codes as against a local database. A creating call (`once`) carries one
// Idempotency-Key and is retried with it while its failure is transient (docs/api.md
// "Idempotency"), so a lost answer never makes the server do the work twice.
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

/** Tries in all for one creating call, and the pause before each retry (0.25 s, 0.5 s, 1 s). */
const ATTEMPTS = 4;
const pauseBefore = (retry: number) => 250 * 2 ** (retry - 1);

/**
 * The failures a retry with the same key can cure: the server or the network was unavailable
 * (an answer lost on the way is one) or timed out. Others would answer the same again.
 */
function isTransient(error: StrataError): boolean {
  return error.retryable && (error.code === "UNAVAILABLE" || error.code === "TIMEOUT");
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

export function connectServer(opts: ServerOptions) {
  const base = opts.url.replace(/\/+$/, "");
  const authorization = `Bearer ${opts.token}`;
  const doFetch = opts.fetch ?? fetch;
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
  /** Runs a tRPC call, turning its failure into the server's StrataError. */
  const call = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw remoteError(error);
    }
  };
  /**
   * Runs one creating call (fn passes `opts` to its mutate) under a fresh Idempotency-Key, and
   * again with that key while it fails transiently, at most ATTEMPTS times in all.
   */
  const once = async <T>(fn: (opts: { context: { idempotencyKey: string } }) => Promise<T>): Promise<T> => {
    const opts = { context: { idempotencyKey: randomUUID() } };
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await fn(opts);
      } catch (error) {
        const failure = remoteError(error);
        if (attempt >= ATTEMPTS || !isTransient(failure)) throw failure;
        await sleep(pauseBefore(attempt));
      }
    }
  };
  const blobUrl = (digest: string) => `${base}/api/blobs/${digest}`;
  return { client, call, once, authorization, fetch: doFetch, blobUrl };
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

/** The server's blob store for the token's agent: which digests it lacks, PUT and GET. */
export function remoteBlobStore(connection: ReturnType<typeof connectServer>): CaptureStore {
  const { client, call, authorization, fetch: doFetch, blobUrl } = connection;
  return {
    missing: (digests) => call(async () => (await client.blob.missing.mutate({ digests: [...digests] })).missing),

    async put(digest, bytes) {
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
    },

    async open(digest, signal) {
      let response: Response;
      try {
        response = await doFetch(blobUrl(digest), { headers: { authorization }, signal });
      } catch (error) {
        throw remoteError(error);
      }
      if (!response.ok || !response.body) {
        const message = `GET /api/blobs/${digest} answered ${response.status}.`;
        const body = (await response.json().catch(() => null)) as { error?: StrataShape } | null;
        throw (
          fromShape(body?.error, message) ??
          new StrataError(response.status === 404 ? "BLOB_MISSING" : "UNAVAILABLE", message, { data: { digest } })
        );
      }
      return chunksOf(response.body);
    },
  };
}

/** Dependency caches on the server, for the token's agent. */
export function remoteDependencyPort(connection: ReturnType<typeof connectServer>): DependencyCachePort {
  const { client, call } = connection;
  return {
    store: remoteBlobStore(connection),
    find: (input) => call(() => client.dependencyCache.find.query(input)),
    publish: (input) => call(() => client.dependencyCache.publish.mutate(input)),
  };
}
