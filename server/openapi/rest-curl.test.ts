// A client in another shape than TypeScript: rest-curl.sh, plain sh and curl, against a real
// server on both databases. It checkpoints (with a stored blob) and acquires over REST; every
// answer equals the tRPC route's for the same call (the tRPC calls replay the script's idempotency
// keys, so they answer the same calls, not new ones), and its mistakes get typed errors with
// nothing stored.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import superjson from "superjson";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { serveApp, type TestServer } from "../testing/http-server.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";

const SCRIPT = new URL("./rest-curl.sh", import.meta.url).pathname;

describeEachDatabase("a plain curl client of the REST surface", (catalog) => {
  let server: TestServer | undefined;
  let agent: TestAgent;
  let out: string;
  beforeAll(async () => {
    server = await serveApp({ db: catalog().db });
    agent = await makeAgent(catalog().db, "curl");
    out = mkdtempSync(path.join(os.tmpdir(), "strata-rest-curl-"));
  });
  afterAll(async () => {
    await server?.close();
    rmSync(out, { recursive: true, force: true });
  });

  const answer = (name: string) => ({
    status: Number(readFileSync(path.join(out, `${name}.status`), "utf8")),
    body: JSON.parse(readFileSync(path.join(out, `${name}.json`), "utf8")) as Record<string, unknown>,
  });
  const input = (name: string) => JSON.parse(readFileSync(path.join(out, `${name}-input.json`), "utf8")) as unknown;

  /** The same call over tRPC (superjson in and out): the answer's JSON part, before decoding. */
  async function trpc(type: "query" | "mutation", procedure: string, value: unknown, key?: string) {
    const encoded = JSON.stringify(superjson.serialize(value));
    const query = type === "query" ? `?input=${encodeURIComponent(encoded)}` : "";
    const response = await fetch(`${server!.url}/api/trpc/${procedure}${query}`, {
      method: type === "query" ? "GET" : "POST",
      headers: {
        authorization: `Bearer ${agent.token}`,
        "content-type": "application/json",
        ...(key ? { "idempotency-key": key } : {}),
      },
      body: type === "query" ? undefined : encoded,
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { result: { data: { json: unknown } } }).result.data.json;
  }

  it("checkpoints and acquires with curl alone, answered as the tRPC route answers the same calls", async () => {
    const repository = `example.test/curl/${uniqueName("repo")}`;
    const workContext = uniqueName("wc");
    const keys = { append: randomUUID(), acquire: randomUUID() };
    await promisify(execFile)("sh", [SCRIPT], {
      env: {
        ...process.env,
        STRATA_URL: server!.url,
        STRATA_TOKEN: agent.token,
        OUT: out,
        REPOSITORY: repository,
        WORK_CONTEXT: workContext,
        APPEND_KEY: keys.append,
        ACQUIRE_KEY: keys.acquire,
      },
    });

    const document = answer("openapi");
    expect(document.status).toBe(200);
    expect(document.body).toMatchObject({ openapi: "3.1.0" });
    expect(answer("blob").status).toBe(201);

    // The checkpoint: appended, its manifest naming the stored blob.
    const append = answer("append");
    expect(append.status).toBe(200);
    expect(append.body).toMatchObject({ outcome: "appended", snapshot: { class: "checkpoint", state: "ready" } });
    const snapshotId = readFileSync(path.join(out, "snapshot-id.txt"), "utf8");
    expect(snapshotId).toBe((append.body.snapshot as { id: string }).id);
    const digest = (append.body.snapshot as { manifest: { blobDigests: string[] } }).manifest.blobDigests[0]!;
    expect(await catalog().db.blob.count({ where: { digest } })).toBe(1);
    expect(append.body).toEqual(await trpc("mutation", "checkpoint.append", input("append"), keys.append));

    const get = answer("get");
    expect(get.status).toBe(200);
    expect(get.body).toEqual(await trpc("query", "snapshot.get", { snapshotId, includeRetired: false }));

    // The acquire restores that checkpoint, and holds a pin on it.
    const acquire = answer("acquire");
    expect(acquire.status).toBe(200);
    expect(acquire.body).toMatchObject({
      rung: "checkpoint",
      snapshot: { id: snapshotId },
      workContextId: workContext,
    });
    expect(acquire.body.pinId).toEqual(expect.any(String));
    expect(acquire.body).toEqual(await trpc("mutation", "workspace.acquire", input("acquire"), keys.acquire));

    // The mistakes: typed errors with the tRPC route's statuses, and nothing more stored.
    expect(answer("bad-token")).toMatchObject({ status: 401, body: { code: "UNAUTHORIZED", retryable: false } });
    const badInput = answer("bad-input");
    expect(badInput).toMatchObject({ status: 400, body: { code: "INVALID_INPUT", retryable: false } });
    expect(badInput.body.message).toContain("observedHead");
    expect(answer("unknown")).toMatchObject({ status: 404, body: { code: "NOT_FOUND" } });
    expect(await catalog().db.snapshot.count({ where: { agentId: agent.scope.agentId } })).toBe(1);
    expect(await catalog().db.restore.count({ where: { agentId: agent.scope.agentId } })).toBe(1);
  });
});
