// The app's tRPC answers exactly what tRPC's own fetch adapter answers: every request below is
// sent to tRPC's fetchRequestHandler (the oracle), to handleTrpcRequest (the Next route) and to
// serveApp over real HTTP (handleTrpcNodeRequest), and the three answers must be the same
// status, content type, vary header and body. Plain JSON calls take json-calls.ts in the last
// two; the rest must still reach tRPC's adapter unchanged.
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import superjson from "superjson";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createAgent } from "../auth/agents.ts";
import { trustUser } from "../domain/scope.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { serveApp, type TestServer } from "../testing/http-server.ts";
import { cleanEvidence, manifestOf, oid, scenario } from "../testing/lineage.ts";
import { handleTrpcRequest, TRPC_ENDPOINT } from "./http-handler.ts";
import { createContextInner } from "./init.ts";
import { appRouter, createCaller } from "./root.ts";

interface Call {
  method: string;
  /** Path and query under the server's origin. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

interface Answer {
  status: number;
  contentType: string | null;
  vary: string | null;
  body: string;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const SESSION_COOKIE = "strata-test-session=admin";
const admin = trustUser("user-admin", "admin@example.test", "admin");

const q = (input: unknown) => encodeURIComponent(JSON.stringify(input));
const sj = (value: unknown) => superjson.serialize(value);

describeEachDatabase("tRPC over HTTP answers what tRPC's adapter answers", (catalog) => {
  let server: TestServer;
  let token = "";
  const s = scenario("http");
  const key = { repository: s.repository, backendKind: s.backendKind, baseImage: s.baseImage, canonicalRef: "main" };
  const acquire = { ...key, workspace: "/w/1", host: "host-1" };

  const contextFor = (headers: { get(name: string): string | null }) =>
    createContextInner({
      db: catalog().db,
      authorization: headers.get("authorization"),
      user: headers.get("cookie") === SESSION_COOKIE ? admin : null,
    });

  beforeAll(async () => {
    const alice = await createAgent(catalog().db, { name: `http-${s.repository.identity.split("/").pop()}` });
    token = alice.token;
    const commit = oid("http-baseline");
    await createCaller(contextFor(new Headers({ authorization: `Bearer ${token}` }))).baseline.publish({
      key,
      commit,
      manifest: manifestOf({ head: commit, branch: "main" }),
      evidence: cleanEvidence(commit),
      observedHeadId: null,
    });
    server = await serveApp({
      db: catalog().db,
      userFor: (req) => (req.headers.get("cookie") === SESSION_COOKIE ? admin : null),
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const toRequest = (origin: string, call: Call) =>
    new Request(`${origin}${call.path}`, {
      method: call.method,
      headers: call.headers,
      body: typeof call.body === "string" || call.body === undefined ? call.body : new Uint8Array(call.body),
    });

  async function read(response: Response): Promise<Answer> {
    return {
      status: response.status,
      contentType: response.headers.get("content-type"),
      vary: response.headers.get("vary"),
      // Each answerer's acquire mints its own ids.
      body: (await response.text()).replace(UUID, "<uuid>"),
    };
  }

  /** What the app answered before json-calls.ts: tRPC's fetch adapter, every answer labelled JSON. */
  async function oracle(call: Call): Promise<Answer> {
    const req = toRequest("http://127.0.0.1", call);
    const response = await fetchRequestHandler({
      endpoint: TRPC_ENDPOINT,
      req,
      router: appRouter,
      maxBatchSize: 50,
      createContext: () => contextFor(req.headers),
    });
    if (!response.headers.get("content-type")?.includes("application/json")) {
      response.headers.set("content-type", "application/json");
    }
    return read(response);
  }

  async function expectSameAnswers(call: Call): Promise<Answer> {
    const expected = await oracle(call);
    const handled = await read(
      await handleTrpcRequest(toRequest("http://127.0.0.1", call), (r) => contextFor(r.headers)),
    );
    const served = await read(await fetch(toRequest(server.url, call)));
    expect({ call: call.path, answer: handled }).toEqual({ call: call.path, answer: expected });
    expect({ call: call.path, answer: served }).toEqual({ call: call.path, answer: expected });
    return expected;
  }

