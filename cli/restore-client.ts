// Restoring against a Strata server over HTTP with an agent token: tRPC (superjson) for the
// snapshot record, the workspace decision and the report; GET /api/blobs/<sha256> for the
// bytes, streamed. Failures come back as the StrataErrors the server raised.
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import superjson from "superjson";
import { ERROR_CODES, StrataError, type ErrorCode } from "../server/domain/errors.ts";
import type { RestorePort } from "../server/services/restore-snapshot.ts";
import type { AppRouter } from "../server/trpc/root.ts";

export interface RemoteRestoreOptions {
  /** The server's address, e.g. https://strata.example.com */
  url: string;
  /** An agent token. */
  token: string;
  fetch?: typeof fetch;
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && code in ERROR_CODES;
}

interface StrataShape {
  code?: unknown;
  message?: string;
  hint?: string | null;
  data?: Record<string, unknown> | null;
}

function fromShape(shape: StrataShape | undefined, fallback: string): StrataError | null {
  if (!shape || !isErrorCode(shape.code)) return null;
  return new StrataError(shape.code, shape.message ?? fallback, {
    hint: shape.hint ?? undefined,
    data: shape.data ?? undefined,
  });
}

/** The StrataError behind a failed call; UNAVAILABLE when the server was not reached. */
function remoteError(error: unknown): StrataError {
  if (error instanceof StrataError) return error;
  if (error instanceof TRPCClientError) {
    const typed = fromShape((error.data as { strata?: StrataShape } | undefined)?.strata, error.message);
    if (typed) return typed;
    if (error.data === undefined || error.data === null) {
      return new StrataError("UNAVAILABLE", `The Strata server could not be reached: ${error.message}`, {
        cause: error,
      });
    }
    return new StrataError("INTERNAL", `The Strata server failed: ${error.message}`, { cause: error });
  }
  return new StrataError("UNAVAILABLE", `The Strata server could not be reached: ${(error as Error).message}`, {
    cause: error,
  });
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

export function remoteRestorePort(opts: RemoteRestoreOptions): RestorePort {
  const base = opts.url.replace(/\/+$/, "");
  const authorization = `Bearer ${opts.token}`;
  const doFetch = opts.fetch ?? fetch;
  const client = createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({ url: `${base}/api/trpc`, transformer: superjson, headers: { authorization }, fetch: doFetch }),
    ],
  });
  const call = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw remoteError(error);
    }
  };

  return {
    getSnapshot: (snapshotId) => call(() => client.snapshot.get.query({ snapshotId, includeRetired: true })),
    acquire: (input) => call(() => client.workspace.acquire.mutate(input)),
    reportRestore: (input) => call(() => client.workspace.reportRestore.mutate(input)),
    async pin(snapshotId, pinId, expiresInSeconds) {
      await call(() => client.pin.pin.mutate({ snapshotId, pinId, expiresInSeconds, purpose: "restore" }));
    },
    async release(snapshotId, pinId) {
      await call(() => client.pin.release.mutate({ snapshotId, pinId }));
    },
    async open(digest, signal) {
      let response: Response;
      try {
        response = await doFetch(`${base}/api/blobs/${digest}`, { headers: { authorization }, signal });
      } catch (error) {
        throw remoteError(error);
      }
      if (!response.ok || !response.body) {
        const body = (await response.json().catch(() => null)) as { error?: StrataShape } | null;
        throw (
          fromShape(body?.error, `GET /api/blobs/${digest} answered ${response.status}.`) ??
          new StrataError(
            response.status === 404 ? "BLOB_MISSING" : "UNAVAILABLE",
            `GET /api/blobs/${digest} answered ${response.status}.`,
            {
              data: { digest },
            },
          )
        );
      }
      return chunksOf(response.body);
    },
  };
}
