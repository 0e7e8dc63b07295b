// Authorized forks on both databases, through the API an agent and the dashboard call: what a
// fork stores (lineages, one audit event) and leaves alone (the source), what it refuses while
// storing nothing, and how it meets a retirement or the sweeper in real concurrent transactions.
import { TRPCError } from "@trpc/server";
import { expect, it } from "vitest";
import { ZodError } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { isOneWayStateViolation } from "../db/errors.ts";
import { dialectOf } from "../db/dialect.ts";
import { isStrataError } from "../domain/errors.ts";
import type { UserRole } from "../domain/scope.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeUser } from "../testing/dashboard.ts";
import {
  acquireFor,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  publishClean,
  scenario,
  type Scenario,
  type TestAgent,
} from "../testing/lineage.ts";
import { createContextInner } from "../trpc/init.ts";
import { createCaller } from "../trpc/root.ts";
import { reportRestore } from "../restore/report-restore.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { forkCheckpoint } from "./fork-checkpoint.ts";
import { retireLineage } from "./lineages.ts";
import { sweepSnapshots } from "./sweeper.ts";

const DAY = 24 * 60 * 60 * 1000;

/** The code a client receives for a failed call (a schema's refusal is INVALID_INPUT on the wire). */
async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (error) {
    const cause = error instanceof TRPCError ? error.cause : error;
    if (isStrataError(cause)) return cause.code;
    if (cause instanceof ZodError) return "INVALID_INPUT";
    if (error instanceof TRPCError) return error.code;
    throw error;
  }
  throw new Error("expected the call to fail");
}

/** What a refused fork must leave exactly as it was. */
async function forkTrace(db: Db) {
  return {
    lineages: await db.lineage.count(),
    forks: await db.lineage.count({ where: { forkedFromId: { not: null } } }),
    audit: await db.auditEvent.count({ where: { action: "lineage.fork" } }),
  };
}

/** The source lineage's row and every checkpoint row of it, to compare before and after. */
async function sourceRows(db: Db, lineageId: string) {
  return {
    lineage: await db.lineage.findUniqueOrThrow({ where: { id: lineageId } }),
    checkpoints: await db.snapshot.findMany({ where: { lineageId }, orderBy: { sequence: "asc" } }),
  };
}

/** A baseline, a work context started from it with checkpoints #1 (superseded) and #2 (ready). */
async function workWithCheckpoints(db: Db, now?: Date) {
  const agent = await makeAgent(db, "forker");
  const s = scenario("fork");
  const baseline = await publishClean(db, agent.scope, s, "main@1", null);
  const start = await acquireFor(db, agent.scope, s, undefined, now);
  const key = lineageKeyOf(s, start.workContextId);
  const first = await appendCheckpoint(db, {
    agent: agent.scope,
    key,
    observedHeadId: null,
    manifest: manifestOf({ head: oid("fork-1"), branch: "task" }),
    now,
  });
  const second = await appendCheckpoint(db, {
    agent: agent.scope,
    key,
    observedHeadId: first.snapshot.id,
    manifest: manifestOf({ head: oid("fork-2"), branch: "task" }),
    now,
  });
  return {
    agent,
    s,
    baselineId: baseline.snapshot.id,
    workContextId: start.workContextId,
    lineageId: start.lineage.id,
    supersededId: first.snapshot.id,
    headId: second.snapshot.id,
  };
}

/**
 * Runs `work` in a transaction that stays open until `release` is called: what another
 * transaction does meanwhile meets its locks (PostgreSQL) or waits for it (SQLite).
 */
function holdTransaction<T>(db: Db, work: (tx: Db) => Promise<T>) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered!: (value: T) => void;
  let failed!: (error: unknown) => void;
  const inside = new Promise<T>((resolve, reject) => {
    entered = resolve;
    failed = reject;
  });
  const done = inTransaction(
    db,
    async (tx) => {
      const value = await work(tx).catch((error: unknown) => {
        failed(error);
        throw error;
      });
      entered(value);
      await gate;
      return value;
    },
    { attempts: 1 },
  );
  return { inside, release, done };
}

/**
 * Waits until another session of this database waits for a row lock (PostgreSQL). On SQLite a
 * transaction that started later simply runs after the held one: nothing to wait for.
 */
