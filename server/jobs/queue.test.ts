// The job queue on both databases: enqueue inside the caller's transaction, host addressing,
// retries with capped backoff, cancel, expired claims handed out again and the fence that keeps
// their old holder out, and exclusive claims under concurrency.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestCatalog, describeEachDatabase, type TestCatalog } from "../testing/databases.ts";
import { retryDelayMs } from "../domain/jobs.ts";
import { makeAgent, type TestAgent } from "../testing/lineage.ts";
import { JobQueue } from "./queue.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A queue clock the test moves forward instead of sleeping; it starts at this machine's time. */
function testClock() {
  let t = Date.now();
  return {
    now: () => new Date(t),
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe("retryDelayMs", () => {
  it("doubles from the base, never exceeds the cap, and jitters within the upper half", () => {
    const policy = { backoffMs: 1_000, backoffMaxMs: 10_000 };
    expect(retryDelayMs(policy, 1, () => 1)).toBe(1_000);
    expect(retryDelayMs(policy, 2, () => 1)).toBe(2_000);
    expect(retryDelayMs(policy, 4, () => 1)).toBe(8_000);
    expect(retryDelayMs(policy, 5, () => 1)).toBe(10_000);
    expect(retryDelayMs(policy, 60, () => 1)).toBe(10_000);
    expect(retryDelayMs(policy, 3, () => 0)).toBe(2_000);
  });
});

describeEachDatabase("job queue", (catalog) => {
  let queue: JobQueue;
  let agent: TestAgent;
  const host = () => `host-${randomUUID().slice(0, 8)}`;
  const capture = (h: string, extra: object = {}) => ({
    kind: "capture" as const,
    host: h,
    agentId: agent.scope.agentId,
    data: { dir: "/tmp/x", ...extra },
  });

  beforeAll(async () => {
    queue = new JobQueue(catalog().db);
    agent = await makeAgent(catalog().db, "jobs");
  });

  it("enqueues inside the caller's transaction: a rollback leaves no job anywhere", async () => {
    const h = host();
    const id = randomUUID();
    await expect(
      catalog().db.$transaction(async (tx) => {
        await queue.enqueue(tx, { ...capture(h), id });
        throw new Error("the catalog write failed");
      }),
    ).rejects.toThrow(/catalog write failed/);
    expect(await queue.get(catalog().db, id)).toBeNull();
    expect(await queue.fetch({ host: h, workerId: "w1" })).toBeNull();

    const committed = await catalog().db.$transaction((tx) => queue.enqueue(tx, { ...capture(h), id }));
    expect(committed?.state).toBe("created");
    const claimed = await queue.fetch({ host: h, workerId: "w1" });
    expect(claimed?.id).toBe(id);
    expect(claimed?.attempt).toBe(1);
    expect(await queue.complete(claimed!, { ok: true })).toBe(true);
    const done = await queue.get(catalog().db, id);
    expect(done).toMatchObject({ state: "completed", result: { ok: true }, attempts: 1 });
  });

  it("hands a host's jobs only to that host, and host-less jobs to any", async () => {
    const a = host();
    const b = host();
    const own = await queue.enqueue(catalog().db, capture(a));
    expect(await queue.fetch({ host: b, workerId: "wb" })).toBeNull();
    const claimed = await queue.fetch({ host: a, workerId: "wa" });
    expect(claimed?.id).toBe(own?.id);
    await queue.complete(claimed!, {});

    const sweep = await queue.enqueue(catalog().db, { kind: "sweep", host: null, agentId: null, data: {} });
    const any = await queue.fetch({ host: b, workerId: "wb" });
    expect(any?.id).toBe(sweep?.id);
    await queue.complete(any!, {});
  });

  it("retries a retryable failure after a capped exponential backoff, then fails for good", async () => {
    const h = host();
    const clock = testClock();
    const queue = new JobQueue(catalog().db, {}, undefined, clock);
    const job = await queue.enqueue(catalog().db, {
      ...capture(h),
      retry: { maxAttempts: 3, backoffMs: 300, backoffMaxMs: 400 },
    });
    let claimed = (await queue.fetch({ host: h, workerId: "w" }))!;
    expect(await queue.fail(claimed, { code: "TIMEOUT", message: "slow", retryable: true })).toBe("retry");
    let row = (await queue.get(catalog().db, job!.id))!;
    const delay = () => row.runAfter.getTime() - clock.now().getTime();
    expect(row.state).toBe("retry");
    expect(row.error).toEqual({ code: "TIMEOUT", message: "slow", hint: null, retryable: true });
    expect(row.attemptErrors).toEqual([
      { attempt: 1, at: expect.any(Date), code: "TIMEOUT", message: "slow", hint: null, retryable: true },
    ]);
    // Not runnable before its backoff (first retry: 150–300 ms).
    expect(delay()).toBeGreaterThanOrEqual(150);
    expect(delay()).toBeLessThanOrEqual(300);
    clock.advance(delay() - 1);
    expect(await queue.fetch({ host: h, workerId: "w" })).toBeNull();
    clock.advance(1);
    claimed = (await queue.fetch({ host: h, workerId: "w" }))!;
    expect(claimed.attempt).toBe(2);
    expect(await queue.fail(claimed, { code: "TIMEOUT", message: "slow", retryable: true })).toBe("retry");
    row = (await queue.get(catalog().db, job!.id))!;
    // The second delay would be 300–600 ms uncapped; the cap holds it at 200–400 ms.
    expect(delay()).toBeGreaterThanOrEqual(200);
    expect(delay()).toBeLessThanOrEqual(400);
    clock.advance(400);
    claimed = (await queue.fetch({ host: h, workerId: "w" }))!;
    expect(claimed.attempt).toBe(3);
    expect(await queue.fail(claimed, { code: "TIMEOUT", message: "slow", retryable: true })).toBe("failed");
    row = (await queue.get(catalog().db, job!.id))!;
    expect(row).toMatchObject({ state: "failed", attempts: 3, error: { code: "TIMEOUT" } });
    expect(row.attemptErrors.map((e) => [e.attempt, e.code])).toEqual([
      [1, "TIMEOUT"],
      [2, "TIMEOUT"],
      [3, "TIMEOUT"],
    ]);
    expect(row.finishedAt).not.toBeNull();
    clock.advance(60_000);
    expect(await queue.fetch({ host: h, workerId: "w" })).toBeNull();
  });

  it("fails a non-retryable error at once, whatever attempts remain", async () => {
    const h = host();
    const job = await queue.enqueue(catalog().db, capture(h));
    const claimed = (await queue.fetch({ host: h, workerId: "w" }))!;
    expect(await queue.fail(claimed, { code: "UNSAFE_TARGET", message: "not empty", retryable: false })).toBe("failed");
    expect((await queue.get(catalog().db, job!.id))?.state).toBe("failed");
  });

  it("cancels a waiting job and a running one; the holder's claim is gone", async () => {
    const h = host();
    const waiting = await queue.enqueue(catalog().db, capture(h));
    expect((await queue.cancel(catalog().db, waiting!.id))?.state).toBe("cancelled");
    expect(await queue.fetch({ host: h, workerId: "w" })).toBeNull();

    const running = await queue.enqueue(catalog().db, capture(h));
    const claimed = (await queue.fetch({ host: h, workerId: "w" }))!;
    expect(claimed.id).toBe(running!.id);
    // Another agent cannot cancel it.
    expect(await queue.cancel(catalog().db, running!.id, { agentId: randomUUID() })).toBeNull();
    expect((await queue.cancel(catalog().db, running!.id, { agentId: agent.scope.agentId }))?.state).toBe("cancelled");
    expect(await queue.heartbeat(claimed, { step: "late" })).toBe(false);
    expect(await queue.complete(claimed, { too: "late" })).toBe(false);
    expect(await queue.fail(claimed, { code: "TIMEOUT", message: "", retryable: true })).toBe("lost");
    const row = await queue.get(catalog().db, running!.id);
    expect(row).toMatchObject({ state: "cancelled", result: null, progress: null });
    // Cancelling a finished job changes nothing.
    expect((await queue.cancel(catalog().db, running!.id))?.state).toBe("cancelled");
  });

  it("hands an expired claim to another worker and fences out its old holder", async () => {
    const h = host();
    const clock = testClock();
    const queue = new JobQueue(catalog().db, {}, undefined, clock);
    const job = await queue.enqueue(catalog().db, { ...capture(h), retry: { leaseSeconds: 1 } });
    const first = (await queue.fetch({ host: h, workerId: "dead" }))!;
    expect(await queue.heartbeat(first, { step: "started" })).toBe(true);
    expect((await queue.get(catalog().db, job!.id))?.progress).toEqual({ step: "started" });
    // Queued while the first was held: it waits behind the expired one, which keeps its place.
    clock.advance(10);
    const later = await queue.enqueue(catalog().db, capture(h));
    // The lease (1 s) has not passed yet; then it has.
    clock.advance(989);
    expect(await queue.expire()).toBe(0);
    clock.advance(201);
    expect(await queue.expire()).toBeGreaterThanOrEqual(1);
    const second = (await queue.fetch({ host: h, workerId: "alive" }))!;
    expect(second.id).toBe(job!.id);
    expect(await queue.fetch({ host: h, workerId: "alive-too" })).toMatchObject({ id: later!.id });
    expect(second.attempt).toBe(2);
    expect(await queue.complete(first, { from: "dead" })).toBe(false);
    expect(await queue.heartbeat(first)).toBe(false);
    expect(await queue.complete(second, { from: "alive" })).toBe(true);
    const done = (await queue.get(catalog().db, job!.id))!;
    expect(done).toMatchObject({
      state: "completed",
      attempts: 2,
      claimedBy: "alive",
      result: { from: "alive" },
      // The expired attempt is history, not the completed job's error.
      error: null,
    });
    expect(done.attemptErrors).toMatchObject([{ attempt: 1, code: "LEASE_EXPIRED", retryable: true }]);
  });

  it("fails a job whose last attempt's claim expired", async () => {
    const h = host();
    const clock = testClock();
    const queue = new JobQueue(catalog().db, {}, undefined, clock);
    const job = await queue.enqueue(catalog().db, { ...capture(h), retry: { leaseSeconds: 1, maxAttempts: 1 } });
    await queue.fetch({ host: h, workerId: "dead" });
    clock.advance(1_200);
    await queue.expire();
    expect(await queue.get(catalog().db, job!.id)).toMatchObject({ state: "failed", error: { code: "LEASE_EXPIRED" } });
    expect(await queue.fetch({ host: h, workerId: "w" })).toBeNull();
  });

  it("lists an agent's jobs newest first and reads one only in its agent's scope", async () => {
    const h = host();
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await queue.enqueue(catalog().db, capture(h, { i })))!.id);
    const listed = await queue.list(catalog().db, { agentId: agent.scope.agentId, host: h });
    expect(listed.map((j) => j.id)).toEqual([...ids].reverse());
    const page = await queue.list(catalog().db, { agentId: agent.scope.agentId, host: h, before: ids[2], limit: 1 });
    expect(page.map((j) => j.id)).toEqual([ids[1]]);
    expect(await queue.get(catalog().db, ids[0]!, { agentId: randomUUID() })).toBeNull();
    expect(await queue.list(catalog().db, { agentId: randomUUID() })).toEqual([]);
  });

  it("the database refuses a job in a state its columns contradict", async () => {
    const h = host();
    const job = (await queue.enqueue(catalog().db, capture(h)))!;
    await expect(catalog().db.job.update({ where: { id: job.id }, data: { state: "active" } })).rejects.toThrow();
    await expect(catalog().db.job.update({ where: { id: job.id }, data: { state: "paused" } })).rejects.toThrow();
    await expect(catalog().db.job.update({ where: { id: job.id }, data: { state: "completed" } })).rejects.toThrow();
    await expect(
      catalog().db.job.create({
        data: {
          kind: "restore",
          host: null,
          agentId: agent.scope.agentId,
          data: {},
          maxAttempts: 1,
          backoffMs: 0,
          backoffMaxMs: 0,
          leaseSeconds: 1,
          runAfter: new Date(),
        },
      }),
    ).rejects.toThrow();
    await expect(catalog().db.job.update({ where: { id: job.id }, data: { attempts: 99 } })).rejects.toThrow();
  });

  it("schedules one maintenance job per interval slot however many worker processes offer", async () => {
    const offers = await Promise.all(
      [0, 1, 2, 3].map((n) => runChild({ url: catalog().url, mode: "schedule", host: "any", workerId: `s${n}` })),
    );
    const parsed = offers.flat() as { sweep: string | null; gc: string | null }[];
    expect(parsed).toHaveLength(4);
    expect(parsed.filter((o) => o.sweep !== null)).toHaveLength(1);
    expect(parsed.filter((o) => o.gc !== null)).toHaveLength(1);
    // Take them off the shared queue so later tests see only their own host-less jobs.
    for (const id of parsed.flatMap((o) => [o.sweep, o.gc]).filter((x): x is string => x !== null)) {
      await queue.cancel(catalog().db, id);
    }
  });

  it("claims each job exactly once when worker processes race", async () => {
    const h = host();
    const count = 60;
    for (let i = 0; i < count; i += 1) await queue.enqueue(catalog().db, capture(h, { i }));
    const claims = await Promise.all(
      [0, 1, 2, 3].map((n) => runChild({ url: catalog().url, mode: "claim", host: h, workerId: `racer-${n}` })),
    );
    const ids = (claims.flat() as { id: string; host: string | null }[]).filter((c) => c.host === h).map((c) => c.id);
    expect(ids).toHaveLength(count);
    expect(new Set(ids).size).toBe(count);
    const rows = await catalog().db.job.findMany({ where: { host: h }, select: { state: true, attempts: true } });
    expect(rows.every((r) => r.state === "active" && r.attempts === 1)).toBe(true);
  }, 60_000);
});

