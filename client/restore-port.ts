// Restoring against a Strata server over HTTP with an agent token: tRPC (superjson) for the
// snapshot record, the workspace decision and the report; GET /api/blobs/<sha256> for the
// bytes, streamed. Failures come back as the StrataErrors the server raised.
import type { RestorePort } from "../server/restore/restore-snapshot.ts";
import {
  connectionOf,
  remoteBlobStore,
  remoteDependencyPort,
  type ServerConnection,
  type ServerOptions,
} from "./connection.ts";

export type RemoteRestoreOptions = ServerOptions;

export function remoteRestorePort(target: RemoteRestoreOptions | ServerConnection): RestorePort {
  const connection = connectionOf(target);
  const { client, call, read, once } = connection;
  const blobs = remoteBlobStore(connection);

  return {
    getSnapshot: (snapshotId) => read(() => client.snapshot.get.query({ snapshotId, includeRetired: true })),
    // Keyed and retried when its answer is lost: the retry gets the same restore, not a second one.
    acquire: (input) => once((opts) => client.workspace.acquire.mutate(input, opts)),
    reportRestore: (input) => call(() => client.workspace.reportRestore.mutate(input)),
    async pin(snapshotId, pinId, expiresInSeconds) {
      await call(() => client.pin.pin.mutate({ snapshotId, pinId, expiresInSeconds, purpose: "restore" }));
    },
    async release(snapshotId, pinId) {
      await call(() => client.pin.release.mutate({ snapshotId, pinId }));
    },
    open: blobs.open,
    dependencies: remoteDependencyPort(connection),
  };
}
