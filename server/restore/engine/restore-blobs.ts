// Where a restore reads a snapshot's blobs (patches, the bundle) from: the catalog, a server
// over HTTP, a file. Whatever the source says, every blob is checked against its sha256 here
// before git sees a byte of it.
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import { isStrataError, StrataError } from "../../domain/errors.ts";

export interface BlobSource {
  /**
   * A stored blob's bytes, streamed. Rejects (or the stream fails) with BLOB_MISSING when the
   * source does not have it; any other failure is a failure of the source itself.
   */
  open(digest: string, signal?: AbortSignal): Promise<AsyncIterable<Uint8Array>>;
}

export function blobMissing(digest: string): StrataError {
  return new StrataError("BLOB_MISSING", `Blob ${digest} is not stored.`, {
    hint: "Store it again (upload, or import an export of the snapshot), then restore again.",
    data: { digest },
  });
}

function blobCorrupt(digest: string, why: string): StrataError {
  return new StrataError("BLOB_CORRUPT", `Blob ${digest} is damaged: ${why}.`, {
    hint: "Upload it again from a good copy, then restore again.",
    data: { digest },
    retryable: false,
  });
}

/**
 * Copies a blob into `file`, hashing as it goes; BLOB_CORRUPT when the bytes do not have the
 * digest (or the recorded size), in which case the file is removed.
 */
export async function copyBlobToFile(
  source: BlobSource,
  digest: string,
  file: string,
  opts: { size?: number; signal?: AbortSignal } = {},
): Promise<number> {
  const hash = createHash("sha256");
  let size = 0;
  try {
    const stream = await source.open(digest, opts.signal);
    await pipeline(
      async function* () {
        for await (const piece of stream) {
          opts.signal?.throwIfAborted();
          hash.update(piece);
          size += piece.byteLength;
          yield piece;
        }
      },
      createWriteStream(file, { flags: "wx" }),
    );
  } catch (error) {
    await rm(file, { force: true });
    if (isStrataError(error, "BLOB_CORRUPT")) throw blobCorrupt(digest, "the source reports damage");
    if (isStrataError(error)) throw error;
    if (opts.signal?.aborted) throw new StrataError("ABORTED", "The restore was aborted.", { cause: error });
    throw error;
  }
  const actual = hash.digest("hex");
  if (actual !== digest) {
    await rm(file, { force: true });
    throw blobCorrupt(digest, "its bytes have another sha256");
  }
  if (opts.size !== undefined && size !== opts.size) {
    await rm(file, { force: true });
    throw blobCorrupt(digest, `it has ${size} bytes, the record says ${opts.size}`);
  }
  return size;
}

/** A source over blobs held in memory (tests, small tools). */
export function memoryBlobSource(blobs: ReadonlyMap<string, Uint8Array>): BlobSource {
  return {
    async open(digest) {
      const bytes = blobs.get(digest);
      if (!bytes) throw blobMissing(digest);
      return (async function* () {
        yield bytes;
      })();
    },
  };
}