  const alice = () => ({ authorization: `Bearer ${token}` });
  const json = { "content-type": "application/json" };
  const post = (
    path: string,
    body: string | Uint8Array,
    headers: Record<string, string> = { ...alice(), ...json },
  ) => ({
    method: "POST",
    path: `${TRPC_ENDPOINT}/${path}`,
    headers,
    body,
  });
  const get = (path: string, headers: Record<string, string> = alice()) => ({
    method: "GET",
    path: `${TRPC_ENDPOINT}/${path}`,
    headers,
  });

  it("answers queries alike: results with superjson meta, null, batches, and refused inputs", async () => {
    const head = await expectSameAnswers(get(`baseline.head?input=${q(sj({ key }))}`));
    expect(head.status).toBe(200);
    expect(head.body).toContain('"meta"');
    const none = { ...key, canonicalRef: "never-published" };
    expect((await expectSameAnswers(get(`baseline.head?input=${q(sj({ key: none }))}`))).body).toContain("null");
    await expectSameAnswers(get(`lineage.list?input=${q(sj({}))}`));
    await expectSameAnswers(get("lineage.list"));
    const both = { 0: sj({ key }), 1: sj({ limit: 5 }) };
    expect((await expectSameAnswers(get(`baseline.head,lineage.list?batch=1&input=${q(both)}`))).status).toBe(200);
    const mixed = { 0: sj({ key }), 1: sj({ limt: 5 }) };
    expect((await expectSameAnswers(get(`baseline.head,lineage.list?batch=1&input=${q(mixed)}`))).status).toBe(207);
    await expectSameAnswers(get(`baseline.head,lineage.list?batch=1&input=${q({ 1: sj({}) })}`));
    await expectSameAnswers(get(`lineage.list?input=${encodeURIComponent("{")}`));
    await expectSameAnswers(get(`lineage.list?batch=1&input=${q("x")}`));
    await expectSameAnswers(get(`lineage.list?batch=1&input=${q([1])}`));
    await expectSameAnswers(get(`lineage.list?input=${q({ json: { cursor: "a\u0000" } })}`));
    await expectSameAnswers(get(`lineage.list?input=${q({ jsn: {} })}`));
    await expectSameAnswers(get(`lineage.list?input=${q(sj({}))}`, {}));
    await expectSameAnswers(get(`lineage.list?input=${q(sj({}))}`, { authorization: "Bearer strata_forged" }));
    await expectSameAnswers(get(`lineage.list?input=${q(sj({}))}`, { ...alice(), ...json }));
    await expectSameAnswers(get(`degradedRestore.list?input=${q(sj({}))}`, { cookie: SESSION_COOKIE }));
    await expectSameAnswers(get(`degradedRestore.list?input=${q(sj({}))}`, alice()));
  });

