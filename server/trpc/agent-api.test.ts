// The agent API end to end: the authorization matrix (two agents, every procedure, real
// tokens in the Authorization header) and the wire format an agent's @trpc/client sees.
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import superjson from "superjson";
import { beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import type { ErrorCode } from "../domain/errors.ts";
import { createAgent, revokeAgentTokens } from "../auth/agents.ts";
import { cleanEvidence, manifestOf, oid, scenario, uniqueName } from "../testing/lineage.ts";
import { createContextInner } from "./init.ts";
import { appRouter, createCaller, type AppRouter } from "./root.ts";
import { failureOf } from "../testing/calls.ts";

type Caller = ReturnType<typeof createCaller>;

describeEachDatabase("agent API", (catalog) => {
  const s = scenario("api");
  const callerFor = (authorization: string | null): Caller =>
    createCaller(createContextInner({ db: catalog().db, authorization, user: null }));

  // Alice's world, which Bob must never reach.
  const world = {
    aliceToken: "",
    bobToken: "",
    revokedToken: "",
    baselineId: "",
    checkpointId: "",
    lineageId: "",
    workContextId: "",
    pendingRestoreId: "",
  };

  function publishInput(commitLabel: string, observedHeadId: string | null) {
    const commit = oid(commitLabel);
    return {
      key: { repository: s.repository, backendKind: s.backendKind, baseImage: s.baseImage, canonicalRef: "main" },
      commit,
      manifest: manifestOf({ head: commit, branch: "main" }),
      evidence: cleanEvidence(commit),
      observedHeadId,
    };
  }
  const acquireInput = (workContextId?: string) => ({
    repository: s.repository,
    backendKind: s.backendKind,
    baseImage: s.baseImage,
    canonicalRef: "main",
    workContextId,
    workspace: `/w/${uniqueName("ws")}`,
    host: "host-a",
  });
  const appendInput = (workContextId: string, observedHeadId: string | null, label: string) => ({
    key: { repository: s.repository, backendKind: s.backendKind, baseImage: s.baseImage, workContextId },
    observedHeadId,
    manifest: manifestOf({ head: oid(label), branch: "task" }),
  });

  beforeAll(async () => {
    const db = catalog().db;
    const alice = await createAgent(db, { name: uniqueName("alice") });
    const bob = await createAgent(db, { name: uniqueName("bob") });
    const carol = await createAgent(db, { name: uniqueName("carol") });
    await revokeAgentTokens(db, { name: carol.agentName });
    Object.assign(world, { aliceToken: alice.token, bobToken: bob.token, revokedToken: carol.token });

    const a = callerFor(`Bearer ${alice.token}`);
    const baseline = await a.baseline.publish(publishInput("main@1", null));
    const plan = await a.workspace.acquire(acquireInput());
    await a.workspace.reportRestore({ restoreId: plan.restoreId, outcome: "restored" });
    const cp = await a.checkpoint.append(appendInput(plan.workContextId, null, "alice-work"));
    const pending = await a.workspace.acquire(acquireInput(plan.workContextId));
    Object.assign(world, {
      baselineId: baseline.snapshot.id,
      checkpointId: cp.snapshot.id,
      lineageId: plan.lineage.id,
      workContextId: plan.workContextId,
      pendingRestoreId: pending.restoreId,
    });
  });

  /** Every agent procedure, called with inputs that name Alice's things. */
  const procedures: Record<string, (c: Caller) => Promise<unknown>> = {
    "baseline.publish": (c) => c.baseline.publish(publishInput("main@bob", world.baselineId)),
    "baseline.head": (c) => c.baseline.head({ key: publishInput("main@1", null).key }),
    "checkpoint.append": (c) => c.checkpoint.append(appendInput(world.workContextId, world.checkpointId, "bob-work")),
    "workspace.acquire": (c) => c.workspace.acquire(acquireInput(world.workContextId)),
    "workspace.reportRestore": (c) =>
      c.workspace.reportRestore({ restoreId: world.pendingRestoreId, outcome: "failed", error: { code: "X" } }),
    "lineage.retire": (c) => c.lineage.retire({ lineageId: world.lineageId, reason: "completed" }),
    "lineage.fork": (c) => c.lineage.fork({ fromCheckpoint: world.checkpointId, count: 2, reason: "fork it" }),
    "lineage.get": (c) => c.lineage.get({ lineageId: world.lineageId }),
    "lineage.list": (c) => c.lineage.list({ includeRetired: true }),
    "snapshot.get": (c) => c.snapshot.get({ snapshotId: world.checkpointId }),
    "snapshot.list": (c) => c.snapshot.list({ includeRetired: true }),
  };

  it.each(Object.keys(procedures))("%s refuses a missing, malformed or revoked token", async (name) => {
    const call = procedures[name];
    if (!call) throw new Error(name);
    for (const authorization of [null, "Bearer ", "Basic abc", `Bearer ${world.revokedToken}`, `Bearer strata_x`]) {
      expect((await failureOf(call(callerFor(authorization)))).code).toBe("UNAUTHORIZED");
    }
  });

  // What Bob gets when he names Alice's things: NOT_FOUND, or his own empty world.
  const crossAgent: Record<string, (bob: Caller) => Promise<void>> = {
    "baseline.publish": async (bob) => {
      // Bob's key holds no baseline: Alice's head is not his to observe, and nothing tells him it exists.
      expect(await failureOf(procedures["baseline.publish"]!(bob))).toEqual({
        code: "BASELINE_STALE",
        data: { currentHeadId: null, currentCommit: null },
      });
    },
    "baseline.head": async (bob) => {
      // The same key under Bob's name holds nothing; Alice sees her own head.
      expect(await procedures["baseline.head"]!(bob)).toBeNull();
      const alice = callerFor(`Bearer ${world.aliceToken}`);
      expect(await procedures["baseline.head"]!(alice)).toMatchObject({ id: world.baselineId, state: "ready" });
    },
    "checkpoint.append": async (bob) => {
      const lost = await failureOf(procedures["checkpoint.append"]!(bob));
      expect(lost.code).toBe("FENCE_LOST");
      expect(lost.data?.currentHeadId).toBeNull();
    },
    "workspace.acquire": async (bob) => {
      const plan = (await procedures["workspace.acquire"]!(bob)) as { rung: string; lineage: { id: string } };
      expect(plan.rung).toBe("cold");
      expect(plan.lineage.id).not.toBe(world.lineageId);
    },
    "workspace.reportRestore": async (bob) => {
      expect((await failureOf(procedures["workspace.reportRestore"]!(bob))).code).toBe("NOT_FOUND");
    },
    "lineage.retire": async (bob) => {
      expect((await failureOf(procedures["lineage.retire"]!(bob))).code).toBe("NOT_FOUND");
    },
    "lineage.fork": async (bob) => {
      expect((await failureOf(procedures["lineage.fork"]!(bob))).code).toBe("NOT_FOUND");
      expect(await catalog().db.lineage.count({ where: { forkedFromId: world.checkpointId } })).toBe(0);
    },
    "lineage.get": async (bob) => {
      expect((await failureOf(procedures["lineage.get"]!(bob))).code).toBe("NOT_FOUND");
    },
    "lineage.list": async (bob) => {
      const page = (await procedures["lineage.list"]!(bob)) as { items: { id: string }[] };
      expect(page.items.map((l) => l.id)).not.toContain(world.lineageId);
    },
    "snapshot.get": async (bob) => {
      expect((await failureOf(procedures["snapshot.get"]!(bob))).code).toBe("NOT_FOUND");
      expect((await failureOf(bob.snapshot.get({ snapshotId: world.baselineId }))).code).toBe("NOT_FOUND");
    },
    "snapshot.list": async (bob) => {
      const page = (await procedures["snapshot.list"]!(bob)) as { items: { id: string }[] };
      const ids = page.items.map((i) => i.id);
      expect(ids).not.toContain(world.baselineId);
      expect(ids).not.toContain(world.checkpointId);
    },
  };

  it.each(Object.keys(procedures))("%s gives another agent no access to Alice's things", async (name) => {
    const bob = callerFor(`Bearer ${world.bobToken}`);
    await crossAgent[name]!(bob);

    // And Alice's world is exactly as she left it.
    const alice = callerFor(`Bearer ${world.aliceToken}`);
    expect(await alice.snapshot.get({ snapshotId: world.baselineId })).toMatchObject({ state: "ready" });
    expect(await alice.lineage.get({ lineageId: world.lineageId })).toMatchObject({
      state: "active",
      head: { id: world.checkpointId },
    });
    const restore = await catalog().db.restore.findUniqueOrThrow({ where: { id: world.pendingRestoreId } });
    expect(restore.outcome).toBe("pending");
  });

  it("speaks the documented wire format to @trpc/client (superjson, error.data.strata)", async () => {
    const db = catalog().db;
    const client = (token: string) =>
      createTRPCClient<AppRouter>({
        links: [
          httpBatchLink({
            url: "http://strata.test/api/trpc",
            transformer: superjson,
            headers: { authorization: `Bearer ${token}` },
            fetch: (url, init) =>
              fetchRequestHandler({
                endpoint: "/api/trpc",
                req: new Request(url, init as RequestInit),
                router: appRouter,
                createContext: ({ req }) =>
                  createContextInner({
                    db,
                    authorization: req.headers.get("authorization"),
                    user: null,
                  }),
              }),
          }),
        ],
      });
    const alice = client(world.aliceToken);
    const plan = await alice.workspace.acquire.mutate(acquireInput());
    expect(plan.snapshot?.createdAt).toBeInstanceOf(Date);
    expect(typeof plan.snapshot?.manifest.sizeBytes).toBe("bigint");
    await alice.workspace.reportRestore.mutate({ restoreId: plan.restoreId, outcome: "restored" });

    const errorOf = async (call: Promise<unknown>) => {
      const error = await call.then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TRPCClientError);
      return (error as TRPCClientError<AppRouter>).data as unknown as {
        code: string;
        httpStatus: number;
        strata: { code: ErrorCode; hint: string | null; retryable: boolean } | null;
      };
    };
    const stale = await errorOf(alice.baseline.publish.mutate(publishInput("main@9", null)));
    expect(stale).toMatchObject({
      code: "CONFLICT",
      httpStatus: 409,
      strata: { code: "BASELINE_STALE", retryable: true },
    });
    expect(stale.strata?.hint).toBeTruthy();
    const invalid = await errorOf(alice.snapshot.get.query({ snapshotId: "" }));
    expect(invalid).toMatchObject({ code: "BAD_REQUEST", strata: { code: "INVALID_INPUT" } });
    const revoked = await errorOf(client(world.revokedToken).lineage.list.query({}));
    expect(revoked).toMatchObject({ code: "UNAUTHORIZED", httpStatus: 401, strata: { code: "UNAUTHORIZED" } });
  });
});
