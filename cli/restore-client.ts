// Restoring against a Strata server over HTTP with an agent token: tRPC (superjson) for the
// snapshot record, the workspace decision and the report; GET /api/blobs/<sha256> for the
// bytes, streamed. Failures come back as the StrataErrors the server raised.
import { StrataError } from "../server/domain/errors.ts";
import type { RestorePort } from "../server/restore/restore-snapshot.ts";
import { connectServer, fromShape, remoteError, type ServerOptions } from "./server-client.ts";

export type RemoteRestoreOptions = ServerOptions;

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
  const { client, call, authorization, fetch: doFetch, blobUrl } = connectServer(opts);

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
        response = await doFetch(blobUrl(digest), { headers: { authorization }, signal });
      } catch (error) {
        throw remoteError(error);
      }
      if (!response.ok || !response.body) {
        const body = (await response.json().catch(() => null)) as { error?: Parameters<typeof fromShape>[0] } | null;
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
