// The blob store: bytes kept once by SHA-256, in rows of at most 1 MiB (written 256 KiB at a
// time, see BLOB_ROW_BYTES), in the catalog database.
//
// An upload streams into a fresh `uploading` row, chunk by chunk, hashing as it goes; only
// when the whole body matches the claimed digest does the row become `stored`, in one short
// transaction. A mismatch removes everything the upload wrote. Reads stream chunk by chunk too,
// so neither direction ever holds a whole blob in memory.
//
// Collection (gc.ts) deletes a stored blob only when nothing references it and it was stored
// or last reused longer ago than the grace window: a digest the server already has is
// "reused" when an upload or a `missing` query names it, which restarts its grace window.
//
// Bytes are stored once, but an agent only gets at the digests granted to it (blob_grants): a
// grant is given when the agent's upload of the bytes was verified, or when the server stored
// them on the agent's behalf. Reading a blob over HTTP, `missing` reporting it present and
// publishing it all need the grant, and so do restores and exports the server runs for the
// agent, so knowing a digest reveals nothing about another agent's content. Only the dashboard's
// reads (operators, no agent) do not ask.
import { createHash, randomUUID } from "node:crypto";
import type { Db } from "../db/client.ts";
import { inTransaction } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { BLOB_ROW_BYTES, blobDigestSchema } from "../domain/content.ts";
import { StrataError } from "../domain/errors.ts";
import { dbNow, slices } from "../db/sql.ts";
import {
  insertBlobChunk,
  insertBlobGrant,
  lockStoredBlob,
  lockStoredDigests,
  lockUngrantedStoredBlobs,
  readBlobChunk,
  readSmallGrantedChunks,
} from "../db/statements/content.ts";

/** Bytes as they arrive: a web stream (a Request body) or any async iterable (a Node stream). */
type ByteSource = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

export interface PutBlobOptions {
  /** The SHA-256 the caller claims for the bytes; the upload is refused unless they match. */
  digest: string;
  body: ByteSource;
  /** Refuse bodies larger than this (BLOB_TOO_LARGE). */
  maxBytes?: number;
  signal?: AbortSignal;
  /**
   * The agent the bytes are stored for: once they are verified it is granted the digest. Null
   * stores them for no agent (tests and tools that act for nobody): nobody is granted.
   */
  grantTo: string | null;
}

export interface PutBlobResult {
  digest: string;
  sizeBytes: number;
  chunkCount: number;
  /**
   * True when the bytes are new for the agent: it had no grant of the digest before (with
   * `grantTo: null`, when the bytes were not stored before). When false the upload was verified
   * and discarded. Whether another agent stored the same bytes never shows here.
   */
  created: boolean;
}

export interface BlobInfo {
  id: string;
  digest: string;
  sizeBytes: number;
  chunkCount: number;
  storedAt: Date;
  lastReusedAt: Date | null;
}

/** 4 GiB: far above any patch or bundle we expect, and a guard against a runaway body. */
export const DEFAULT_MAX_BLOB_BYTES = 4 * 1024 ** 3;

export function parseDigest(digest: string): string {
  const parsed = blobDigestSchema.safeParse(digest);
  if (!parsed.success) {
    throw new StrataError("INVALID_INPUT", "A blob is named by its sha256: 64 hex characters.", {
      data: { field: "digest" },
    });
  }
  return parsed.data;
}

