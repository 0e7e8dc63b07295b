// Where a backend keeps the bytes of what it captures: a content-addressed store, acting as one
// agent. The catalog's blob store is one (content/blobs.ts, over HTTP the blob routes); tests and
// tools use one in memory. Every read is checked against its sha256 by the reader.
import type { Db } from "../db/client.ts";
import {
  dropUngrantedBlobs,
  missingBlobs,
  putBlob,
  readBlob,
  readSmallGrantedBlobs,
  revokeBlobGrant,
  statGrantedBlob,
} from "../content/blobs.ts";
import { isStrataError } from "../domain/errors.ts";
import { blobMissing, memoryBlobSource, type BlobSource } from "../restore/engine/restore-blobs.ts";

export interface ContentStore extends BlobSource {
  /** The digests the store lacks (for this agent). */
  missing(digests: readonly string[]): Promise<string[]>;
  put(digest: string, bytes: Uint8Array): Promise<void>;
  /** The bytes of as many of `digests` as can be read at once (small ones); the rest are opened one by one. */
  readMany(digests: readonly string[]): Promise<Map<string, Buffer>>;
  /** Gives up this agent's hold on a blob (the bytes go once nobody holds them); false if it held none. */
  remove(digest: string): Promise<boolean>;
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** The catalog's blob store in this process's database, for one agent. */
export function catalogContentStore(db: Db, agentId: string): ContentStore {
  return {
    missing: (digests) => missingBlobs(db, agentId, digests),
    async put(digest, bytes) {
      await putBlob(db, { digest, body: once(bytes), grantTo: agentId });
    },
    async open(digest) {
      const info = await statGrantedBlob(db, agentId, digest);
      if (!info) throw blobMissing(digest);
      return readBlob(db, info);
    },
    readMany: (digests) => readSmallGrantedBlobs(db, agentId, digests),
    async remove(digest) {
      const revoked = await revokeBlobGrant(db, agentId, digest);
      await dropUngrantedBlobs(db, [digest]);
      return revoked;
    },
  };
}

/** A store in memory (tests, tools). `blobs` is shared with the caller, who may damage it. */
export function memoryContentStore(
  blobs = new Map<string, Uint8Array>(),
): ContentStore & { blobs: Map<string, Uint8Array> } {
  return {
    ...memoryBlobSource(blobs),
    blobs,
    async missing(digests) {
      return [...new Set(digests)].filter((d) => !blobs.has(d));
    },
    async put(digest, bytes) {
      blobs.set(digest, Uint8Array.from(bytes));
    },
    async readMany(digests) {
      const found = new Map<string, Buffer>();
      for (const digest of digests) {
        const bytes = blobs.get(digest);
        if (bytes) found.set(digest, Buffer.from(bytes));
      }
      return found;
    },
    async remove(digest) {
      return blobs.delete(digest);
    },
  };
}

/** Reads a whole blob (small ones: records, manifests). */
export async function readWhole(source: BlobSource, digest: string, signal?: AbortSignal): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const piece of await source.open(digest, signal)) parts.push(piece);
  return Buffer.concat(parts);
}

/** A store-backed artifact's delete: this agent gives up its hold on the artifact's record. */
export async function removeRecord(
  ref: string,
  ctx: { store: Pick<ContentStore, "remove"> },
): Promise<{ deleted: boolean }> {
  return { deleted: await ctx.store.remove(ref) };
}

/** Reads an artifact's record for `describe`: null when the store no longer has it. */
export async function recordOrGone<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (error) {
    if (isStrataError(error, "BLOB_MISSING")) return null;
    throw error;
  }
}
