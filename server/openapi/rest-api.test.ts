// The REST surface over real HTTP on both databases: each operation answers what its tRPC
// procedure answers (the same JSON, shared idempotency keys), reads GET inputs from the query
// string by the schema, and refuses with the same typed errors and HTTP statuses: a bad token,
// a bad input (nothing stored), unknown routes, staff procedures, wrong methods and bodies.
import { randomUUID } from "node:crypto";
import superjson from "superjson";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { serveApp, type TestServer } from "../testing/http-server.ts";
import {
  baselineKeyOf,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  scenario,
  uniqueName,
  type TestAgent,
} from "../testing/lineage.ts";

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

type Strata = { code: string; message: string; hint: string | null; retryable: boolean; data: unknown };

describeEachDatabase("REST surface", (catalog) => {
  let server: TestServer | undefined;
  let alice: TestAgent;
  beforeAll(async () => {
    server = await serveApp({ db: catalog().db });
    alice = await makeAgent(catalog().db, "alice");
  });
  afterAll(() => server?.close());

  async function rest(
    method: string,
    path: string,
    opts: { token?: string | null; body?: unknown; raw?: string; key?: string; contentType?: string } = {},
  ): Promise<Answer> {
    const token = opts.token === undefined ? alice.token : opts.token;
    const body = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
    const response = await fetch(`${server!.url}/api/v1${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { "content-type": opts.contentType ?? "application/json" }),
        ...(opts.key ? { "idempotency-key": opts.key } : {}),
      },
      body,
    });
    return { status: response.status, headers: response.headers, body: await response.json() };
  }

  /** The same call over tRPC, as a plain JSON call: its status and superjson answer (or error). */
  async function trpc(type: "query" | "mutation", procedure: string, input: unknown, key?: string) {
    const encoded = JSON.stringify(superjson.serialize(input));
    const url = `${server!.url}/api/trpc/${procedure}${type === "query" ? `?input=${encodeURIComponent(encoded)}` : ""}`;
    const response = await fetch(url, {
      method: type === "query" ? "GET" : "POST",
      headers: {
        authorization: `Bearer ${alice.token}`,
        "content-type": "application/json",
        ...(key ? { "idempotency-key": key } : {}),
      },
      body: type === "query" ? undefined : encoded,
    });
    const body = (await response.json()) as {
      result?: { data: { json: unknown; meta?: unknown } };
      error?: { json: { data: { strata: Strata } } };
    };
    return { status: response.status, data: body.result?.data, strata: body.error?.json.data.strata };
  }

  function appendInput() {
    const s = scenario("rest");
    const commit = oid(uniqueName("commit"));
    return {
      s,
      input: {
        key: lineageKeyOf(s, uniqueName("wc")),
        observedHeadId: null,
        manifest: manifestOf({ head: commit, branch: null }),
      },
    };
  }

  it("answers a checkpoint append as tRPC does: a retry over tRPC with the same key replays the REST answer", async () => {
    const { input } = appendInput();
    const key = randomUUID();
    const viaRest = await rest("POST", "/checkpoint/append", { body: input, key });
    expect(viaRest.status).toBe(200);
    expect(viaRest.body).toMatchObject({ outcome: "appended", lineageId: expect.any(String) });
    const viaTrpc = await trpc("mutation", "checkpoint.append", input, key);
    expect(viaTrpc.status).toBe(200);
    expect(viaRest.body).toEqual(viaTrpc.data!.json);
    // ... and the other way round, on an acquire of the same work context.
    const acquire = {
      repository: input.key.repository,
      backendKind: input.key.backendKind,
      baseImage: input.key.baseImage,
      canonicalRef: "main",
      workContextId: input.key.workContextId,
      workspace: `/workspaces/${uniqueName("ws")}`,
      host: "host-1",
    };
    const acquireKey = randomUUID();
    const first = await trpc("mutation", "workspace.acquire", acquire, acquireKey);
    const replay = await rest("POST", "/workspace/acquire", { body: acquire, key: acquireKey });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(first.data!.json);
    expect(replay.body).toMatchObject({ rung: "checkpoint" });
    expect(
      await catalog().db.restore.count({ where: { agentId: alice.scope.agentId, workspace: acquire.workspace } }),
    ).toBe(1);
  });

  it("sends dates as ISO strings and bigints as decimal strings: superjson's JSON, equal to the tRPC answer's", async () => {
    const { input } = appendInput();
    const appended = (await rest("POST", "/checkpoint/append", { body: input })).body as { snapshot: { id: string } };
    const query = { snapshotId: appended.snapshot.id };
    const viaRest = await rest("GET", `/snapshot/get?snapshotId=${appended.snapshot.id}`);
    const viaTrpc = await trpc("query", "snapshot.get", query);
    expect(viaRest.status).toBe(200);
    expect(viaRest.body).toEqual(viaTrpc.data!.json);
    const decoded = superjson.deserialize<{ createdAt: Date; manifest: { sizeBytes: bigint } }>(viaTrpc.data as never);
    const body = viaRest.body as { createdAt: string; manifest: { sizeBytes: string } };
    expect(body.createdAt).toBe(decoded.createdAt.toISOString());
    expect(body.manifest.sizeBytes).toBe(decoded.manifest.sizeBytes.toString());
  });

  it("reads a GET's fields from the query string by their types, and a nested input from input=JSON", async () => {
    const { s, input } = appendInput();
    await rest("POST", "/checkpoint/append", { body: input });
    await rest("POST", "/checkpoint/append", { body: appendInput().input });
    const page = await rest("GET", "/snapshot/list?limit=1&direction=forward");
    expect(page.status).toBe(200);
    expect((page.body as { items: unknown[] }).items).toHaveLength(1);
    expect(page.body).toEqual((await trpc("query", "snapshot.list", { limit: 1, direction: "forward" })).data!.json);
    // Every field optional: no parameters at all is the empty input.
    expect((await rest("GET", "/lineage/list")).status).toBe(200);
    const lineages = await rest("GET", `/lineage/list?workContextId=${input.key.workContextId}`);
    expect((lineages.body as { items: { workContextId: string }[] }).items.map((l) => l.workContextId)).toEqual([
      input.key.workContextId,
    ]);
    // A nested input travels as one JSON parameter.
    const headInput = { key: baselineKeyOf(s) };
    const head = await rest("GET", `/baseline/head?input=${encodeURIComponent(JSON.stringify(headInput))}`);
    expect(head.status).toBe(200);
    expect(head.body).toEqual((await trpc("query", "baseline.head", headInput)).data!.json);
  });

  it("refuses a missing or bad token with UNAUTHORIZED 401, typed, and health needs none", async () => {
    for (const token of [null, "strata_not-a-token"]) {
      const answer = await rest("POST", "/checkpoint/append", { token, body: appendInput().input });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({
        code: "UNAUTHORIZED",
        retryable: false,
        hint: expect.stringContaining("Bearer"),
      });
    }
    const health = await rest("GET", "/health", { token: null });
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: "ok" });
  });

  it("refuses a bad input with INVALID_INPUT 400 naming the field, and stores nothing", async () => {
    const snapshots = () => catalog().db.snapshot.count({ where: { agentId: alice.scope.agentId } });
    const before = await snapshots();
    const { input } = appendInput();
    const unknownField = await rest("POST", "/checkpoint/append", { body: { ...input, observedHead: null } });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body).toMatchObject({ code: "INVALID_INPUT", retryable: false });
    expect((unknownField.body as Strata).message).toContain("observedHead");
    // The tRPC route refuses the same input the same way.
    const viaTrpc = await trpc("mutation", "checkpoint.append", { ...input, observedHead: null });
    expect({ status: viaTrpc.status, ...viaTrpc.strata }).toEqual({ status: 400, ...(unknownField.body as Strata) });
    const badType = await rest("GET", "/snapshot/list?limit=ten");
    expect(badType.status).toBe(400);
    expect((badType.body as Strata).message).toContain("limit");
    const notJson = await rest("POST", "/checkpoint/append", { raw: "{not json" });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({ code: "INVALID_INPUT" });
    const form = await rest("POST", "/checkpoint/append", {
      raw: "a=b",
      contentType: "application/x-www-form-urlencoded",
    });
    expect(form.status).toBe(415);
    expect(form.body).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE" });
    expect(await snapshots()).toBe(before);
  });

  it("answers unknown routes, staff procedures and wrong methods with typed 404 and 405", async () => {
    const unknown = await rest("GET", "/snapshot/teleport");
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("/api/v1/openapi.json") });
    // The dashboard's procedures are not part of the REST surface, even with a token.
    expect((await rest("GET", "/dashboard/pins")).status).toBe(404);
    const wrongMethod = await rest("GET", "/checkpoint/append");
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");
    expect(wrongMethod.body).toMatchObject({ code: "METHOD_NOT_ALLOWED" });
  });

  it("answers a domain refusal with the code and status tRPC gives it", async () => {
    const missing = { snapshotId: randomUUID() };
    const viaRest = await rest("GET", `/snapshot/get?snapshotId=${missing.snapshotId}`);
    const viaTrpc = await trpc("query", "snapshot.get", missing);
    expect(viaRest.status).toBe(viaTrpc.status);
    expect(viaRest.body).toEqual(viaTrpc.strata);
    expect(viaRest.body).toMatchObject({ code: "NOT_FOUND" });
    // A key reused for another input is refused, as over tRPC.
    const key = randomUUID();
    expect((await rest("POST", "/checkpoint/append", { body: appendInput().input, key })).status).toBe(200);
    const reused = await rest("POST", "/checkpoint/append", { body: appendInput().input, key });
    expect(reused.status).toBe(409);
    expect(reused.body).toMatchObject({ code: "IDEMPOTENCY_CONFLICT" });
  });

  it("serves its OpenAPI document without a token", async () => {
    const answer = await rest("GET", "/openapi.json", { token: null });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ openapi: "3.1.0", info: { title: "Strata agent API" } });
    expect(Object.keys((answer.body as { paths: object }).paths)).toContain("/workspace/acquire");
  });
});
