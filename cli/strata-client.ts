// The catalog of a Strata server, reached over HTTP with an agent token: tRPC (superjson) for
// the calls, PUT /api/blobs/<sha256> for the bytes. Errors come back as the StrataErrors the
// server raised, so callers check the same codes as with a local database.
import type { CatalogPort } from "../server/capture/capture-publish.ts";
import { blobResponseError, connectServer, remoteError, type ServerOptions } from "./server-client.ts";

export type RemoteCatalogOptions = ServerOptions;

export function remoteCatalog(opts: RemoteCatalogOptions): CatalogPort {
  const { client, call, authorization, fetch: doFetch, blobUrl } = connectServer(opts);

  return {
    missingBlobs: (digests) => call(async () => (await client.blob.missing.mutate({ digests: [...digests] })).missing),

    async putBlob(digest, bytes) {
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
  };
}
