// Idempotency keys over HTTP, on both databases: a creating call retried with its key does its
// work once and answers the first answer's bytes; a key reused for another call is refused; keys
// are per agent; concurrent calls with one key create one thing; a key is free again after 24 h.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { createCapturingSnapshot, storeBytes, storedLayer } from "../testing/content.ts";
import { serveApp, type TestServer } from "../testing/http-server.ts";
import {
  baselineKeyOf,
  cleanEvidence,
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
  body: string;
  strata: { code: string; retryable: boolean; hint: string | null } | null;
}

describeEachDatabase("idempotency keys", (catalog) => {
  let server: TestServer | undefined;
  let alice: TestAgent;
  let bob: TestAgent;
  beforeAll(async () => {
    server = await serveApp({ db: catalog().db });
    alice = await makeAgent(catalog().db, "alice");
    bob = await makeAgent(catalog().db, "bob");
  });
  afterAll(() => server?.close());

  /** POSTs one mutation as a plain JSON call, the way any HTTP client sends it. */
  async function call(agent: TestAgent, procedure: string, input: unknown, key?: string): Promise<Answer> {
    const response = await fetch(`${server!.url}/api/trpc/${procedure}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${agent.token}`,
        "content-type": "application/json",
        ...(key === undefined ? {} : { "idempotency-key": key }),
      },
      body: JSON.stringify({ json: input }),
    });
    const body = await response.text();
    const parsed = JSON.parse(body) as { error?: { json?: { data?: { strata?: Answer["strata"] } } } };
    return { status: response.status, body, strata: parsed.error?.json?.data?.strata ?? null };
  }

  const captureInput = () => ({
    host: "build-1",
    dir: "/home/dev/checkout",
    key: lineageKeyOf(scenario("idem"), uniqueName("wc")),
  });
  const jobsOf = (agent: TestAgent) => catalog().db.job.count({ where: { agentId: agent.scope.agentId } });

  it("answers a retried enqueue with the first answer's bytes and creates one job", async () => {
    const input = captureInput();
    const key = randomUUID();
    const before = await jobsOf(alice);
    const first = await call(alice, "job.enqueueCapture", input, key);
    const again = await call(alice, "job.enqueueCapture", input, key);
    expect(first.status).toBe(200);
    expect(again.body).toBe(first.body);
    expect(await jobsOf(alice)).toBe(before + 1);
    // Without a key every call is a new one, as before.
    await call(alice, "job.enqueueCapture", input);
    expect(await jobsOf(alice)).toBe(before + 2);
  });

  it("does each creating procedure's work once per key", async () => {
    const s = scenario("idem-all");
    const commit = oid(uniqueName("commit"));
    const workContextId = uniqueName("wc");
    const acquireInput = {
      repository: s.repository,
      backendKind: s.backendKind,
      baseImage: s.baseImage,
      canonicalRef: s.canonicalRef,
      workspace: `/workspaces/${uniqueName("ws")}`,
      host: "host-1",
    };
    const db = catalog().db;
    const owner = {
      agentId: alice.scope.agentId,
      repositoryId: (await db.repository.create({ data: { identity: `example.test/${uniqueName("r")}`, name: "r" } }))
        .id,
    };
    const layer = await storedLayer(db, { owner });
    const publishInput = {
      snapshotId: await createCapturingSnapshot(db, owner),
      manifestDigest: (await storeBytes(db, `manifest ${uniqueName("m")}`, owner)).digest,
      layers: [layer],
      heads: [layer.uuid],
    };
    const calls: [string, unknown][] = [
      ["snapshot.publish", publishInput],
      [
        "baseline.publish",
        {
          key: baselineKeyOf(s),
          commit,
          manifest: manifestOf({ head: commit, branch: "main" }),
          evidence: cleanEvidence(commit),
          observedHeadId: null,
        },
      ],
      [
        "checkpoint.append",
        {
          key: lineageKeyOf(s, workContextId),
          observedHeadId: null,
          manifest: manifestOf({ head: commit, branch: null }),
        },
      ],
      ["workspace.acquire", acquireInput],
      ["job.enqueueRestore", { ...acquireInput, workspace: `/workspaces/${uniqueName("ws")}` }],
    ];
    const rows = async () => ({
      layers: await db.layer.count({ where: { agentId: alice.scope.agentId } }),
      snapshots: await db.snapshot.count({ where: { agentId: alice.scope.agentId } }),
      restores: await db.restore.count({ where: { agentId: alice.scope.agentId } }),
      jobs: await jobsOf(alice),
    });
    for (const [procedure, input] of calls) {
      const key = randomUUID();
      const first = await call(alice, procedure, input, key);
      expect({ procedure, status: first.status }).toEqual({ procedure, status: 200 });
      const after = await rows();
      const again = await call(alice, procedure, input, key);
      expect({ procedure, same: again.body === first.body }).toEqual({ procedure, same: true });
      expect(await rows()).toEqual(after);
    }
  });

  it("refuses a reused key with another input (or procedure) and does nothing", async () => {
    const key = randomUUID();
    const input = captureInput();
    const first = await call(alice, "job.enqueueCapture", input, key);
    expect(first.status).toBe(200);
    const before = await jobsOf(alice);
    const other = await call(alice, "job.enqueueCapture", captureInput(), key);
    expect(other.status).toBe(409);
    expect(other.strata).toMatchObject({ code: "IDEMPOTENCY_CONFLICT", retryable: false });
    expect(other.strata?.hint).toMatch(/new Idempotency-Key/);
    const s = scenario("idem-elsewhere");
    const restoreInput = {
      repository: s.repository,
      backendKind: s.backendKind,
      baseImage: s.baseImage,
      canonicalRef: s.canonicalRef,
      workspace: `/workspaces/${uniqueName("ws")}`,
      host: "host-1",
    };
    const elsewhere = await call(alice, "job.enqueueRestore", restoreInput, key);
    expect(elsewhere.strata?.code).toBe("IDEMPOTENCY_CONFLICT");
    expect(await jobsOf(alice)).toBe(before);
    // The same call still answers its first answer.
    expect((await call(alice, "job.enqueueCapture", input, key)).body).toBe(first.body);
  });

  it("keeps each agent's keys apart", async () => {
    const key = randomUUID();
    const input = captureInput();
    const [a, b] = [await jobsOf(alice), await jobsOf(bob)];
    const mine = await call(alice, "job.enqueueCapture", input, key);
    const theirs = await call(bob, "job.enqueueCapture", input, key);
    expect([mine.status, theirs.status]).toEqual([200, 200]);
    expect(theirs.body).not.toBe(mine.body);
    expect([await jobsOf(alice), await jobsOf(bob)]).toEqual([a + 1, b + 1]);
  });

  it("creates exactly one job for concurrent calls with one key, and gives them one answer", async () => {
    const key = randomUUID();
    const input = captureInput();
    const before = await jobsOf(alice);
    const answers = await Promise.all(Array.from({ length: 6 }, () => call(alice, "job.enqueueCapture", input, key)));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(await jobsOf(alice)).toBe(before + 1);
  });

  it("records exactly one restore for concurrent acquires with one key", async () => {
    const s = scenario("idem-race");
    const input = {
      repository: s.repository,
      backendKind: s.backendKind,
      baseImage: s.baseImage,
      canonicalRef: s.canonicalRef,
      workspace: `/workspaces/${uniqueName("ws")}`,
      host: "host-1",
    };
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 4 }, () => call(bob, "workspace.acquire", input, key)));
    expect(answers.map((a) => a.status)).toEqual(Array(4).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    const restores = await catalog().db.restore.count({
      where: { agentId: bob.scope.agentId, workspace: input.workspace },
    });
    expect(restores).toBe(1);
  });

  it("frees a key after 24 hours", async () => {
    const key = randomUUID();
    const input = captureInput();
    const first = await call(alice, "job.enqueueCapture", input, key);
    const day = 24 * 60 * 60 * 1000;
    await catalog().db.idempotencyKey.update({
      where: { agentId_key: { agentId: alice.scope.agentId, key } },
      data: { createdAt: new Date(Date.now() - day - 60_000), expiresAt: new Date(Date.now() - 60_000) },
    });
    const before = await jobsOf(alice);
    const later = await call(alice, "job.enqueueCapture", input, key);
    expect(later.status).toBe(200);
    expect(later.body).not.toBe(first.body);
    expect(await jobsOf(alice)).toBe(before + 1);
    // A keyed call also forgets the agent's other expired keys.
    const stale = randomUUID();
    await call(alice, "job.enqueueCapture", captureInput(), stale);
    await catalog().db.idempotencyKey.update({
      where: { agentId_key: { agentId: alice.scope.agentId, key: stale } },
      data: { createdAt: new Date(Date.now() - day - 60_000), expiresAt: new Date(Date.now() - 60_000) },
    });
    await call(alice, "job.enqueueCapture", captureInput(), randomUUID());
    expect(await catalog().db.idempotencyKey.count({ where: { agentId: alice.scope.agentId, key: stale } })).toBe(0);
  });

  it("refuses a malformed key before doing anything", async () => {
    const before = await jobsOf(alice);
    for (const key of ["has space", "x".repeat(201), "key/with/slashes"]) {
      const answer = await call(alice, "job.enqueueCapture", captureInput(), key);
      expect({ key, code: answer.strata?.code }).toEqual({ key, code: "INVALID_INPUT" });
    }
    expect(await jobsOf(alice)).toBe(before);
  });

  it("stores a lost fence (its capture kept for reclamation) and answers it again; rolls back other refusals", async () => {
    const s = scenario("idem-fence");
    const commit = oid(uniqueName("commit"));
    const input = {
      key: lineageKeyOf(s, uniqueName("wc")),
      observedHeadId: randomUUID(),
      manifest: manifestOf({ head: commit, branch: null }),
    };
    const key = randomUUID();
    const lost = await call(alice, "checkpoint.append", input, key);
    expect(lost.strata?.code).toBe("FENCE_LOST");
    const losers = () => catalog().db.snapshot.count({ where: { agentId: alice.scope.agentId, state: "deleting" } });
    const kept = await losers();
    const again = await call(alice, "checkpoint.append", input, key);
    expect(again.body).toBe(lost.body);
    expect(await losers()).toBe(kept);

    // A stale baseline publish is refused with nothing written: its key is not kept either.
    const staleKey = randomUUID();
    const stale = await call(
      alice,
      "baseline.publish",
      {
        key: baselineKeyOf(s),
        commit,
        manifest: manifestOf({ head: commit, branch: "main" }),
        evidence: cleanEvidence(commit),
        observedHeadId: randomUUID(),
      },
      staleKey,
    );
    expect(stale.strata?.code).toBe("BASELINE_STALE");
    expect(await catalog().db.idempotencyKey.count({ where: { key: staleKey } })).toBe(0);
  });

  it("refuses a finished key without its answer, or one that expires before it was made (CHECKs)", async () => {
    const db = catalog().db;
    const row = { agentId: alice.scope.agentId, procedure: "job.enqueueCapture", inputHash: "h" };
    const now = new Date();
    const later = new Date(now.getTime() + 1000);
    await expect(
      db.idempotencyKey.create({
        data: { ...row, key: randomUUID(), state: "succeeded", createdAt: now, expiresAt: later },
      }),
    ).rejects.toThrow();
    await expect(
      db.idempotencyKey.create({
        data: { ...row, key: randomUUID(), state: "done", response: "{}", createdAt: now, expiresAt: later },
      }),
    ).rejects.toThrow();
    await expect(
      db.idempotencyKey.create({
        data: { ...row, key: randomUUID(), state: "running", createdAt: later, expiresAt: now },
      }),
    ).rejects.toThrow();
  });
});
