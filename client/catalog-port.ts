// The catalog of a Strata server, reached over HTTP with an agent token: tRPC (superjson) for
// the calls, PUT /api/blobs/<sha256> for the bytes (connection.ts). Errors come back as the StrataErrors the
// server raised, so callers check the same codes as with a local database. The creating calls
// (append, publish) carry an idempotency key and are retried with it when an answer is lost.
import type { CatalogPort } from "../server/capture/capture-publish.ts";
import {
  connectionOf,
  remoteBlobStore,
  remoteDependencyPort,
  type ServerConnection,
  type ServerOptions,
} from "./connection.ts";

export type RemoteCatalogOptions = ServerOptions;

export function remoteCatalog(target: RemoteCatalogOptions | ServerConnection): CatalogPort {
  const connection = connectionOf(target);
  const { client, read, once } = connection;
  const blobs = remoteBlobStore(connection);

  return {
    missingBlobs: (digests) => blobs.missing(digests),
    putBlob: (digest, bytes) => blobs.put(digest, bytes),

    lineageHeadId: (key) =>
      read(async () => {
        const page = await client.lineage.list.query({
          workContextId: key.workContextId,
          repositoryIdentity: key.repository.identity,
          limit: 200,
        });
        const lineage = page.items.find((l) => l.backendKind === key.backendKind && l.baseImage === key.baseImage);
        return lineage?.head?.id ?? null;
      }),

    baselineHeadId: (key) => read(async () => (await client.baseline.head.query({ key }))?.id ?? null),

    appendCheckpoint: (input) =>
      once(async (opts) => {
        const result = await client.checkpoint.append.mutate(input, opts);
        return { outcome: result.outcome, snapshotId: result.snapshot.id };
      }),

    publishBaseline: (input) =>
      once(async (opts) => {
        const result = await client.baseline.publish.mutate(input, opts);
        return { outcome: result.outcome, snapshotId: result.snapshot.id };
      }),

    publishLayers: (input) =>
      once(async (opts) => {
        await client.snapshot.publish.mutate(input, opts);
      }),
    dependencies: remoteDependencyPort(connection),
  };
}
