// The dashboard API through tRPC callers: every procedure checks the caller's role on the
// server; agent tokens never pass; mutations change nothing when refused.
import { TRPCError } from "@trpc/server";
import { beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import type { UserRole, UserScope } from "../domain/scope.ts";
import { describePin } from "../content/pins.ts";
import { buildHistory, makeUser } from "../testing/dashboard.ts";
import { createContextInner } from "./init.ts";
import { createCaller } from "./root.ts";

type Caller = ReturnType<typeof createCaller>;
type History = Awaited<ReturnType<typeof buildHistory>>;

async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (error) {
    const cause = error instanceof TRPCError ? error.cause : error;
    if (isStrataError(cause)) return cause.code;
    if (error instanceof TRPCError) return error.code;
    throw error;
  }
}

const ROLES: UserRole[] = ["operator", "support", "admin"];

describeEachDatabase("dashboard API roles", (catalog) => {
  let h: History;
  const users = {} as Record<UserRole, UserScope>;
  const callerAs = (user: UserScope | null, authorization: string | null = null): Caller =>
    createCaller(createContextInner({ db: catalog().db, authorization, user }));

  beforeAll(async () => {
    const db = catalog().db;
    h = await buildHistory(db);
    for (const role of ROLES) users[role] = await makeUser(db, role);
  });

  /** Each procedure with harmless input (reads, or mutations on ids that do not exist). */
  const probes: Record<string, (c: Caller) => Promise<unknown>> = {
    "dashboard.graph": (c) => c.dashboard.graph({ repositoryId: h.repositoryId }),
    "dashboard.graphSearch": (c) => c.dashboard.graphSearch({ repositoryId: h.repositoryId, text: "main" }),
    "dashboard.snapshot": (c) => c.dashboard.snapshot({ snapshotId: h.b1 }),
    "dashboard.pins": (c) => c.dashboard.pins({ keepingRetired: true }),
    "dashboard.liveHolds": (c) => c.dashboard.liveHolds({ status: "all" }),
    "dashboard.audit": (c) => c.dashboard.audit({}),
    "dashboard.collection": (c) => c.dashboard.collection(),
    "dashboard.collectionRuns": (c) => c.dashboard.collectionRuns({}),
    "dashboard.retirementPreview": (c) => c.dashboard.retirementPreview({ kind: "lineage", id: h.lineageA }),
    "dashboard.retireSnapshot": (c) => c.dashboard.retireSnapshot({ snapshotId: "no-such", reason: "probe only" }),
    "dashboard.retireLineage": (c) => c.dashboard.retireLineage({ lineageId: "no-such", reason: "probe only" }),
    "dashboard.forkCheckpoint": (c) =>
      c.dashboard.forkCheckpoint({ fromCheckpoint: "no-such", count: 1, reason: "probe only" }),
    "degradedRestore.list": (c) => c.degradedRestore.list({}),
    "degradedRestore.discard": (c) => c.degradedRestore.discard({ restoreId: "no-such", reason: "probe only" }),
    // The old names, kept for one release, answer exactly as the new ones.
    "restore.degraded": (c) => c.restore.degraded({}),
    "restore.discardDegraded": (c) => c.restore.discardDegraded({ restoreId: "no-such", reason: "probe only" }),
  };
  // What each role gets past the gate to (NOT_FOUND for a probe id means the gate let it through).
  const expected: Record<string, Record<UserRole, string>> = {
    "dashboard.graph": { operator: "ok", support: "ok", admin: "ok" },
    "dashboard.graphSearch": { operator: "ok", support: "ok", admin: "ok" },
    "dashboard.snapshot": { operator: "ok", support: "ok", admin: "ok" },
    "dashboard.pins": { operator: "ok", support: "ok", admin: "ok" },
    "dashboard.liveHolds": { operator: "ok", support: "ok", admin: "ok" },
    "dashboard.audit": { operator: "ok", support: "ok", admin: "ok" },
    "dashboard.collection": { operator: "ok", support: "ok", admin: "ok" },
    "dashboard.collectionRuns": { operator: "ok", support: "ok", admin: "ok" },
    "dashboard.retirementPreview": { operator: "ok", support: "FORBIDDEN", admin: "ok" },
    "dashboard.retireSnapshot": { operator: "NOT_FOUND", support: "FORBIDDEN", admin: "NOT_FOUND" },
    "dashboard.retireLineage": { operator: "NOT_FOUND", support: "FORBIDDEN", admin: "NOT_FOUND" },
    "dashboard.forkCheckpoint": { operator: "NOT_FOUND", support: "FORBIDDEN", admin: "NOT_FOUND" },
    "degradedRestore.list": { operator: "ok", support: "ok", admin: "ok" },
    "degradedRestore.discard": { operator: "FORBIDDEN", support: "NOT_FOUND", admin: "NOT_FOUND" },
    "restore.degraded": { operator: "ok", support: "ok", admin: "ok" },
    "restore.discardDegraded": { operator: "FORBIDDEN", support: "NOT_FOUND", admin: "NOT_FOUND" },
  };

  it("lets each role through exactly the procedures its role allows", async () => {
    const seen: Record<string, Record<string, string>> = {};
    for (const [name, probe] of Object.entries(probes)) {
      seen[name] = {};
      for (const role of ROLES) seen[name][role] = await outcome(probe(callerAs(users[role])));
    }
    expect(seen).toEqual(expected);
  });

  it("refuses every dashboard procedure to agent tokens and to callers with no session", async () => {
    const agentOnly = callerAs(null, `Bearer ${h.agent.token}`);
    const nobody = callerAs(null);
    for (const [name, probe] of Object.entries({
      ...probes,
      "dashboard.runCollection": (c: Caller) => c.dashboard.runCollection(),
    })) {
      expect([name, await outcome(probe(agentOnly))]).toEqual([name, "UNAUTHORIZED"]);
      expect([name, await outcome(probe(nobody))]).toEqual([name, "UNAUTHORIZED"]);
    }
  });

  it("an operator cannot discard a degraded restore: FORBIDDEN, and its pin stays", async () => {
    const call = callerAs(users.operator).degradedRestore.discard({ restoreId: h.degradedRestoreId, reason: "try" });
    expect(await outcome(call)).toBe("FORBIDDEN");
    expect((await describePin(catalog().db, h.degradedPinId, { agentId: h.agent.scope.agentId })).active).toBe(true);
  });

  it("support cannot retire, fork or run collection; nothing changes", async () => {
    const db = catalog().db;
    const support = callerAs(users.support);
    const lineages = await db.lineage.count();
    expect(await outcome(support.dashboard.retireLineage({ lineageId: h.lineageB, reason: "try" }))).toBe("FORBIDDEN");
    expect(await outcome(support.dashboard.retireSnapshot({ snapshotId: h.bFirst, reason: "try" }))).toBe("FORBIDDEN");
    expect(
      await outcome(support.dashboard.forkCheckpoint({ fromCheckpoint: h.bFirst, count: 3, reason: "try it again" })),
    ).toBe("FORBIDDEN");
    expect(await outcome(support.dashboard.runCollection())).toBe("FORBIDDEN");
    expect(await outcome(callerAs(users.operator).dashboard.runCollection())).toBe("FORBIDDEN");
    expect(await outcome(callerAs(users.operator).dashboard.runCollection({ dryRun: true }))).toBe("FORBIDDEN");
    expect((await db.lineage.findUniqueOrThrow({ where: { id: h.lineageB } })).state).toBe("active");
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: h.bFirst } })).state).toBe("ready");
    expect(await db.lineage.count()).toBe(lineages);
    expect(await db.auditEvent.count({ where: { action: "lineage.fork" } })).toBe(0);
    expect(await db.collectionRun.count()).toBe(0);
  });

  it("the allowed roles do it: operator retires, support discards, admin collects; each audited", async () => {
    const db = catalog().db;
    const retired = await callerAs(users.operator).dashboard.retireLineage({ lineageId: h.lineageB, reason: "done" });
    expect(retired).toMatchObject({ alreadyRetired: false, retiredSnapshotIds: [h.bFirst] });
    const discarded = await callerAs(users.support).degradedRestore.discard({
      restoreId: h.degradedRestoreId,
      reason: "worktree rebuilt",
    });
    expect(discarded).toMatchObject({ alreadyDiscarded: false, releasedPinId: h.degradedPinId });
    expect((await describePin(db, h.degradedPinId, { agentId: h.agent.scope.agentId })).active).toBe(false);
    const preview = await callerAs(users.admin).dashboard.runCollection({ dryRun: true });
    expect(preview).toMatchObject({ status: "finished", dryRun: true });
    const run = await callerAs(users.admin).dashboard.runCollection();
    expect(run).toMatchObject({ status: "finished", dryRun: false });
    // Both in the run log, named by the admin's email; only the real run is audited.
    const log = await callerAs(users.support).dashboard.collectionRuns({});
    expect(log.runs.map((r) => [r.dryRun, r.trigger, r.startedBy])).toEqual([
      [false, "dashboard", users.admin.email],
      [true, "dashboard", users.admin.email],
    ]);
    const audit = await callerAs(users.support).dashboard.audit({ actorType: "user" });
    expect(audit.items.map((e) => [e.action, e.actorId])).toEqual([
      ["gc.collect", users.admin.userId],
      ["restore.discardDegraded", users.support.userId],
      ["lineage.retire", users.operator.userId],
    ]);
  });
});