async function* bytesOf(source: ByteSource, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
  if ("getReader" in source) {
    const reader = source.getReader();
    let finished = false;
    try {
      for (;;) {
        signal?.throwIfAborted();
        const { done, value } = await reader.read();
        if (done) {
          finished = true;
          return;
        }
        if (value && value.byteLength > 0) yield value;
      }
    } finally {
      if (!finished) await reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
  } else {
    for await (const piece of source) {
      signal?.throwIfAborted();
      if (piece.byteLength > 0) yield piece;
    }
  }
}

/**
 * Cuts a byte stream into pieces of exactly `size` bytes (the last may be shorter), reusing one
 * buffer: each piece is only valid until the consumer asks for the next one.
 */
async function* fixedChunks(pieces: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array<ArrayBuffer>> {
  const buffer = Buffer.allocUnsafe(size);
  let filled = 0;
  for await (const piece of pieces) {
    let offset = 0;
    while (offset < piece.byteLength) {
      const n = Math.min(size - filled, piece.byteLength - offset);
      buffer.set(piece.subarray(offset, offset + n), filled);
      filled += n;
      offset += n;
      if (filled === size) {
        yield buffer;
        filled = 0;
      }
    }
  }
  if (filled > 0) yield buffer.subarray(0, filled);
}

function tooLarge(maxBytes: number): StrataError {
  return new StrataError("BLOB_TOO_LARGE", `The blob is larger than ${maxBytes} bytes.`, {
    data: { maxBytes },
  });
}

function corrupt(expected: string, actual: string, sizeBytes: number): StrataError {
  return new StrataError("BLOB_CORRUPT", `The uploaded bytes do not have the digest ${expected}.`, {
    hint: "Nothing was stored. Upload the blob again; if it keeps failing, recompute its sha256.",
    data: { expected, actual, sizeBytes },
  });
}

function uploadLost(digest: string): StrataError {
  return new StrataError("UNAVAILABLE", `The upload of ${digest} was collected before it finished.`, {
    hint: "An upload left without progress is reclaimed by garbage collection; upload it again.",
    retryable: true,
  });
}

/** Restarts the grace window of stored blobs; returns how many of the digests are stored. */
async function touchStored(db: Db, digests: readonly string[]): Promise<number> {
  if (digests.length === 0) return 0;
  const now = await dbNow(db);
  const touched = await db.blob.updateMany({
    where: { state: "stored", digest: { in: [...digests] } },
    data: { lastReusedAt: now },
  });
  return touched.count;
}

/** Whether the upload is new for its agent (or, stored for nobody, whether the bytes were new). */
async function newForUploader(
  tx: Db,
  grantTo: string | null,
  digest: string,
  now: Date,
  bytesWereNew: boolean,
): Promise<boolean> {
  // The caller holds the stored blob row locked, so collection cannot delete the blob (and its
  // grants) in between.
  return grantTo === null ? bytesWereNew : insertBlobGrant(tx, grantTo, digest, now);
}

/**
 * Inside a transaction: locks the stored copy of a digest against collection, restarts its
 * grace window and grants it to the uploader. Null when no copy is stored.
 */
async function claimStored(
  tx: Db,
  digest: string,
  grantTo: string | null,
): Promise<{ chunkCount: number; created: boolean } | null> {
  const stored = await lockStoredBlob(tx, digest);
  if (!stored) return null;
  const now = await dbNow(tx);
  await tx.blob.update({ where: { id: stored.id }, data: { lastReusedAt: now } });
  return { chunkCount: stored.chunkCount, created: await newForUploader(tx, grantTo, digest, now, false) };
}

/**
 * Stores a blob from a stream and grants it to `grantTo`. Verifies the digest before anything
 * becomes visible or granted; a digest already stored only restarts its grace window (the body
 * is still read and verified, so a grant always proves the agent had the bytes).
 * Call it with the client, not inside a transaction: it writes one chunk per statement.
 */
export async function putBlob(db: Db, opts: PutBlobOptions): Promise<PutBlobResult> {
  const digest = parseDigest(opts.digest);
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BLOB_BYTES;

  // The shortcut for bytes already stored (read and verify, write nothing) is for an uploader
  // that holds them already. Anyone else's upload is written like new bytes and dropped for the
  // stored copy once verified, so neither its timing nor a restarted grace window tells whether
  // another agent stored them.
  const holds = opts.grantTo === null || (await hasGrant(db, opts.grantTo, digest));
  if (holds && (await touchStored(db, [digest])) === 1) return verifyKnownUpload(db, digest, opts, maxBytes);

  const id = randomUUID();
  await db.blob.create({ data: { id, digest, state: "uploading", storedAt: await dbNow(db) } });
  try {
    const hash = createHash("sha256");
    let sizeBytes = 0;
    let seq = 0;
    const pieces = (async function* () {
      for await (const piece of bytesOf(opts.body, opts.signal)) {
        sizeBytes += piece.byteLength;
        if (sizeBytes > maxBytes) throw tooLarge(maxBytes);
        hash.update(piece);
        yield piece;
      }
    })();
    for await (const chunk of fixedChunks(pieces, BLOB_ROW_BYTES)) {
      try {
        await insertBlobChunk(db, id, seq, chunk);
      } catch (error) {
        // Collection may have reclaimed the upload as abandoned (the chunk's foreign key fails).
        if ((await db.blob.count({ where: { id, state: "uploading" } })) === 0) throw uploadLost(digest);
        throw error;
      }
      seq += 1;
    }
    const actual = hash.digest("hex");
    if (actual !== digest) throw corrupt(digest, actual, sizeBytes);
    return await finishUpload(db, { id, digest, sizeBytes, chunkCount: seq }, opts.grantTo);
  } catch (error) {
    // Leave nothing behind; if even this fails, collection reclaims the abandoned upload.
    await db.blob.deleteMany({ where: { id, state: "uploading" } }).catch(() => undefined);
    throw error;
  }
}

async function verifyKnownUpload(
  db: Db,
  digest: string,
  opts: PutBlobOptions,
  maxBytes: number,
): Promise<PutBlobResult> {
  const hash = createHash("sha256");
  let sizeBytes = 0;
  for await (const piece of bytesOf(opts.body, opts.signal)) {
    sizeBytes += piece.byteLength;
    if (sizeBytes > maxBytes) throw tooLarge(maxBytes);
    hash.update(piece);
  }
  const actual = hash.digest("hex");
  if (actual !== digest) throw corrupt(digest, actual, sizeBytes);
  // Touch again: the stored copy must still be there when we say it is (and when we grant it).
  const claimed = await inTransaction(db, (tx) => claimStored(tx, digest, opts.grantTo));
  if (!claimed) {
    throw new StrataError("BLOB_MISSING", `Blob ${digest} was collected while the upload was read.`, {
      hint: "Upload it again.",
      retryable: true,
    });
  }
  return { digest, sizeBytes, chunkCount: claimed.chunkCount, created: claimed.created };
}

async function finishUpload(
  db: Db,
  upload: { id: string; digest: string; sizeBytes: number; chunkCount: number },
  grantTo: string | null,
): Promise<PutBlobResult> {
  const done = (created: boolean): PutBlobResult => ({
    digest: upload.digest,
    sizeBytes: upload.sizeBytes,
    chunkCount: upload.chunkCount,
    created,
  });
  return inTransaction(db, async (tx) => {
    // A stored copy (if any) is locked against collection while we decide.
    const reused = await claimStored(tx, upload.digest, grantTo);
    if (reused) {
      await tx.blob.deleteMany({ where: { id: upload.id, state: "uploading" } });
      return done(reused.created);
    }
    const now = await dbNow(tx);
    try {
      const promoted = await tx.blob.updateMany({
        where: { id: upload.id, state: "uploading" },
        data: {
          state: "stored",
          storedAt: now,
          lastReusedAt: null,
          sizeBytes: upload.sizeBytes,
          chunkCount: upload.chunkCount,
        },
      });
      if (promoted.count !== 1) throw uploadLost(upload.digest);
    } catch (error) {
      // Another upload of the same bytes became stored first: the retry reuses it.
      if (isUniqueViolation(error)) throw new RetryTransaction("digest stored concurrently");
      throw error;
    }
    // The promoted row is ours and uncommitted: collection cannot see it before the grant.
    return done(await newForUploader(tx, grantTo, upload.digest, now, true));
  });
}

/** A stored blob's row, or null. */
export async function statBlob(db: Db, digest: string): Promise<BlobInfo | null> {
  const row = await db.blob.findFirst({
    where: { digest: parseDigest(digest), state: "stored" },
    select: { id: true, digest: true, sizeBytes: true, chunkCount: true, storedAt: true, lastReusedAt: true },
  });
  return row ? { ...row, sizeBytes: Number(row.sizeBytes) } : null;
}

function missingBlob(digest: string, detail = ""): StrataError {
  return new StrataError("BLOB_MISSING", `Blob ${digest} is not stored${detail}.`, {
    hint: "Upload it (PUT /api/blobs/<sha256>) and try again.",
    data: { digest },
  });
}

/**
 * Yields a stored blob's bytes chunk by chunk, one row per query, and checks the digest and
 * size at the end (BLOB_CORRUPT). A blob collected while it is read fails with BLOB_MISSING.
 */
export async function* readBlob(db: Db, info: BlobInfo): AsyncGenerator<Uint8Array> {
  const hash = createHash("sha256");
  let sizeBytes = 0;
  for (let seq = 0; seq < info.chunkCount; seq += 1) {
    const data = await readBlobChunk(db, info.id, seq);
    if (!data) throw missingBlob(info.digest, " any more (it was collected while being read)");
    hash.update(data);
    sizeBytes += data.byteLength;
    yield data;
  }
  const actual = hash.digest("hex");
  if (actual !== info.digest || sizeBytes !== info.sizeBytes) {
    throw new StrataError("BLOB_CORRUPT", `The stored bytes of ${info.digest} do not match their digest.`, {
      hint: "Upload the blob again from a good copy.",
      data: { expected: info.digest, actual, sizeBytes },
      retryable: false,
    });
  }
}

/** Whether the agent holds a grant of the digest (stored or not). */
async function hasGrant(db: Db, agentId: string, digest: string): Promise<boolean> {
  const grant = await db.blobGrant.findUnique({
    where: { agentId_digest: { agentId, digest } },
    select: { digest: true },
  });
  return grant !== null;
}

/** The digests among `digests` granted to `agentId` (stored or not). */
export async function grantedDigests(db: Db, agentId: string, digests: readonly string[]): Promise<Set<string>> {
  const granted = new Set<string>();
  for (const slice of slices([...new Set(digests)], 500)) {
    const rows = await db.blobGrant.findMany({ where: { agentId, digest: { in: slice } }, select: { digest: true } });
    for (const row of rows) granted.add(row.digest);
  }
  return granted;
}

/**
 * A stored blob's size and chunk count when `agentId` holds a grant of it; null when it is not
 * stored or not granted. Every read on an agent's behalf goes through this, over HTTP or not.
 */
export async function statGrantedBlob(db: Db, agentId: string, digest: string): Promise<BlobInfo | null> {
  return (await hasGrant(db, agentId, digest)) ? statBlob(db, digest) : null;
}

/**
 * The bytes of the small blobs among `digests` granted to `agentId` (those of one chunk), in one
 * query per 500: what a restore of many small files reads. Each is checked against its
 * digest and size; a blob not returned (not granted, not stored, larger, or damaged) is for the
 * caller to open one by one, which reports why.
 */
export async function readSmallGrantedBlobs(
  db: Db,
  agentId: string,
  digests: readonly string[],
): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  for (const slice of slices([...new Set(digests)], 500)) {
    for (const row of await readSmallGrantedChunks(db, agentId, slice)) {
      const bytes = row.bytes ?? Buffer.alloc(0);
      if (bytes.length !== row.sizeBytes) continue;
      if (createHash("sha256").update(bytes).digest("hex") === row.digest) found.set(row.digest, bytes);
    }
  }
  return found;
}

/**
 * Opens a stored blob granted to `agentId` for streaming: BLOB_MISSING before any byte when it
 * is not stored or not granted (the same error, so an agent cannot tell the two apart).
 * The stream pulls one chunk at a time, so a slow reader holds at most one chunk.
 */
export async function openBlob(
  db: Db,
  digest: string,
  agentId: string,
): Promise<{ info: BlobInfo; stream: ReadableStream<Uint8Array> }> {
  const wanted = parseDigest(digest);
  const info = await statGrantedBlob(db, agentId, wanted);
  if (!info) throw missingBlob(wanted);
  const chunks = readBlob(db, info);
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await chunks.next();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        } catch (error) {
          controller.error(error);
        }
      },
      async cancel() {
        await chunks.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return { info, stream };
}

