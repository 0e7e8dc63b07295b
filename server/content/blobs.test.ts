import { randomBytes } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { BLOB_CHUNK_BYTES, BLOB_ROW_BYTES } from "../domain/content.ts";
import { isStrataError } from "../domain/errors.ts";
import { missingBlobs, openBlob, putBlob, readBlob, readSmallGrantedBlobs, statBlob } from "./blobs.ts";
import { createOwner, sha256, storeBytes } from "../testing/content.ts";

const MiB = 1024 * 1024;
const ROW = BLOB_ROW_BYTES;
const rows = (size: number) => Math.ceil(size / ROW);

/** Yields `bytes` in pieces of uneven sizes, as a network body would arrive. */
async function* inPieces(bytes: Uint8Array, sizes = [1, 7, 65_536, 300_000, 1_048_577]): AsyncGenerator<Uint8Array> {
  let offset = 0;
  let i = 0;
  while (offset < bytes.byteLength) {
    const n = sizes[i++ % sizes.length]!;
    yield bytes.subarray(offset, offset + n);
    offset += n;
  }
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  return Buffer.concat(parts);
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

describeEachDatabase("blob store", (catalog) => {
  // The agent every upload of this suite is made for.
  let agentId = "";
  beforeAll(async () => {
    agentId = (await createOwner(catalog().db)).agentId;
  });

  it.each([0, 1, ROW - 1, ROW, ROW + 1, MiB, 3 * MiB + 5])(
    "stores %i bytes in rows of at most 1 MiB and streams them back",
    async (size) => {
      const db = catalog().db;
      const bytes = randomBytes(size);
      const digest = sha256(bytes);
      const put = await putBlob(db, { digest, body: inPieces(bytes), grantTo: agentId });
      expect(put).toEqual({ digest, sizeBytes: size, chunkCount: rows(size), created: true });

      const row = await db.blob.findFirstOrThrow({ where: { digest } });
      expect(row.state).toBe("stored");
      expect(row.sizeBytes).toBe(BigInt(size));
      expect(row.lastReusedAt).toBeNull();
      const chunks = await db.blobChunk.findMany({ where: { blobId: row.id }, orderBy: { seq: "asc" } });
      expect(chunks.map((c) => c.seq)).toEqual([...Array(rows(size)).keys()]);
      for (const c of chunks.slice(0, -1)) expect(c.data.byteLength).toBe(ROW);
      for (const c of chunks) expect(c.data.byteLength).toBeLessThanOrEqual(BLOB_CHUNK_BYTES);

      const { info, stream } = await openBlob(db, digest, agentId);
      expect(info.sizeBytes).toBe(size);
      expect((await readAll(stream)).equals(bytes)).toBe(true);
    },
  );

  it("accepts a web ReadableStream body", async () => {
    const bytes = randomBytes(2 * MiB + 3);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.subarray(0, 100));
        controller.enqueue(bytes.subarray(100));
        controller.close();
      },
    });
    const put = await putBlob(catalog().db, { digest: sha256(bytes), body, grantTo: agentId });
    expect(put.chunkCount).toBe(rows(2 * MiB + 3));
  });

  it("refuses bytes that do not match the digest (BLOB_CORRUPT) and leaves nothing behind", async () => {
    const db = catalog().db;
    const before = { blobs: await db.blob.count(), chunks: await db.blobChunk.count() };
    const bytes = randomBytes(2 * MiB + 10);
    const claimed = sha256(Buffer.from("something else"));
    const error = await errorOf(putBlob(db, { digest: claimed, body: inPieces(bytes), grantTo: agentId }));
    expect(isStrataError(error, "BLOB_CORRUPT")).toBe(true);
    expect(await db.blob.count()).toBe(before.blobs);
    expect(await db.blobChunk.count()).toBe(before.chunks);
    expect(await statBlob(db, claimed)).toBeNull();
  });

  it("keeps a digest once: a second upload only restarts its grace window", async () => {
    const db = catalog().db;
    const bytes = randomBytes(MiB + 1);
    const digest = sha256(bytes);
    await putBlob(db, { digest, body: inPieces(bytes), grantTo: agentId });
    const first = await db.blob.findFirstOrThrow({ where: { digest } });
    const chunks = await db.blobChunk.count();
    const again = await putBlob(db, { digest, body: inPieces(bytes), grantTo: agentId });
    expect(again.created).toBe(false);
    const found = await db.blob.findMany({ where: { digest } });
    expect(found).toHaveLength(1);
    expect(found[0]!.id).toBe(first.id);
    expect(found[0]!.lastReusedAt!.getTime()).toBeGreaterThanOrEqual(first.storedAt.getTime());
    expect(await db.blobChunk.count()).toBe(chunks);

    // Even then the body must match the digest.
    const error = await errorOf(putBlob(db, { digest, body: inPieces(randomBytes(10)), grantTo: agentId }));
    expect(isStrataError(error, "BLOB_CORRUPT")).toBe(true);
    expect(await db.blob.count({ where: { digest } })).toBe(1);
  });

  it("stores concurrent uploads of the same bytes once", async () => {
    const db = catalog().db;
    const bytes = randomBytes(3 * MiB);
    const digest = sha256(bytes);
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        putBlob(db, { digest, body: inPieces(bytes, [200_000, 900_001]), grantTo: agentId }),
      ),
    );
    // One upload is new for the agent; the others found its grant.
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const found = await db.blob.findMany({ where: { digest } });
    expect(found.map((r) => r.state)).toEqual(["stored"]);
    expect(await db.blobChunk.count({ where: { blobId: found[0]!.id } })).toBe(rows(3 * MiB));
    expect(await db.blob.count({ where: { state: "uploading" } })).toBe(0);
    const { stream } = await openBlob(db, digest, agentId);
    expect((await readAll(stream)).equals(bytes)).toBe(true);
  });

  it("removes a partial upload when the body fails midway", async () => {
    const db = catalog().db;
    const before = await db.blobChunk.count();
    const body = (async function* () {
      yield randomBytes(MiB);
      yield randomBytes(MiB + 7);
      throw new Error("connection reset");
    })();
    const error = await errorOf(putBlob(db, { digest: "b".repeat(64), body, grantTo: agentId }));
    expect((error as Error).message).toBe("connection reset");
    expect(await db.blob.count({ where: { state: "uploading" } })).toBe(0);
    expect(await db.blobChunk.count()).toBe(before);
  });

  it("refuses a body over maxBytes (BLOB_TOO_LARGE) and leaves nothing behind", async () => {
    const db = catalog().db;
    const bytes = randomBytes(MiB + 100);
    const error = await errorOf(
      putBlob(db, { digest: sha256(bytes), body: inPieces(bytes), maxBytes: MiB, grantTo: agentId }),
    );
    expect(isStrataError(error, "BLOB_TOO_LARGE")).toBe(true);
    expect(await db.blob.count({ where: { digest: sha256(bytes) } })).toBe(0);
  });

  it("fails an upload retryably when collection reclaimed its row, leaving nothing", async () => {
    const db = catalog().db;
    const bytes = randomBytes(3 * MiB);
    const digest = sha256(bytes);
    const body = (async function* () {
      yield bytes.subarray(0, MiB);
      yield bytes.subarray(MiB, 2 * MiB);
      // As if collection judged the upload abandoned.
      await db.blob.deleteMany({ where: { digest, state: "uploading" } });
      yield bytes.subarray(2 * MiB);
    })();
    const error = await errorOf(putBlob(db, { digest, body, grantTo: agentId }));
    expect(isStrataError(error, "UNAVAILABLE")).toBe(true);
    expect((error as { retryable: boolean }).retryable).toBe(true);
    expect(await db.blob.count({ where: { digest } })).toBe(0);
  });

  it("rejects a malformed digest", async () => {
    const error = await errorOf(
      putBlob(catalog().db, { digest: "not-a-digest", body: inPieces(Buffer.from("x")), grantTo: agentId }),
    );
    expect(isStrataError(error, "INVALID_INPUT")).toBe(true);
  });

  it("reports missing digests in the order asked and restarts the grace window of the others", async () => {
    const db = catalog().db;
    const present = randomBytes(100);
    const digest = sha256(present);
    await putBlob(db, { digest, body: inPieces(present), grantTo: agentId });
    const absentA = sha256(Buffer.from("absent a"));
    const absentB = sha256(Buffer.from("absent b"));
    // An unfinished upload is not "stored".
    await db.blob.create({ data: { digest: absentB, state: "uploading" } });
    const before = await db.blob.findFirstOrThrow({ where: { digest } });
    expect(await missingBlobs(db, agentId, [absentA, digest, absentB, absentA])).toEqual([absentA, absentB]);
    const after = await db.blob.findFirstOrThrow({ where: { digest } });
    expect(after.lastReusedAt).not.toBeNull();
    expect(after.lastReusedAt!.getTime()).toBeGreaterThanOrEqual(before.storedAt.getTime());
    expect(await missingBlobs(db, agentId, [])).toEqual([]);
    await db.blob.deleteMany({ where: { digest: absentB } });
  });

  it("scopes stored bytes per agent: created, missing, reads and grace-window restarts follow the grants", async () => {
    const db = catalog().db;
    const other = (await createOwner(db)).agentId;
    const bytes = randomBytes(ROW + 3);
    const digest = sha256(bytes);
    expect((await putBlob(db, { digest, body: inPieces(bytes), grantTo: agentId })).created).toBe(true);

    // To the other agent the blob is not there: missing, unreadable with the message of an
    // absent digest, and asking about it does not touch its grace window.
    expect(await missingBlobs(db, other, [digest])).toEqual([digest]);
    expect((await db.blob.findFirstOrThrow({ where: { digest } })).lastReusedAt).toBeNull();
    const hidden = await errorOf(openBlob(db, digest, other));
    const absent = "d".repeat(64);
    const notStored = await errorOf(openBlob(db, absent, other));
    expect(isStrataError(hidden, "BLOB_MISSING") && isStrataError(notStored, "BLOB_MISSING")).toBe(true);
    expect((hidden as Error).message.replace(digest, absent)).toBe((notStored as Error).message);

    // Its own verified upload is new for it and grants it; the first uploader's is not new.
    expect((await putBlob(db, { digest, body: inPieces(bytes), grantTo: other })).created).toBe(true);
    expect((await putBlob(db, { digest, body: inPieces(bytes), grantTo: agentId })).created).toBe(false);
    expect((await readAll((await openBlob(db, digest, other)).stream)).equals(bytes)).toBe(true);
    expect(await missingBlobs(db, other, [digest])).toEqual([]);
    const grants = await db.blobGrant.findMany({ where: { digest }, select: { agentId: true, createdAt: true } });
    expect(grants.map((g) => g.agentId).sort()).toEqual([agentId, other].sort());
    for (const g of grants) expect(Math.abs(g.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
    expect(await db.blob.count({ where: { digest } })).toBe(1);

    // A corrupt body grants nothing.
    const third = (await createOwner(db)).agentId;
    const corrupt = await errorOf(putBlob(db, { digest, body: inPieces(randomBytes(10)), grantTo: third }));
    expect(isStrataError(corrupt, "BLOB_CORRUPT")).toBe(true);
    expect(await db.blobGrant.count({ where: { agentId: third } })).toBe(0);

    // Stored for no agent: nobody is granted, and `created` says whether the bytes were new.
    const loose = randomBytes(50);
    expect((await putBlob(db, { digest: sha256(loose), body: inPieces(loose), grantTo: null })).created).toBe(true);
    expect((await putBlob(db, { digest: sha256(loose), body: inPieces(loose), grantTo: null })).created).toBe(false);
    expect(await db.blobGrant.count({ where: { digest: sha256(loose) } })).toBe(0);
  });

  it("writes another agent's upload of stored bytes like new bytes: no shortcut, no grace window before it is verified", async () => {
    const db = catalog().db;
    const other = (await createOwner(db)).agentId;
    const bytes = randomBytes(2 * ROW + 5);
    const digest = sha256(bytes);
    await putBlob(db, { digest, body: inPieces(bytes), grantTo: agentId });
    const stored = () => db.blob.findFirstOrThrow({ where: { digest, state: "stored" } });

    // Naming the digest with bytes it does not have keeps nothing alive.
    const corrupt = await errorOf(putBlob(db, { digest, body: inPieces(randomBytes(10)), grantTo: other }));
    expect(isStrataError(corrupt, "BLOB_CORRUPT")).toBe(true);
    expect((await stored()).lastReusedAt).toBeNull();

    // The body is written as an upload of its own while it is read (the work and the time of new
    // bytes), then dropped for the stored copy once verified; the holder's repeat skips that.
    const uploadingWhileRead = async (grantTo: string) => {
      let seen = -1;
      const body = (async function* () {
        yield bytes.subarray(0, 2 * ROW);
        seen = await db.blobChunk.count({ where: { blob: { digest, state: "uploading" } } });
        yield bytes.subarray(2 * ROW);
      })();
      const put = await putBlob(db, { digest, body, grantTo });
      return { seen, created: put.created };
    };
    expect(await uploadingWhileRead(other)).toEqual({ seen: 2, created: true });
    expect(await uploadingWhileRead(agentId)).toEqual({ seen: 0, created: false });
    expect((await stored()).lastReusedAt).not.toBeNull();
    expect(await db.blob.count({ where: { digest } })).toBe(1);
  });

  it("answers BLOB_MISSING for a digest it does not store", async () => {
    const error = await errorOf(openBlob(catalog().db, "c".repeat(64), agentId));
    expect(isStrataError(error, "BLOB_MISSING")).toBe(true);
  });

  it("detects damaged stored bytes while reading (BLOB_CORRUPT)", async () => {
    const db = catalog().db;
    const bytes = randomBytes(2 * MiB);
    const digest = sha256(bytes);
    await putBlob(db, { digest, body: inPieces(bytes), grantTo: agentId });
    const info = (await statBlob(db, digest))!;
    const damaged = Buffer.from(bytes.subarray(ROW, 2 * ROW));
    damaged[5] = damaged[5]! ^ 0xff;
    await db.blobChunk.update({ where: { blobId_seq: { blobId: info.id, seq: 1 } }, data: { data: damaged } });
    const chunks: Uint8Array[] = [];
    const error = await errorOf(
      (async () => {
        for await (const chunk of readBlob(db, info)) chunks.push(chunk);
      })(),
    );
    expect(isStrataError(error, "BLOB_CORRUPT")).toBe(true);
    expect(chunks).toHaveLength(rows(2 * MiB));
  });

  it("fails a read with BLOB_MISSING when the blob is collected under it", async () => {
    const db = catalog().db;
    const bytes = randomBytes(2 * MiB);
    const digest = sha256(bytes);
    await putBlob(db, { digest, body: inPieces(bytes), grantTo: agentId });
    const info = (await statBlob(db, digest))!;
    const reader = readBlob(db, info);
    expect((await reader.next()).done).toBe(false);
    await db.blob.delete({ where: { id: info.id } });
    const error = await errorOf(reader.next());
    expect(isStrataError(error, "BLOB_MISSING")).toBe(true);
  });

  it("answers which of more digests than SQLite takes in one statement are missing", async () => {
    const db = catalog().db;
    const owner = { agentId };
    const stored = await Promise.all(
      Array.from({ length: 20 }, (_, i) => storeBytes(db, `many ${i} ${Date.now()}`, owner)),
    );
    const absent = Array.from({ length: 1200 }, (_, i) => sha256(`absent ${i} ${Date.now()}`));
    const asked = [...absent.slice(0, 600), ...stored.map((s) => s.digest), ...absent.slice(600)];
    expect(await missingBlobs(db, agentId, asked)).toEqual(absent);
  });

  it("reads many small granted blobs at once, checked, and leaves the rest to be opened", async () => {
    const db = catalog().db;
    const other = await createOwner(db, "small-reader");
    const small: { digest: string }[] = [];
    for (let i = 0; i < 600; i++) small.push(await storeBytes(db, `small ${i}\n`, { agentId }));
    const empty = await storeBytes(db, "", { agentId });
    const large = await storeBytes(db, randomBytes(BLOB_CHUNK_BYTES + 10), { agentId });
    const notMine = await storeBytes(db, "granted to another agent", other);
    const damaged = await storeBytes(db, "to be damaged", { agentId });
    const info = (await statBlob(db, damaged.digest))!;
    await db.blobChunk.update({
      where: { blobId_seq: { blobId: info.id, seq: 0 } },
      data: { data: Buffer.from("to be DAMAGED") },
    });
    const asked = [...small, empty, large, notMine, damaged].map((b) => b.digest);
    const read = await readSmallGrantedBlobs(db, agentId, asked);
    expect([...read.keys()].sort()).toEqual([...small, empty].map((b) => b.digest).sort());
    expect(read.get(small[123]!.digest)?.toString()).toBe("small 123\n");
    expect(read.get(empty.digest)?.length).toBe(0);
  });
});
