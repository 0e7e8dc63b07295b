// Hostile input over real HTTP: every tRPC procedure (enumerated from appRouter, so a new one
// is fuzzed without touching this file) and both blob routes, driven with generated inputs an
// agent should never send. Whatever arrives: no 5xx, every error a typed StrataError JSON, and
// nothing stored anywhere by a refused call.
import { createHash, randomBytes } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { documentedCodesOf } from "../../docs/api-errors.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { ERROR_CODES } from "../domain/errors.ts";
import type { UserScope } from "../domain/scope.ts";
import { createAgent, revokeAgentTokens } from "../auth/agents.ts";
import { makeUser } from "../testing/dashboard.ts";
import { cleanEvidence, manifestOf, oid, scenario, uniqueName } from "../testing/lineage.ts";
import { fingerprinter, type CatalogFingerprint } from "../testing/catalog-fingerprint.ts";
import { serveApp, type TestServer } from "../testing/http-server.ts";
import { createContextInner } from "./init.ts";
import { appRouter, createCaller } from "./root.ts";

const RUNS = 150;
/** HOSTILE_SURVEY=1 records every wrong answer without failing, to list them all at once. */
const SURVEY = process.env.HOSTILE_SURVEY === "1";
const SESSION_COOKIE = "strata-test-session=admin";

interface ProcedureInfo {
  path: string;
  type: "query" | "mutation";
}

const procedures: ProcedureInfo[] = Object.entries(
  appRouter._def.procedures as unknown as Record<string, { _def: { type: string } }>,
).map(([path, p]) => ({ path, type: p._def.type === "query" ? "query" : "mutation" }));

// --- hostile values ---------------------------------------------------------------------------

const hostileText = fc.oneof(
  fc.constantFrom(
    "\u0000",
    "s\u0000t",
    "\ud800",
    "x\udfffy",
    "\udc00\ud800",
    "a\u0007b",
    "line\nbreak",
    " ",
    "",
    "refs/heads/\u0000",
    "\u202e",
    "__proto__",
  ),
  fc.string({ maxLength: 40, unit: "binary" }),
  fc.constantFrom(300, 5_000, 70_000).map((n) => "x".repeat(n)),
);

