import { createHash, randomBytes } from "node:crypto";
import v8 from "node:v8";
import vm from "node:vm";
import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { BLOB_ROW_BYTES } from "../domain/content.ts";
import { createAgent } from "../auth/agents.ts";
import { sha256 } from "../testing/content.ts";
import { handleBlobGet, handleBlobPut } from "./blob-routes.ts";

const MiB = 1024 * 1024;
const ROW = BLOB_ROW_BYTES;

function put(token: string | null, digest: string, body: ReadableStream<Uint8Array> | Uint8Array | null): Request {
  return new Request(`http://strata.test/api/blobs/${digest}`, {
    method: "PUT",
    headers: token ? { authorization: `Bearer ${token}` } : {},
    body,
    // Node needs this to send a streamed body.
    duplex: "half",
  } as RequestInit);
}

function get(token: string | null, digest: string): Request {
  return new Request(`http://strata.test/api/blobs/${digest}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
}

/** Deterministic pseudo-random 64 KiB pieces, generated on demand (never all at once). */
function piece(index: number): Uint8Array {
  const words = new Uint32Array(16 * 1024);
  let x = (index + 1) * 2654435761;
  for (let i = 0; i < words.length; i += 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  return new Uint8Array(words.buffer);
}

// A full collection before each sample, so the samples measure what is still held, not
// garbage V8 has not got round to yet.
v8.setFlagsFromString("--expose-gc");
const collectGarbage = vm.runInNewContext("gc") as () => void;

function retainedMemory(): number {
  collectGarbage();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

describeEachDatabase("blob HTTP API", (catalog) => {
  let token = "";
  it("refuses requests without a valid agent token (401)", async () => {
    token = (await createAgent(catalog().db, { name: `blob-http-${Math.random().toString(36).slice(2)}` })).token;
    const digest = sha256("x");
    const anonymous = await handleBlobPut(catalog().db, put(null, digest, Buffer.from("x")), digest);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/Bearer/);
    expect((await anonymous.json()).error.code).toBe("UNAUTHORIZED");
    const forged = await handleBlobGet(catalog().db, get("strata_forged", digest), digest);
    expect(forged.status).toBe(401);
    expect(await catalog().db.blob.count({ where: { digest } })).toBe(0);
  });

  it("stores with PUT (201, then 200 for the same bytes) and serves with GET", async () => {
    const bytes = randomBytes(2 * MiB + 17);
    const digest = sha256(bytes);
    const first = await handleBlobPut(catalog().db, put(token, digest, bytes), digest);
    expect(first.status).toBe(201);
    expect(await first.json()).toEqual({ digest, sizeBytes: bytes.byteLength, chunkCount: 9, created: true });
    const again = await handleBlobPut(catalog().db, put(token, digest, bytes), digest);
    expect(again.status).toBe(200);
    expect((await again.json()).created).toBe(false);

    const response = await handleBlobGet(catalog().db, get(token, digest), digest);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe(String(bytes.byteLength));
    expect(response.headers.get("etag")).toBe(`"${digest}"`);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);

    const head = await handleBlobGet(catalog().db, get(token, digest), digest, { head: true });
    expect(head.status).toBe(200);
    expect(head.body).toBeNull();
  });

  it("answers 422 BLOB_CORRUPT for bytes that do not match, 404 for an unknown digest, 400 for a bad one", async () => {
    const digest = sha256("the real content");
    const corrupt = await handleBlobPut(catalog().db, put(token, digest, Buffer.from("other content")), digest);
    expect(corrupt.status).toBe(422);
    expect((await corrupt.json()).error.code).toBe("BLOB_CORRUPT");
    expect(await catalog().db.blob.count({ where: { digest } })).toBe(0);

    const missing = await handleBlobGet(catalog().db, get(token, digest), digest);
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe("BLOB_MISSING");

    const bad = await handleBlobGet(catalog().db, get(token, "xyz"), "xyz");
    expect(bad.status).toBe(400);
  });

  it("scopes blobs per agent: another agent's bytes answer like bytes never stored until it uploads them", async () => {
    const db = catalog().db;
    const other = (await createAgent(db, { name: `blob-http-b-${Math.random().toString(36).slice(2)}` })).token;
    const bytes = randomBytes(ROW + 100);
    const digest = sha256(bytes);
    expect((await handleBlobPut(db, put(token, digest, bytes), digest)).status).toBe(201);

    // What a request for a digest nobody stored gets, compared with the stored one's answer.
    const never = sha256(randomBytes(32));
    const answer = async (response: Response, named: string) => ({
      status: response.status,
      headers: [...response.headers.entries()],
      body: (await response.text()).replaceAll(named, "<digest>"),
    });
    for (const head of [false, true]) {
      const hidden = await answer(await handleBlobGet(db, get(other, digest), digest, { head }), digest);
      const absent = await answer(await handleBlobGet(db, get(other, never), never, { head }), never);
      expect(hidden).toEqual(absent);
      expect(hidden.status).toBe(404);
    }
    const missingBody = await (await handleBlobGet(db, get(other, digest), digest)).json();
    expect(missingBody.error).toMatchObject({ code: "BLOB_MISSING", data: { digest } });

    // Its own upload of the same bytes is new for it (201, created), and then it may read them.
    const theirs = await handleBlobPut(db, put(other, digest, bytes), digest);
    expect([theirs.status, (await theirs.json()).created]).toEqual([201, true]);
    const read = await handleBlobGet(db, get(other, digest), digest);
    expect(read.status).toBe(200);
    expect(Buffer.from(await read.arrayBuffer()).equals(bytes)).toBe(true);
    // The first uploader's second upload is not new for it.
    const again = await handleBlobPut(db, put(token, digest, bytes), digest);
    expect([again.status, (await again.json()).created]).toEqual([200, false]);
  });

  it("streams a 200 MiB blob in and out without holding it in memory", async () => {
    const pieces = (200 * MiB) / (64 * 1024);
    const hash = createHash("sha256");
    for (let i = 0; i < pieces; i += 1) hash.update(piece(i));
    const digest = hash.digest("hex");

    const baseline = retainedMemory();
    let peak = 0;
    let calls = 0;
    // Every 8 MiB or so: 25 samples each way.
    const sample = () => {
      if (calls++ % 128 === 0) peak = Math.max(peak, retainedMemory() - baseline);
    };

    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        sample();
        if (next === pieces) controller.close();
        else controller.enqueue(piece(next++));
      },
    });
    const stored = await handleBlobPut(catalog().db, put(token, digest, body), digest);
    expect(stored.status).toBe(201);
    expect((await stored.json()).chunkCount).toBe(800);

    const response = await handleBlobGet(catalog().db, get(token, digest), digest);
    expect(response.status).toBe(200);
    const check = createHash("sha256");
    let received = 0;
    const reader = response.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      check.update(value);
      received += value.byteLength;
      sample();
    }
    expect(received).toBe(200 * MiB);
    expect(check.digest("hex")).toBe(digest);
    // Holding the blob whole would need 200 MiB or more. What is held: rows in flight, and rows
    // read or written that the garbage collector has not reclaimed yet.
    expect(peak).toBeLessThan(64 * MiB);
    console.info(`200 MiB through PUT and GET: peak heap+external growth ${(peak / MiB).toFixed(1)} MiB`);
  }, 300_000);
});