async function untilBlockedOnALock(db: Db): Promise<void> {
  if (dialectOf(db).kind !== "postgres") return;
  for (;;) {
    const [row] = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if ((row?.n ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describeEachDatabase("lineage.fork", (catalog) => {
  const agentCaller = (agent: TestAgent) =>
    createCaller(createContextInner({ db: catalog().db, authorization: `Bearer ${agent.token}`, user: null }));
  const userCaller = async (role: UserRole) => {
    const user = await makeUser(catalog().db, role);
    return { user, caller: createCaller(createContextInner({ db: catalog().db, authorization: null, user })) };
  };
  const acquireFork = (agent: TestAgent, s: Scenario, workContextId: string) =>
    acquireFor(catalog().db, agent.scope, s, workContextId);

  it("forks 10 work contexts from a ready checkpoint: 10 lineages, one audit event, the source untouched", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const before = await sourceRows(db, w.lineageId);

    const result = await agentCaller(w.agent).lineage.fork({
      fromCheckpoint: w.headId,
      count: 10,
      reason: "try ten approaches from the passing tests",
    });
    expect(result).toMatchObject({
      sourceSnapshotId: w.headId,
      sourceLineageId: w.lineageId,
      reason: "try ten approaches from the passing tests",
    });
    expect(result.forks).toHaveLength(10);
    const workContexts = result.forks.map((f) => f.workContextId);
    expect(new Set(workContexts).size).toBe(10);
    expect(workContexts.every((id) => id.startsWith("wc_") && id !== w.workContextId)).toBe(true);

    const source = await db.snapshot.findUniqueOrThrow({ where: { id: w.headId } });
    const lineages = await db.lineage.findMany({ where: { forkedFromId: w.headId } });
    expect(lineages.map((l) => l.id).sort()).toEqual(result.forks.map((f) => f.lineageId).sort());
    for (const lineage of lineages) {
      expect(lineage).toMatchObject({
        agentId: w.agent.scope.agentId,
        repositoryId: source.repositoryId,
        backendKind: source.backendKind,
        baseImage: source.baseImage,
        state: "active",
        originSnapshotId: w.headId,
        forkedFromId: w.headId,
        forkReason: "try ten approaches from the passing tests",
        forkedBy: `agent:${w.agent.scope.agentId}`,
      });
    }

    const audit = await db.auditEvent.findMany({ where: { action: "lineage.fork", subjectId: w.headId } });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actorType: "agent",
      actorId: w.agent.scope.agentId,
      subjectType: "snapshot",
      reason: "try ten approaches from the passing tests",
      details: { count: 10, sourceLineageId: w.lineageId, sourceWorkContextId: w.workContextId, forks: result.forks },
    });
    expect(await sourceRows(db, w.lineageId)).toEqual(before);

    // Each fork's first acquire restores the checkpoint it was forked from, pinned for it.
    for (const fork of result.forks) {
      const plan = await acquireFork(w.agent, w.s, fork.workContextId);
      expect(plan).toMatchObject({
        rung: "checkpoint",
        snapshot: { id: w.headId },
        workContextId: fork.workContextId,
        lineage: { id: fork.lineageId, forkedFromId: w.headId, originSnapshotId: w.headId },
        mustInspectExternalState: false,
        notice: null,
      });
      expect(await db.pin.findFirstOrThrow({ where: { pinId: plan.pinId ?? "" } })).toMatchObject({
        snapshotId: w.headId,
        released: false,
      });
    }
    // Restores and pins are the forks' own rows; the source's rows are still exactly as they were.
    expect(await sourceRows(db, w.lineageId)).toEqual(before);

    // The agent reads its fork back like any of its lineages.
    const [one] = result.forks;
    expect(await agentCaller(w.agent).lineage.get({ lineageId: one!.lineageId })).toMatchObject({
      workContextId: one!.workContextId,
      forkedFromId: w.headId,
      forkReason: "try ten approaches from the passing tests",
      originSnapshotId: w.headId,
      head: null,
      checkpointCount: 0,
    });
  });

  it("an operator or admin forks any agent's checkpoint from the dashboard; support is FORBIDDEN and stores nothing", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const support = await userCaller("support");
    const before = await forkTrace(db);
    const refused = support.caller.dashboard.forkCheckpoint({ fromCheckpoint: w.headId, count: 2, reason: "retry" });
    expect(await codeOf(refused)).toBe("FORBIDDEN");
    expect(await forkTrace(db)).toEqual(before);

    for (const role of ["operator", "admin"] as const) {
      const { user, caller } = await userCaller(role);
      const result = await caller.dashboard.forkCheckpoint({
        fromCheckpoint: w.headId,
        count: 2,
        reason: `${role} retries the flaky step`,
      });
      expect(result.forks).toHaveLength(2);
      const lineages = await db.lineage.findMany({ where: { id: { in: result.forks.map((f) => f.lineageId) } } });
      expect(lineages.map((l) => [l.agentId, l.forkedBy, l.forkReason])).toEqual([
        [w.agent.scope.agentId, `user:${user.userId}`, `${role} retries the flaky step`],
        [w.agent.scope.agentId, `user:${user.userId}`, `${role} retries the flaky step`],
      ]);
      expect(
        await db.auditEvent.findFirstOrThrow({ where: { action: "lineage.fork", actorId: user.userId } }),
      ).toMatchObject({ actorType: "user", subjectId: w.headId, reason: `${role} retries the flaky step` });
    }
  });

  it("refuses another agent's checkpoint as NOT_FOUND, storing nothing", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const bob = await makeAgent(db, "bob");
    const before = await forkTrace(db);
    expect(
      await codeOf(agentCaller(bob).lineage.fork({ fromCheckpoint: w.headId, count: 3, reason: "not mine to fork" })),
    ).toBe("NOT_FOUND");
    expect(
      await codeOf(
        forkCheckpoint(db, {
          fromCheckpoint: w.headId,
          count: 1,
          reason: "still not mine",
          actor: { kind: "agent", agent: bob.scope },
        }),
      ),
    ).toBe("NOT_FOUND");
    expect(
      await codeOf(agentCaller(w.agent).lineage.fork({ fromCheckpoint: "no-such", count: 1, reason: "gone" })),
    ).toBe("NOT_FOUND");
    expect(await forkTrace(db)).toEqual(before);
  });

  it("refuses a count outside 1-100 and a missing or blank reason as INVALID_INPUT, storing nothing", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const api = agentCaller(w.agent).lineage;
    const operator = (await userCaller("operator")).caller.dashboard;
    const before = await forkTrace(db);
    const bad: unknown[] = [
      { fromCheckpoint: w.headId, count: 0, reason: "none at all" },
      { fromCheckpoint: w.headId, count: 101, reason: "one too many" },
      { fromCheckpoint: w.headId, count: 2.5, reason: "half a fork" },
      { fromCheckpoint: w.headId, count: 2 },
      { fromCheckpoint: w.headId, count: 2, reason: "   " },
      { fromCheckpoint: w.headId, reason: "how many?" },
    ];
    for (const input of bad) {
      expect([input, await codeOf(api.fork(input as never))]).toEqual([input, "INVALID_INPUT"]);
      expect([input, await codeOf(operator.forkCheckpoint(input as never))]).toEqual([input, "INVALID_INPUT"]);
    }
    expect(await forkTrace(db)).toEqual(before);
    // The bounds themselves are allowed.
    expect((await api.fork({ fromCheckpoint: w.headId, count: 1, reason: "just one" })).forks).toHaveLength(1);
    expect((await api.fork({ fromCheckpoint: w.headId, count: 100, reason: "a hundred" })).forks).toHaveLength(100);
  });

  it("refuses a baseline, a superseded checkpoint and a retired one with a typed error, storing nothing", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const api = agentCaller(w.agent).lineage;
    const before = await forkTrace(db);
    expect(await codeOf(api.fork({ fromCheckpoint: w.baselineId, count: 1, reason: "a baseline" }))).toBe(
      "INVALID_INPUT",
    );
    expect(await codeOf(api.fork({ fromCheckpoint: w.supersededId, count: 1, reason: "an older one" }))).toBe(
      "CONFLICT",
    );
    await retireLineage(db, {
      lineageId: w.lineageId,
      reason: "completed",
      actor: { kind: "agent", agent: w.agent.scope },
    });
    expect(await codeOf(api.fork({ fromCheckpoint: w.headId, count: 1, reason: "after it ended" }))).toBe(
      "SNAPSHOT_RETIRED",
    );
    const operator = (await userCaller("admin")).caller;
    expect(
      await codeOf(operator.dashboard.forkCheckpoint({ fromCheckpoint: w.headId, count: 1, reason: "after it ended" })),
    ).toBe("SNAPSHOT_RETIRED");
    expect(await forkTrace(db)).toEqual(before);
  });

  it("holds a fork record whole and fixed in the database", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const source = await db.snapshot.findUniqueOrThrow({ where: { id: w.headId } });
    const key = { agentId: source.agentId, repositoryId: source.repositoryId, backendKind: source.backendKind };
    const partial = [
      { forkedFromId: w.headId },
      { forkedFromId: w.headId, forkReason: "why", forkedBy: null },
      { forkedFromId: w.headId, forkReason: "  ", forkedBy: "agent:x" },
      { forkReason: "why", forkedBy: "agent:x" },
    ];
    for (const [i, fields] of partial.entries()) {
      const created = db.lineage.create({
        data: { ...key, baseImage: source.baseImage, workContextId: `wc-partial-${i}`, ...fields },
      });
      const error = await created.then(
        () => null,
        (e: unknown) =>
          e as { message?: string; meta?: { driverAdapterError?: { cause?: { originalMessage?: string } } } },
      );
      const text = `${error?.message ?? ""} ${error?.meta?.driverAdapterError?.cause?.originalMessage ?? ""}`;
      expect([fields, text]).toEqual([fields, expect.stringMatching(/lineages_fork_check/)]);
    }
    const { forks } = await forkCheckpoint(db, {
      fromCheckpoint: w.headId,
      count: 1,
      reason: "the record stays",
      actor: { kind: "agent", agent: w.agent.scope },
    });
    const rewrite = await db.lineage
      .update({ where: { id: forks[0]!.lineageId }, data: { forkReason: "another story" } })
      .catch((e: unknown) => e);
    expect(isOneWayStateViolation(rewrite)).toBe(true);
    const unfork = await db.lineage
      .update({ where: { id: forks[0]!.lineageId }, data: { forkedFromId: null, forkReason: null, forkedBy: null } })
      .catch((e: unknown) => e);
    expect(isOneWayStateViolation(unfork)).toBe(true);
  });

  it("a fork that waits on a retirement of its source lineage is refused once the retirement commits", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const before = await forkTrace(db);
    const retirement = holdTransaction(db, (tx) =>
      retireLineage(tx, {
        lineageId: w.lineageId,
        reason: "completed",
        actor: { kind: "agent", agent: w.agent.scope },
      }),
    );
    await retirement.inside;
    const fork = forkCheckpoint(db, {
      fromCheckpoint: w.headId,
      count: 3,
      reason: "racing the retirement",
      actor: { kind: "agent", agent: w.agent.scope },
    }).catch((e: unknown) => e);
    await untilBlockedOnALock(db);
    retirement.release();
    expect((await retirement.done).retiredSnapshotIds).toEqual([w.headId]);
    const refused = await fork;
    expect(isStrataError(refused, "SNAPSHOT_RETIRED")).toBe(true);
    expect(await forkTrace(db)).toEqual(before);
  });

  it("a retirement that waits on a fork ends the source after it: the forks stand and fall to the baseline", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const fork = holdTransaction(db, (tx) =>
      forkCheckpoint(tx, {
        fromCheckpoint: w.headId,
        count: 3,
        reason: "before the end",
        actor: { kind: "agent", agent: w.agent.scope },
      }),
    );
    await fork.inside;
    const retirement = retireLineage(db, {
      lineageId: w.lineageId,
      reason: "completed",
      actor: { kind: "agent", agent: w.agent.scope },
    });
    await untilBlockedOnALock(db);
    fork.release();
    const forked = await fork.done;
    const retired = await retirement;
    // The fork saw the checkpoint ready and committed first; the retirement then retired it.
    expect(retired.retiredSnapshotIds).toEqual([w.headId]);
    expect(await db.lineage.count({ where: { forkedFromId: w.headId, state: "active" } })).toBe(3);
    // A retired checkpoint seeds nothing: each fork's acquire falls to the baseline, and is told why.
    const plan = await acquireFork(w.agent, w.s, forked.forks[0]!.workContextId);
    expect(plan).toMatchObject({
      rung: "baseline",
      snapshot: { id: w.baselineId },
      mustInspectExternalState: true,
      lineage: { forkedFromId: w.headId },
    });
    expect(plan.notice).toMatch(/forked from checkpoint/);
  });

  it("the stale sweep that waits on a fork leaves the forked checkpoint ready: the fork counts as its use", async () => {
    const db = catalog().db;
    const longAgo = new Date(Date.now() - 20 * DAY);
    const w = await workWithCheckpoints(db, longAgo);
    const idle = await workWithCheckpoints(db, longAgo);
    const fork = holdTransaction(db, (tx) =>
      forkCheckpoint(tx, {
        fromCheckpoint: w.headId,
        count: 2,
        reason: "pick it up again",
        actor: { kind: "agent", agent: w.agent.scope },
      }),
    );
    await fork.inside;
    const sweep = sweepSnapshots(db, { now: new Date() });
    if (dialectOf(db).kind === "postgres") {
      // The sweep read the head as stale before the fork committed, and waits for its lineage.
      await untilBlockedOnALock(db);
    }
    fork.release();
    await fork.done;
    const swept = await sweep;
    expect(swept.staleCheckpointIds).toContain(idle.headId);
    expect(swept.staleCheckpointIds).not.toContain(w.headId);
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: w.headId } })).state).toBe("ready");
    expect((await db.lineage.findUniqueOrThrow({ where: { id: w.lineageId } })).state).toBe("active");
  });

  it("a fork protects its checkpoint from the sweeper until it has a checkpoint of its own or the window passes", async () => {
    const db = catalog().db;
    const t0 = new Date(Date.now() - 40 * DAY);
    const at = (days: number) => new Date(t0.getTime() + days * DAY);
    const w = await workWithCheckpoints(db, t0);
    const { forks } = await forkCheckpoint(db, {
      fromCheckpoint: w.headId,
      count: 2,
      reason: "two tries",
      actor: { kind: "agent", agent: w.agent.scope },
      now: at(1),
    });
    // The source moves on: the forked checkpoint is superseded on day 2.
    await appendCheckpoint(db, {
      agent: w.agent.scope,
      key: lineageKeyOf(w.s, w.workContextId),
      observedHeadId: w.headId,
      manifest: manifestOf({ head: oid("fork-3"), branch: "task" }),
      now: at(2),
    });
    // Past the 7-day retention of a superseded snapshot, the forks still wait for it.
    const day10 = await sweepSnapshots(db, { now: at(10) });
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: w.headId } })).state).toBe("superseded");
    expect(day10.movedToDeleting.superseded).toBeGreaterThanOrEqual(1); // checkpoint #1 went
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: w.supersededId } })).state).toBe("deleting");
    // A superseded fork source still seeds a fork that has none of its own.
    const plan = await acquireFor(db, w.agent.scope, w.s, forks[1]!.workContextId, at(10));
    expect(plan).toMatchObject({ rung: "checkpoint", snapshot: { id: w.headId, state: "superseded" } });
    await reportRestore(db, {
      agent: w.agent.scope,
      restoreId: plan.restoreId,
      outcome: "failed",
      error: { code: "X" },
      now: at(10),
    });
    // Fifteen days after the fork, the forks no longer hold it: the sweeper hands it to collection.
    await sweepSnapshots(db, { now: at(16) });
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: w.headId } })).state).toBe("deleting");
  });

  it("a fork that appended its own checkpoint no longer holds the source, and resumes its own head", async () => {
    const db = catalog().db;
    const t0 = new Date(Date.now() - 30 * DAY);
    const at = (days: number) => new Date(t0.getTime() + days * DAY);
    const w = await workWithCheckpoints(db, t0);
    const { forks } = await forkCheckpoint(db, {
      fromCheckpoint: w.headId,
      count: 1,
      reason: "one try",
      actor: { kind: "agent", agent: w.agent.scope },
      now: at(1),
    });
    const fork = forks[0]!;
    const first = await acquireFor(db, w.agent.scope, w.s, fork.workContextId, at(1));
    expect(first.snapshot?.id).toBe(w.headId);
    await reportRestore(db, { agent: w.agent.scope, restoreId: first.restoreId, outcome: "restored", now: at(1) });
    const own = await appendCheckpoint(db, {
      agent: w.agent.scope,
      key: lineageKeyOf(w.s, fork.workContextId),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("fork-own"), branch: "try" }),
      now: at(2),
    });
    expect(own).toMatchObject({ outcome: "appended", lineageId: fork.lineageId, snapshot: { sequence: 1 } });
    const next = await acquireFor(db, w.agent.scope, w.s, fork.workContextId, at(3));
    expect(next).toMatchObject({ rung: "checkpoint", snapshot: { id: own.snapshot.id } });
    await reportRestore(db, { agent: w.agent.scope, restoreId: next.restoreId, outcome: "restored", now: at(3) });
    // The source was last restored on day 1 and the fork has its own state: stale by day 16.
    const swept = await sweepSnapshots(db, { now: at(16) });
    expect(swept.staleCheckpointIds).toContain(w.headId);
    expect(swept.staleCheckpointIds).not.toContain(own.snapshot.id);
  });

  it("forks of one checkpoint made at the same time all land", async () => {
    const db = catalog().db;
    const w = await workWithCheckpoints(db);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        forkCheckpoint(db, {
          fromCheckpoint: w.headId,
          count: 5,
          reason: `batch ${i}`,
          actor: { kind: "agent", agent: w.agent.scope },
        }),
      ),
    );
    expect(results.flatMap((r) => r.forks)).toHaveLength(30);
    expect(await db.lineage.count({ where: { forkedFromId: w.headId } })).toBe(30);
    expect(await db.auditEvent.count({ where: { action: "lineage.fork", subjectId: w.headId } })).toBe(6);
  });
});