const hostileNumber = fc.oneof(
  fc.constantFrom(-1, -0, 0, 1.5, 1e308, -1e308, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, -(2 ** 31), 2 ** 63),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

const hostileKey = fc.oneof(
  fc.constantFrom("__proto__", "constructor", "prototype", "k\u0000", "\ud800", "", "workcontextid", "extra"),
  fc.string({ maxLength: 12 }),
);

/** Deeply nested JSON, as text: the test's own JSON.stringify would overflow its stack. */
class RawJson {
  constructor(readonly text: string) {}
  [fc.toStringMethod](): string {
    return `RawJson(${this.text.slice(0, 24)}… ${this.text.length} chars)`;
  }
}

function deep(depth: number, kind: "array" | "object", envelope = true): RawJson {
  const [open, close] = kind === "array" ? ["[", "]"] : ['{"a":', "}"];
  const value = `${open.repeat(depth)}1${close.repeat(depth)}`;
  return new RawJson(envelope ? `{"json":${value}}` : value);
}

const hostileLeaf = fc.oneof(hostileText, hostileNumber, fc.boolean(), fc.constant(null));

const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    hostileLeaf,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(hostileKey, tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** superjson envelopes, including meta that revives NaN, Infinity, huge bigints and bad dates. */
const superjsonInput = fc.oneof(
  hostileValue.map((json) => ({ json })),
  fc.constantFrom(20, 2_000, 50_000).chain((d) => fc.constantFrom(deep(d, "array"), deep(d, "object"))),
  hostileValue,
  fc
    .tuple(fc.constantFrom("NaN", "Infinity", "-Infinity", "99999999999999999999999"), hostileKey)
    .map(([v, key]) => ({ json: { [key || "limit"]: v }, meta: { values: { [key || "limit"]: ["number"] } } })),
  fc.constantFrom(
    { json: { limit: "99999999999999999999" }, meta: { values: { limit: ["bigint"] } } },
    { json: { cursor: "not a date" }, meta: { values: { cursor: ["Date"] } } },
    { json: {}, meta: { values: { "__proto__.polluted": ["undefined"] } } },
    { json: { a: 1 }, meta: { referentialEqualities: { a: ["b.c"] } } },
    { json: { a: 1 }, meta: "garbage" },
  ),
);

const authorization = fc.constantFrom<"alice" | "none" | "bad" | "revoked" | "basic" | "empty">(
  "alice",
  "alice",
  "alice",
  "none",
  "bad",
  "revoked",
  "basic",
  "empty",
);

// --- the answers --------------------------------------------------------------------------------

const KNOWN = new Set(Object.keys(ERROR_CODES));

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

interface Verdict {
  /** Every part of the answer was refused (so the catalog must be unchanged). */
  refused: boolean;
  problems: string[];
}

/** Judges a tRPC answer; with `procedure`, its codes must be ones docs/api.md lists for it. */
function judgeTrpc(answer: Answer, procedure?: string): Verdict {
  const documented = procedure === undefined ? null : documentedCodesOf(procedure);
  const problems: string[] = [];
  if (answer.status >= 500) problems.push(`HTTP ${answer.status}`);
  if (!answer.contentType.includes("application/json")) {
    problems.push(`content-type ${answer.contentType || "none"} (${answer.text.slice(0, 60)})`);
    return { refused: answer.status >= 400, problems };
  }
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    problems.push("a body that is not JSON");
    return { refused: answer.status >= 400, problems };
  }
  const parts = Array.isArray(body) ? body : [body];
  let refused = parts.length > 0;
  for (const part of parts) {
    const error = (part as { error?: { json?: { data?: { strata?: { code?: string } | null } } } }).error;
    if (!error) {
      refused = false;
      continue;
    }
    const code = error.json?.data?.strata?.code;
    // A lost fence race keeps the loser's capture for reclamation (checkpoint.append's contract).
    if (code === "FENCE_LOST") refused = false;
    if (!code) problems.push(`an error without data.strata: ${JSON.stringify(error).slice(0, 200)}`);
    else if (!KNOWN.has(code)) problems.push(`unknown code ${code}`);
    else if (documented && !documented.has(code))
      problems.push(`${code}, which docs/api.md does not list for ${procedure}`);
    if (code === "INTERNAL") problems.push(`INTERNAL: ${JSON.stringify(error).slice(0, 200)}`);
  }
  return { refused, problems };
}

function judgeBlob(answer: Answer, method: string): Verdict {
  const problems: string[] = [];
  if (answer.status >= 500) problems.push(`HTTP ${answer.status}`);
  const refused = answer.status >= 400;
  if (!refused || method === "HEAD") return { refused, problems };
  if (!answer.contentType.includes("application/json")) {
    problems.push(`content-type ${answer.contentType || "none"} (${answer.text.slice(0, 60)})`);
    return { refused, problems };
  }
  try {
    const code = (JSON.parse(answer.text) as { error?: { code?: string } }).error?.code;
    if (!code || !KNOWN.has(code)) problems.push(`no known error code: ${answer.text.slice(0, 200)}`);
  } catch {
    problems.push("a body that is not JSON");
  }
  return { refused, problems };
}

describeEachDatabase("hostile input over HTTP", (catalog, kind) => {
  let server: TestServer;
  let fingerprint: () => Promise<CatalogFingerprint>;
  let current: CatalogFingerprint;
  let admin: UserScope;
  const tokens = { alice: "", revoked: "" };
  const samples: Record<string, unknown> = {};
  const seen: string[] = [];

  beforeAll(async () => {
    const db = catalog().db;
    admin = await makeUser(db, "admin");
    server = await serveApp({
      db,
      userFor: (req) => (req.headers.get("cookie") === SESSION_COOKIE ? admin : null),
    });
    const alice = await createAgent(db, { name: uniqueName("alice") });
    const carol = await createAgent(db, { name: uniqueName("carol") });
    await revokeAgentTokens(db, { name: carol.agentName });
    tokens.alice = alice.token;
    tokens.revoked = carol.token;

    // A small world, so valid-looking inputs reach past the first lookup.
    const s = scenario("fuzz");
    const a = createCaller(createContextInner({ db, authorization: `Bearer ${alice.token}`, user: null }));
    const commit = oid("fuzz-main");
    const key = { repository: s.repository, backendKind: s.backendKind, baseImage: s.baseImage, canonicalRef: "main" };
    const baseline = await a.baseline.publish({
      key,
      commit,
      manifest: manifestOf({ head: commit, branch: "main" }),
      evidence: cleanEvidence(commit),
      observedHeadId: null,
    });
    const acquire = {
      repository: s.repository,
      backendKind: s.backendKind,
      baseImage: s.baseImage,
      canonicalRef: "main",
      workspace: "/w/fuzz",
      host: "host-fuzz",
    };
    const plan = await a.workspace.acquire(acquire);
    await a.workspace.reportRestore({ restoreId: plan.restoreId, outcome: "restored" });
    const lineageKey = { repository: s.repository, backendKind: s.backendKind, baseImage: s.baseImage };
    const cp = await a.checkpoint.append({
      key: { ...lineageKey, workContextId: plan.workContextId },
      observedHeadId: null,
      manifest: manifestOf({ head: oid("fuzz-work"), branch: "task" }),
    });
    const pending = await a.workspace.acquire({ ...acquire, workContextId: plan.workContextId });
    const digest = createHash("sha256").update("fuzz").digest("hex");
    Object.assign(samples, {
      "baseline.publish": {
        key,
        commit: oid("fuzz-2"),
        manifest: manifestOf({ head: oid("fuzz-2"), branch: "main" }),
        evidence: cleanEvidence(oid("fuzz-2")),
        observedHeadId: baseline.snapshot.id,
      },
      "baseline.head": { key },
      "checkpoint.append": {
        key: { ...lineageKey, workContextId: plan.workContextId },
        observedHeadId: cp.snapshot.id,
        manifest: manifestOf({ head: oid("fuzz-work-2"), branch: "task" }),
        source: { workspace: "/w/fuzz", host: "host-fuzz" },
      },
      "workspace.acquire": { ...acquire, workContextId: plan.workContextId },
      "workspace.reportRestore": {
        restoreId: pending.restoreId,
        outcome: "failed",
        error: { code: "X", message: "it broke" },
      },
      "lineage.retire": { lineageId: plan.lineage.id, reason: "completed" },
      "lineage.fork": { fromCheckpoint: cp.snapshot.id, count: 2, reason: "fuzz the fork" },
      "lineage.get": { lineageId: plan.lineage.id },
      "lineage.list": { includeRetired: true, limit: 10 },
      "snapshot.get": { snapshotId: cp.snapshot.id, includeRetired: false },
      "snapshot.list": { includeRetired: true, limit: 5 },
      "snapshot.publish": {
        snapshotId: cp.snapshot.id,
        layers: [{ uuid: "layer-1", parentUuid: null, digest, sizeBytes: 4, kind: "worktree" }],
        heads: ["layer-1"],
      },
      "snapshot.delete": { snapshotId: baseline.snapshot.id },
      "pin.pin": { snapshotId: cp.snapshot.id, pinId: "fuzz-pin", purpose: "fuzz", expiresInSeconds: 60 },
      "pin.release": { snapshotId: cp.snapshot.id, pinId: "fuzz-pin" },
      "pin.inspect": { pinId: "fuzz-pin" },
      "pin.list": {},
      "blob.missing": { digests: [digest] },
      "job.get": { jobId: "job-1" },
      "job.list": { limit: 5 },
      "job.cancel": { jobId: "job-1" },
      "dashboard.snapshot": { snapshotId: cp.snapshot.id },
      "dashboard.retirementPreview": { kind: "snapshot", id: cp.snapshot.id },
      "dashboard.retireSnapshot": { snapshotId: baseline.snapshot.id, reason: "superseded" },
      "dashboard.retireLineage": { lineageId: plan.lineage.id, reason: "abandoned" },
      "dashboard.forkCheckpoint": { fromCheckpoint: cp.snapshot.id, count: 2, reason: "fuzz the fork" },
      "gc.runs": { limit: 5 },
      "browse.snapshots": { limit: 5 },
    });
    fingerprint = await fingerprinter(db);
    current = await fingerprint();
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    if (seen.length > 0) {
      const distinct = [...new Set(seen)];
      console.info(
        `[${kind}] ${seen.length} problem answers, ${distinct.length} distinct:\n  ${distinct.slice(0, SURVEY ? undefined : 60).join("\n  ")}`,
      );
    }
  });

  function headersFor(auth: string, extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { cookie: SESSION_COOKIE, ...extra };
    if (auth === "alice") headers.authorization = `Bearer ${tokens.alice}`;
    if (auth === "bad") headers.authorization = "Bearer strata_forged0000000000";
    if (auth === "revoked") headers.authorization = `Bearer ${tokens.revoked}`;
    if (auth === "basic") headers.authorization = "Basic YWxpY2U6c2VjcmV0";
    if (auth === "empty") headers.authorization = "Bearer ";
    return headers;
  }

  async function request(path: string, init: RequestInit): Promise<Answer> {
    const response = await fetch(`${server.url}${path}`, init);
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      text: await response.text(),
    };
  }

  /** Sends one call and checks the answer and the catalog; false (with the problems kept) when wrong. */
  async function check(label: string, send: () => Promise<Answer>, judge: (a: Answer) => Verdict): Promise<boolean> {
    const before = current;
    const answer = await send();
    const verdict = judge(answer);
    const problems = [...verdict.problems];
    const after = await fingerprint();
    if (verdict.refused) {
      try {
        expect(after).toEqual(before);
      } catch {
        problems.push(`the catalog changed after a refused call (HTTP ${answer.status})`);
      }
    }
    current = after;
    for (const p of problems) seen.push(`${label}: ${p}`);
    return SURVEY || problems.length === 0;
  }

  function callProcedure(p: ProcedureInfo, input: unknown, auth: string): Promise<Answer> {
    const body = input instanceof RawJson ? input.text : JSON.stringify(input);
    if (p.type === "query") {
      const query = input === undefined ? "" : `?input=${encodeURIComponent(body)}`;
      return request(`/api/trpc/${p.path}${query}`, { headers: headersFor(auth) });
    }
    return request(`/api/trpc/${p.path}`, {
      method: "POST",
      headers: headersFor(auth, { "content-type": "application/json" }),
      body,
    });
  }

  it("answers every procedure's canonical hostile inputs with a typed 4xx and stores nothing", async () => {
    const canonical: unknown[] = [
      { json: { id: "s\u0000t" } },
      { json: { snapshotId: "\ud800" } },
      { json: "\u0000" },
      { json: { unknownKey: 1 } },
      deep(5_000, "object"),
      { json: [1, 2, 3] },
      { json: { limit: -1, cursor: "x".repeat(70_000) } },
    ];
    const failures: string[] = [];
    for (const p of procedures) {
      const sample = samples[p.path];
      const inputs = [...canonical];
      if (sample && typeof sample === "object") {
        for (const [k, v] of Object.entries(sample)) {
          if (typeof v === "string")
            inputs.push({ json: { ...sample, [k]: `${v}\u0000` } }, { json: { ...sample, [k]: "\ud800" } });
        }
        inputs.push({ json: { ...sample, workcontextid: "x" } });
      }
      for (const input of inputs) {
        if (
          !(await check(
            p.path,
            () => callProcedure(p, input, "alice"),
            (a) => judgeTrpc(a, p.path),
          ))
        )
          failures.push(p.path);
      }
    }
    if (!SURVEY) expect([...new Set(failures)]).toEqual([]);
  }, 120_000);

  it("answers any procedure with any hostile input typed, and stores nothing when refusing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...procedures), superjsonInput, authorization, (p, input, auth) =>
        check(
          p.path,
          () => callProcedure(p, input, auth),
          (a) => judgeTrpc(a, p.path),
        ),
      ),
      { numRuns: RUNS },
    );
  }, 120_000);

  it("answers valid-looking inputs with one field mutated typed, and stores nothing when refusing", async () => {
    const mutation = fc.oneof(
      {
        arbitrary: fc.record({
          kind: fc.constant("poison" as const),
          with: fc.constantFrom("\u0000", "\ud800", "\u0007"),
        }),
        weight: 3,
      },
      fc.record({ kind: fc.constant("replace" as const), value: hostileLeaf }),
      fc.record({ kind: fc.constant("extra" as const), key: hostileKey, value: hostileLeaf }),
      fc.record({ kind: fc.constant("lowercase" as const) }),
      fc.record({ kind: fc.constant("drop" as const) }),
    );
    const mostlyAlice = fc.oneof({ arbitrary: fc.constant("alice"), weight: 4 }, authorization);
    const paths = Object.keys(samples);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), fc.nat(), mutation, mostlyAlice, (path, pick, m, auth) => {
        const p = procedures.find((x) => x.path === path);
        if (!p) throw new Error(`no procedure ${path}`);
        const input = mutate(structuredClone(samples[path]), pick, m);
        return check(
          `${path} (mutated: ${m.kind})`,
          () => callProcedure(p, { json: input }, auth),
          (a) => judgeTrpc(a, path),
        );
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  it("answers malformed HTTP (methods, content types, JSON, batch shapes, unknown paths) typed", async () => {
    const names = procedures.map((p) => p.path);
    const path = fc.oneof(
      fc.constantFrom("/api/trpc", "/api/trpc/", "/api/trpc/nope.nothing", "/api/trpc/%00", "/api/trpc/a/b"),
      fc.constantFrom(...names).map((n) => `/api/trpc/${n}`),
      fc.tuple(fc.constantFrom(...names), fc.constantFrom(...names)).map(([a, b]) => `/api/trpc/${a},${b}`),
    );
    const query = fc.constantFrom(
      "",
      "?batch=1",
      "?batch=true",
      `?batch=1&input=${encodeURIComponent('{"0":{"json":{}},"5":{"json":{}}}')}`,
      `?batch=1&input=${encodeURIComponent("[1]")}`,
      `?batch=1&input=${encodeURIComponent('"x"')}`,
      `?input=${encodeURIComponent("{")}`,
      `?input=${encodeURIComponent('{"json":')}`,
      `?input=${encodeURIComponent("\u0000")}`,
      "?input=%ZZ",
      "?input=null",
    );
    const contentType = fc.constantFrom(
      undefined,
      "application/json",
      "text/plain",
      "multipart/form-data; boundary=x",
      "application/x-www-form-urlencoded",
      "application/octet-stream",
      "application/json; charset=latin1",
    );
    const body = fc.constantFrom(
      "",
      "{",
      "null",
      '{"json":{"a":1}}',
      '[{"json":1}]',
      '{"0":{"json":{}},"7":{"json":{}}}',
      "\u0000",
      '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--',
      "a=1&b=%00",
    );
    const method = fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH");
    await fc.assert(
      fc.asyncProperty(path, query, method, contentType, body, authorization, (pth, q, m, ct, b, auth) => {
        const headers = headersFor(auth, ct ? { "content-type": ct } : {});
        const init: RequestInit = { method: m, headers, body: m === "GET" ? undefined : b };
        return check(`${m} ${pth}${q.slice(0, 30)} [${ct ?? "no type"}]`, () => request(`${pth}${q}`, init), judgeTrpc);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  it("answers the blob routes typed for hostile digests, methods, tokens and bodies", async () => {
    const stored = randomBytes(64);
    const digest = fc.oneof(
      fc.constant(createHash("sha256").update(stored).digest("hex")),
      fc.constant(createHash("sha256").update(stored).digest("hex").toUpperCase()),
      fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex")),
      // "." and ".." are resolved away by the URL itself (they never reach the route).
      hostileText.filter((s) => s.length < 2_000 && s !== "." && s !== ".."),
      fc.constantFrom("0".repeat(65), "g".repeat(64), "%2F", "%ED%A0%80", "%00", "%FF"),
    );
    const method = fc.constantFrom("GET", "GET", "PUT", "PUT", "HEAD", "POST", "DELETE", "PATCH");
    const body = fc.oneof(fc.constant(stored), fc.uint8Array({ maxLength: 300 }));
    const contentType = fc.constantFrom(undefined, "application/octet-stream", "application/json", "text/plain");
    await fc.assert(
      fc.asyncProperty(digest, method, body, contentType, authorization, (d, m, b, ct, auth) => {
        const headers = headersFor(auth, ct ? { "content-type": ct } : {});
        const hasBody = m !== "GET" && m !== "HEAD";
        const init = { method: m, headers, body: hasBody ? b : undefined };
        // A URL carries UTF-8; raw percent-escapes (a CESU surrogate, NUL) are sent as they are.
        const segment = d.startsWith("%") ? d : encodeURIComponent(d.replace(/[\ud800-\udfff]/g, "\ufffd")) || "%20";
        return check(
          `${m} /api/blobs/${segment.slice(0, 20)}`,
          () => request(`/api/blobs/${segment}`, init),
          (a) => judgeBlob(a, m),
        );
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  it("refuses a misspelt workcontextid on workspace.acquire, naming the field meant, and stores nothing", async () => {
    const { workContextId, ...rest } = samples["workspace.acquire"] as Record<string, unknown>;
    const before = await fingerprint();
    const answer = await callProcedure(
      { path: "workspace.acquire", type: "mutation" },
      { json: { ...rest, workcontextid: workContextId } },
      "alice",
    );
    expect(answer.status).toBe(400);
    const error = JSON.parse(answer.text).error.json;
    expect(error.data.strata.code).toBe("INVALID_INPUT");
    expect(error.message).toContain("workcontextid");
    expect(error.message).toContain("did you mean workContextId?");
    expect(error.data.strata.data.issues).toContainEqual(
      expect.objectContaining({ path: ["workcontextid"], problem: "unknown_key", suggestion: "workContextId" }),
    );
    expect(await fingerprint()).toEqual(before);
    current = before;
  });
});

type Mutation =
  | { kind: "poison"; with: string }
  | { kind: "replace"; value: unknown }
  | { kind: "extra"; key: string; value: unknown }
  | { kind: "lowercase" }
  | { kind: "drop" };

/** Applies one mutation to a sample input: at the pick-th leaf, or the pick-th object. */
function mutate(input: unknown, pick: number, m: Mutation): unknown {
  const objects: Record<string, unknown>[] = [];
  const leaves: { parent: Record<string, unknown>; key: string }[] = [];
  const walk = (v: unknown) => {
    if (!v || typeof v !== "object") return;
    const record = v as Record<string, unknown>;
    if (!Array.isArray(v)) objects.push(record);
    for (const [key, child] of Object.entries(record)) {
      if (child && typeof child === "object") walk(child);
      else leaves.push({ parent: record, key });
    }
  };
  walk(input);
  if (m.kind === "poison" || m.kind === "replace") {
    const strings = m.kind === "poison" ? leaves.filter((l) => typeof l.parent[l.key] === "string") : leaves;
    const leaf = strings[pick % Math.max(strings.length, 1)];
    if (!leaf) return m.kind === "replace" ? m.value : input;
    if (m.kind === "replace") leaf.parent[leaf.key] = m.value;
    else {
      const text = leaf.parent[leaf.key] as string;
      const at = pick % (text.length + 1);
      leaf.parent[leaf.key] = `${text.slice(0, at)}${m.with}${text.slice(at)}`;
    }
    return input;
  }
  const target = objects[pick % Math.max(objects.length, 1)];
  if (!target) return input;
  const keys = Object.keys(target);
  const key = keys[pick % Math.max(keys.length, 1)];
  if (m.kind === "extra") {
    Object.defineProperty(target, m.key, { value: m.value, enumerable: true, configurable: true, writable: true });
  } else if (key === undefined) {
    return input;
  } else if (m.kind === "drop") {
    delete target[key];
  } else {
    const renamed = key.toLowerCase() !== key ? key.toLowerCase() : `${key}x`;
    target[renamed] = target[key];
    delete target[key];
  }
  return input;
}