  it("answers mutations alike: a plan, batches, and every way of refusing the body", async () => {
    const plan = await expectSameAnswers(post("workspace.acquire", JSON.stringify(sj(acquire))));
    expect(plan.status).toBe(200);
    expect(plan.body).toContain('"rung":"baseline"');
    await expectSameAnswers(
      post("workspace.acquire", JSON.stringify(sj(acquire)), {
        ...alice(),
        "content-type": "Application/JSON; charset=utf-8",
      }),
    );
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(sj(acquire)))]);
    expect((await expectSameAnswers(post("workspace.acquire", bom))).status).toBe(200);
    // fetch drops one BOM itself and its decoder a second one.
    expect((await expectSameAnswers(post("workspace.acquire", Buffer.concat([bom.subarray(0, 3), bom])))).status).toBe(
      200,
    );
    const batch = { 0: sj(acquire), 1: sj({ ...acquire, workspace: "/w/2" }) };
    expect(
      (await expectSameAnswers(post("workspace.acquire,workspace.acquire?batch=1", JSON.stringify(batch)))).status,
    ).toBe(200);
    const half = { 0: sj(acquire) };
    expect(
      (await expectSameAnswers(post("workspace.acquire,workspace.acquire?batch=1", JSON.stringify(half)))).status,
    ).toBe(207);
    for (const body of ["", "{", "null", "[1]", '"x"', '{"json":{"a":1}}', '{"json":1,"meta":{"values":1}}']) {
      await expectSameAnswers(post("workspace.acquire", body));
      await expectSameAnswers(post("workspace.acquire,workspace.acquire?batch=1", body));
    }
    const { workspace, ...rest } = acquire;
    await expectSameAnswers(post("workspace.acquire", JSON.stringify(sj({ ...rest, workSpace: workspace }))));
    await expectSameAnswers(post("workspace.acquire", JSON.stringify(sj({ ...acquire, host: "h\u0000" }))));
    await expectSameAnswers(post("workspace.acquire", Buffer.from([0x7b, 0xff, 0x7d])));
    await expectSameAnswers(post("workspace.acquire", JSON.stringify(sj(acquire)), json));
    await expectSameAnswers(
      post("workspace.acquire", JSON.stringify(sj(acquire)), { ...json, authorization: "Basic eDp5" }),
    );
    await expectSameAnswers(post("lineage.retire", JSON.stringify(sj({ lineageId: "nope", reason: "completed" }))));
  });

  it("frames a plain call's answer by its length, so a simple keep-alive client can read it", async () => {
    for (const call of [
      post("workspace.acquire", JSON.stringify(sj(acquire))),
      post("workspace.acquire", "{"),
      get(`lineage.list?input=${q(sj({}))}`),
    ]) {
      const response = await fetch(toRequest(server.url, call));
      const body = Buffer.from(await response.arrayBuffer());
      expect({
        path: call.path,
        length: response.headers.get("content-length"),
        chunked: response.headers.get("transfer-encoding"),
      }).toEqual({
        path: call.path,
        length: String(body.length),
        chunked: null,
      });
    }
  });

  it("leaves every other request to tRPC's adapter, answering it as before", async () => {
    const body = JSON.stringify(sj(acquire));
    const calls: Call[] = [
      get("workspace.acquire"),
      post("lineage.list", JSON.stringify(sj({}))),
      post("nope.nothing", body),
      post("", body),
      { method: "POST", path: `${TRPC_ENDPOINT}`, headers: json, body },
      post("workspace.acquire,lineage.list?batch=1", body),
      post("workspace.acquire", body, { ...alice(), "content-type": "text/plain" }),
      post("workspace.acquire", body, alice()),
      post("workspace.acquire", body, { ...alice(), ...json, "trpc-accept": "application/jsonl" }),
      post("workspace.acquire?batch=1", JSON.stringify({ 0: sj({}) }), {
        ...alice(),
        ...json,
        accept: "application/jsonl",
      }),
      post(`workspace.acquire?connectionParams=${q({ a: 1 })}`, body),
      post(`${Array.from({ length: 51 }, () => "workspace.acquire").join(",")}?batch=1`, "{}"),
      post("workspace%ZZacquire", body),
      { method: "PUT", path: `${TRPC_ENDPOINT}/workspace.acquire`, headers: { ...alice(), ...json }, body },
      { method: "DELETE", path: `${TRPC_ENDPOINT}/lineage.list`, headers: alice() },
      { method: "HEAD", path: `${TRPC_ENDPOINT}/lineage.list`, headers: alice() },
      get(`lineage.list?input=${q(sj({}))}`, { ...alice(), "content-type": "text/plain" }),
      get(`lineage.list?input=${q(sj({}))}`, { ...alice(), "content-type": "multipart/form-data; boundary=x" }),
    ];
    for (const call of calls) await expectSameAnswers(call);
  });
});