/**
 * The digests `agentId` would have to upload, in the order asked: all but the stored ones
 * granted to it (another agent's copy counts as missing). The present ones get their grace
 * window restarted, so a client that skips uploading them can still publish them.
 */
export async function missingBlobs(db: Db, agentId: string, digests: readonly string[]): Promise<string[]> {
  const wanted = [...new Set(digests.map(parseDigest))];
  if (wanted.length === 0) return [];
  const present = new Set<string>();
  for (const slice of slices([...(await grantedDigests(db, agentId, wanted))], 500)) {
    await touchStored(db, slice);
    const rows = await db.blob.findMany({
      where: { state: "stored", digest: { in: slice } },
      select: { digest: true },
    });
    for (const row of rows) present.add(row.digest);
  }
  return wanted.filter((d) => !present.has(d));
}

/**
 * Inside a transaction: grants `agentId` every digest of `digests`, which must all be stored
 * (BLOB_MISSING, retryable, when collection took one meanwhile). Locks the stored rows against
 * collection and restarts their grace window, as an upload's grant does. Returns how many
 * grants are new. For bytes the server stored for nobody first (`grantTo: null`) and verified.
 */
export async function grantStoredBlobs(tx: Db, agentId: string, digests: readonly string[]): Promise<number> {
  const wanted = [...new Set(digests)].sort();
  if (wanted.length === 0) return 0;
  const now = await dbNow(tx);
  let added = 0;
  for (const slice of slices(wanted, 500)) {
    const locked = await lockStoredDigests(tx, slice);
    if (locked.length !== slice.length) {
      const found = new Set(locked);
      const gone = slice.find((d) => !found.has(d)) ?? "";
      throw new StrataError("BLOB_MISSING", `Blob ${gone} was collected before it could be granted.`, {
        hint: "Nothing was recorded. Try again.",
        retryable: true,
        data: { digest: gone },
      });
    }
    await tx.blob.updateMany({ where: { state: "stored", digest: { in: slice } }, data: { lastReusedAt: now } });
    for (const digest of slice) if (await insertBlobGrant(tx, agentId, digest, now)) added += 1;
  }
  return added;
}

/** Ends `agentId`'s grant of `digest` (the agent can no longer read or reference it); false if it had none. */
export async function revokeBlobGrant(db: Db, agentId: string, digest: string): Promise<boolean> {
  const deleted = await db.blobGrant.deleteMany({ where: { agentId, digest: parseDigest(digest) } });
  return deleted.count > 0;
}

/**
 * Removes stored blobs among `digests` that nobody holds a grant of: bytes stored for nobody
 * by a call that then failed. A digest someone was granted meanwhile stays. Collection would
 * reclaim them after the grace window anyway; this makes a failed call leave nothing now.
 */
export async function dropUngrantedBlobs(db: Db, digests: readonly string[]): Promise<number> {
  const wanted = [...new Set(digests)].sort();
  let dropped = 0;
  for (const slice of slices(wanted, 500)) {
    dropped += await inTransaction(db, async (tx) => {
      const ids = await lockUngrantedStoredBlobs(tx, slice);
      if (ids.length === 0) return 0;
      // Their chunks go with them (ON DELETE CASCADE).
      const deleted = await tx.blob.deleteMany({ where: { id: { in: ids }, state: "stored" } });
      return deleted.count;
    });
  }
  return dropped;
}
