// The catalog of a Strata server, reached over HTTP with an agent token: tRPC (superjson) for
// the calls, PUT /api/blobs/<sha256> for the bytes. Errors come back as the StrataErrors the
// server raised, so callers check the same codes as with a local database.
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import superjson from "superjson";
import { ERROR_CODES, StrataError, type ErrorCode } from "../server/domain/errors.ts";
import type { CatalogPort } from "../server/services/capture-publish.ts";
import type { AppRouter } from "../server/trpc/root.ts";

export interface RemoteCatalogOptions {
  /** The server's address, e.g. https://strata.example.com */
  url: string;
  /** An agent token (`strata agent create NAME` prints one). */
  token: string;
  fetch?: typeof fetch;
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && code in ERROR_CODES;
}

/** The StrataError behind a failed call, or UNAVAILABLE when the server was not reached. */
export function remoteError(error: unknown, unreachable: ErrorCode = "UNAVAILABLE"): StrataError {
  if (error instanceof StrataError) return error;
  if (error instanceof TRPCClientError) {
    const shape = (error.data as { strata?: { code?: unknown; message?: string; hint?: string | null } } | undefined)
      ?.strata;
    if (shape && isErrorCode(shape.code)) {
      return new StrataError(shape.code, shape.message ?? error.message, { hint: shape.hint ?? undefined });
    }
    if (error.data === undefined || error.data === null) {
      return new StrataError(unreachable, `The Strata server could not be reached: ${error.message}`, { cause: error });
    }
    return new StrataError("INTERNAL", `The Strata server failed: ${error.message}`, { cause: error });
  }
  return new StrataError(unreachable, `The Strata server could not be reached: ${(error as Error).message}`, {
    cause: error,
  });
}

export function remoteCatalog(opts: RemoteCatalogOptions): CatalogPort {
  const base = opts.url.replace(/\/+$/, "");
  const authorization = `Bearer ${opts.token}`;
  const doFetch = opts.fetch ?? fetch;
  const client = createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: `${base}/api/trpc`,
        transformer: superjson,
        headers: { authorization },
        fetch: doFetch,
      }),
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
    missingBlobs: (digests) => call(async () => (await client.blob.missing.mutate({ digests: [...digests] })).missing),

    async putBlob(digest, bytes) {
      let response: Response;
      try {
        response = await doFetch(`${base}/api/blobs/${digest}`, {
          method: "PUT",
          headers: { authorization, "content-type": "application/octet-stream" },
          body: bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes),
        });
      } catch (error) {
        throw remoteError(error, "BLOB_STORE_FAILED");
      }
      if (response.ok) return;
      const body = (await response.json().catch(() => null)) as { error?: { code?: unknown; message?: string } } | null;
      const code = body?.error?.code;
      throw new StrataError(
        isErrorCode(code) ? code : "BLOB_STORE_FAILED",
        body?.error?.message ?? `PUT /api/blobs/${digest} answered ${response.status}.`,
      );
    },

    lineageHeadId: (key) =>
      call(async () => {
        const page = await client.lineage.list.query({
          workContextId: key.workContextId,
          repositoryIdentity: key.repository.identity,
          limit: 200,
        });
        const lineage = page.items.find((l) => l.backendKind === key.backendKind && l.baseImage === key.baseImage);
        return lineage?.head?.id ?? null;
      }),

    baselineHeadId: (key) =>
      call(async () => {
        // No lookup by key exists for agents: page through this agent's snapshots.
        let cursor: string | undefined;
        for (let pages = 0; pages < 100; pages++) {
          const page = await client.snapshot.list.query({ limit: 200, cursor });
          const head = page.items.find(
            (s) =>
              s.class === "baseline" &&
              s.state === "ready" &&
              s.canonicalRef === key.canonicalRef &&
              s.backendKind === key.backendKind &&
              s.baseImage === key.baseImage &&
              s.repository.identity === key.repository.identity,
          );
          if (head) return head.id;
          if (!page.nextCursor) return null;
          cursor = page.nextCursor;
        }
        return null;
      }),

    appendCheckpoint: (input) =>
      call(async () => {
        const result = await client.checkpoint.append.mutate(input);
        return { outcome: result.outcome, snapshotId: result.snapshot.id };
      }),

    publishBaseline: (input) =>
      call(async () => {
        const result = await client.baseline.publish.mutate(input);
        return { outcome: result.outcome, snapshotId: result.snapshot.id };
      }),

    publishLayers: (input) =>
      call(async () => {
        await client.snapshot.publish.mutate(input);
      }),
  };
}