const CHILD = fileURLToPath(new URL("../testing/queue-process.ts", import.meta.url));

/** Runs the queue child process and returns the JSON lines it printed. */
function runChild(args: {
  url: string;
  mode: "claim" | "schedule";
  host: string;
  workerId: string;
}): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, JSON.stringify(args)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) reject(new Error(`queue child exited ${code}: ${err}`));
      else
        resolve(
          out
            .split("\n")
            .filter(Boolean)
            .map((line) => JSON.parse(line) as unknown),
        );
    });
  });
}

describe("the PostgreSQL queue under concurrent claims", () => {
  let catalog: TestCatalog;
  beforeAll(async () => {
    catalog = await createTestCatalog("postgres");
  }, 60_000);
  afterAll(async () => {
    await catalog.drop();
  });

  it("passes over a job another worker's transaction holds (SKIP LOCKED) instead of waiting for it", async () => {
    const agent = await makeAgent(catalog.db, "skiplocked");
    const queue = new JobQueue(catalog.db);
    const h = `host-${randomUUID().slice(0, 8)}`;
    const job = (n: number) => ({ kind: "capture" as const, host: h, agentId: agent.scope.agentId, data: { n } });
    const first = await queue.enqueue(catalog.db, job(1));
    const second = await queue.enqueue(catalog.db, job(2));

    // Another worker is mid-claim on the oldest job: its transaction holds the row lock.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = catalog.db.$transaction(
      async (tx) => {
        await tx.$queryRawUnsafe(`SELECT id FROM jobs WHERE id = $1 FOR UPDATE`, first!.id);
        locked();
        await held;
      },
      { timeout: 30_000 },
    );
    await isLocked;
    // This fetch would block until the holder ends if it waited on the lock; it takes the next job.
    const claimed = await Promise.race([
      queue.fetch({ host: h, workerId: "w2" }),
      sleep(5_000).then(() => "blocked" as const),
    ]);
    release();
    await holder;
    expect(claimed).not.toBe("blocked");
    expect(claimed).toMatchObject({ id: second!.id, attempt: 1 });
    // Once the lock is gone the first job is runnable as before.
    expect(await queue.fetch({ host: h, workerId: "w2" })).toMatchObject({ id: first!.id });
  });
});
