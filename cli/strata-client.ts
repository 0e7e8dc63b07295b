// The catalog of a Strata server, reached over HTTP with an agent token: tRPC (superjson) for
// the calls, PUT /api/blobs/<sha256> for the bytes (server-client.ts). Errors come back as the StrataErrors the
// server raised, so callers check the same codes as with a local database.
import type { CatalogPort } from "../server/capture/capture-publish.ts";
import { connectServer, remoteBlobStore, remoteDependencyPort, type ServerOptions } from "./server-client.ts";

export type RemoteCatalogOptions = ServerOptions;

export function remoteCatalog(opts: RemoteCatalogOptions): CatalogPort {
  const connection = connectServer(opts);
  const { client, call } = connection;
  const blobs = remoteBlobStore(connection);

  return {
    missingBlobs: (digests) => blobs.missing(digests),
    putBlob: (digest, bytes) => blobs.put(digest, bytes),

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

    baselineHeadId: (key) => call(async () => (await client.baseline.head.query({ key }))?.id ?? null),

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
    dependencies: remoteDependencyPort(connection),
  };
}
