// How jobs end when they do not do their work, on both databases: a restore job that fails for
// good (through the real handler), is cancelled, or whose last claim expires leaves no pending
// restore and no active pin; a worker whose lease passed while it could not record its cause
// still records it over LEASE_EXPIRED; expiry keeps an earlier attempt's cause in its message.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { acquireWorkspace } from "../acquire/acquire-workspace.ts";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import { hasActivePin } from "../content/pins.ts";
import { inTransaction } from "../db/client.ts";
import type { JobView } from "../domain/jobs.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { addOrigin, initRepository, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { cancelJob, enqueueRestore } from "./agent-jobs.ts";
import { CATALOG_OUTAGE } from "./catalog-outage.ts";
import { JobQueue } from "./queue.ts";
import { startWorkerProcess } from "./worker-process.ts";
import { waitFor } from "../testing/worker-processes.ts";
import { testHostRoots, type TestHostRoots } from "../testing/host-roots.ts";

afterAll(removeTemporaryDirectories);

/** This machine's time plus what the tests moved it forward: leases pass without sleeping. */
let aheadMs = 0;
const clock = { now: () => new Date(Date.now() + aheadMs) };
const advance = (ms: number) => {
  aheadMs += ms;
};

describeEachDatabase("jobs that end without doing their work", (catalog) => {
  let agent: TestAgent;
  let queue: JobQueue;
  let dataDir: string;
  let repo: string;
  let roots: TestHostRoots;

  beforeAll(async () => {
    roots = testHostRoots();
    const db = catalog().db;
    queue = new JobQueue(db, {}, undefined, clock);
    agent = await makeAgent(db, "ends");
    dataDir = temporaryDirectory("strata-job-ends-");
    repo = initRepository({ "README.md": "# ends\n" });
    write(repo, "notes.txt", "uncommitted\n");
    addOrigin(repo);
  }, 60_000);

  /**
   * A checkpoint of its own work context (captured now), and the input that restores it into
   * `into` on `host`: the acquire decision takes a restore row and a pin on the checkpoint.
   */
  async function restoreOfCheckpoint(into: string, host: string) {
    const key = {
      repository: { identity: `example.invalid/${uniqueName("ends")}` },
      backendKind: "local",
      baseImage: "img",
      workContextId: uniqueName("wc"),
    };
    const { snapshotId } = await captureAndPublish(localCatalog(catalog().db, agent.scope), {
      dir: repo,
      target: { kind: "checkpoint", key },
    });
    return { snapshotId, input: { ...key, canonicalRef: "refs/heads/main", workspace: into, host } };
  }

  /** What must hold after a restore job ended without restoring. */
  async function expectRestoreEnded(restoreId: string, code: string, snapshotId: string) {
    const db = catalog().db;
    const restore = await db.restore.findUniqueOrThrow({ where: { id: restoreId } });
    expect(restore).toMatchObject({ outcome: "failed", errorCode: code });
    expect(restore.reportedAt).not.toBeNull();
    expect(await db.restore.count({ where: { workContextId: restore.workContextId, outcome: "pending" } })).toBe(0);
    const pin = await db.pin.findFirstOrThrow({ where: { agentId: agent.scope.agentId, pinId: restore.pinId! } });
    expect(pin.released).toBe(true);
    expect(await hasActivePin(db, snapshotId)).toBe(false);
  }

  it("a restore job that fails without retry (UNSAFE_TARGET) reports its restore failed and releases its pin", async () => {
    const db = catalog().db;
    const host = uniqueName("unsafe");
    const into = join(roots.root, uniqueName("unsafe"));
    // Someone else's files are already there: the restore must not write into them.
    mkdirSync(into);
    writeFileSync(join(into, "theirs.txt"), "not ours\n");
    const { snapshotId, input } = await restoreOfCheckpoint(into, host);
    const { plan, job } = await enqueueRestore(db, { ...input, agent: agent.scope });
    expect(plan.snapshot?.id).toBe(snapshotId);
    expect(await hasActivePin(db, snapshotId)).toBe(true);

    const worker = await startWorkerProcess({
      catalog: catalog(),
      host,
      dataDir,
      ...roots.options,
      schedule: { sweepIntervalSeconds: 0, gcIntervalSeconds: 0 },
      pollIntervalMs: 20,
    });
    const ended = await waitFor("the job to fail", async () => {
      const j = await queue.get(db, job!.id);
      return j?.state === "failed" ? j : null;
    });
    await worker.stop();

    expect(ended).toMatchObject({ attempts: 1, error: { code: "UNSAFE_TARGET" } });
    await expectRestoreEnded(plan.restoreId, "UNSAFE_TARGET", snapshotId);
  }, 60_000);

  it("a cancelled restore job reports its restore failed and releases its pin, in the cancel", async () => {
    const db = catalog().db;
    const into = join(temporaryDirectory("strata-cancel-"), "workspace");
    const { snapshotId, input } = await restoreOfCheckpoint(into, uniqueName("cancel"));
    const { plan, job } = await enqueueRestore(db, { ...input, agent: agent.scope });
    const cancelled = await cancelJob(db, { jobId: job!.id, agent: agent.scope });
    expect(cancelled.state).toBe("cancelled");
    await expectRestoreEnded(plan.restoreId, "CANCELLED", snapshotId);
    // Cancelling again changes nothing.
    expect((await cancelJob(db, { jobId: job!.id, agent: agent.scope })).state).toBe("cancelled");
  });

  it("a restore job whose last claim expires reports its restore failed and releases its pin", async () => {
    const db = catalog().db;
    const host = uniqueName("expire");
    const into = join(temporaryDirectory("strata-expire-"), "workspace");
    const { snapshotId, input } = await restoreOfCheckpoint(into, host);
    const { plan, job } = await inTransaction(db, async (tx) => {
      const decided = await acquireWorkspace(tx, { ...input, agent: agent.scope });
      const enqueued = await queue.enqueue(tx, {
        kind: "restore",
        host,
        agentId: agent.scope.agentId,
        data: { restoreId: decided.restoreId, into },
        retry: { maxAttempts: 1, leaseSeconds: 1 },
      });
      return { plan: decided, job: enqueued! };
    });
    const claimed = await queue.fetch({ host, workerId: `${host}|gone` });
    expect(claimed?.id).toBe(job.id);
    // The holder stops renewing (it died); once the lease has passed, expiry ends the job.
    advance(1_200);
    expect(await queue.expire()).toBeGreaterThanOrEqual(1);
    expect(await queue.get(db, job.id)).toMatchObject({ state: "failed", error: { code: "LEASE_EXPIRED" } });
    await expectRestoreEnded(plan.restoreId, "LEASE_EXPIRED", snapshotId);
  });

  it("a retryable failure with attempts left keeps the restore pending and its pin held", async () => {
    const db = catalog().db;
    const host = uniqueName("retry");
    const into = join(temporaryDirectory("strata-retry-"), "workspace");
    const { snapshotId, input } = await restoreOfCheckpoint(into, host);
    const { plan, job } = await enqueueRestore(db, { ...input, agent: agent.scope });
    const claimed = await queue.fetch({ host, workerId: `${host}|w` });
    expect(await queue.fail(claimed!, { code: "TIMEOUT", message: "slow", retryable: true })).toBe("retry");
    expect((await db.restore.findUniqueOrThrow({ where: { id: plan.restoreId } })).outcome).toBe("pending");
    expect(await hasActivePin(db, snapshotId)).toBe(true);
    await cancelJob(db, { jobId: job!.id, agent: agent.scope });
    await expectRestoreEnded(plan.restoreId, "CANCELLED", snapshotId);
  });

  it("a worker whose lease passed during an outage records the outage over LEASE_EXPIRED, unless a later attempt began", async () => {
    const db = catalog().db;
    const host = uniqueName("late");
    const enqueue = () =>
      queue.enqueue(db, {
        kind: "capture",
        host,
        agentId: agent.scope.agentId,
        data: {},
        retry: { leaseSeconds: 1, backoffMs: 0, backoffMaxMs: 0 },
      });
    const first = (await enqueue())!;
    const holder = (await queue.fetch({ host, workerId: `${host}|a` }))!;
    advance(1_200);
    await queue.expire();
    expect(await queue.get(db, first.id)).toMatchObject({ state: "retry", error: { code: "LEASE_EXPIRED" } });

    // The holder reaches the database again: its real cause replaces LEASE_EXPIRED.
    expect(await queue.fail(holder, { ...CATALOG_OUTAGE })).toBe("retry");
    const amended = (await queue.get(db, first.id)) as JobView;
    expect(amended.error?.code).toBe("UNAVAILABLE");
    expect(amended.error?.message).toMatch(/unreachable during the job/);
    // The history keeps both: the expiry, then the cause the holder recorded over it.
    expect(amended.attemptErrors.map((e) => [e.attempt, e.code])).toEqual([
      [1, "LEASE_EXPIRED"],
      [1, "UNAVAILABLE"],
    ]);
    // Repeating the report (its answer was lost) changes nothing.
    expect(await queue.fail(holder, { ...CATALOG_OUTAGE })).toBe("retry");

    // Once another worker has claimed the next attempt, the old holder records nothing.
    const next = (await queue.fetch({ host, workerId: `${host}|b` }))!;
    expect(next.attempt).toBe(2);
    advance(1_200);
    await queue.expire();
    expect(await queue.fail(holder, { code: "INTERNAL", message: "late", retryable: true })).toBe("lost");
    const expired = (await queue.get(db, first.id)) as JobView;
    // Expiry of attempt 2 keeps attempt 1's cause in its message.
    expect(expired.error?.code).toBe("LEASE_EXPIRED");
    expect(expired.error?.message).toMatch(/attempt before ended with UNAVAILABLE/);
    expect(expired.attemptErrors.map((e) => [e.attempt, e.code])).toEqual([
      [1, "LEASE_EXPIRED"],
      [1, "UNAVAILABLE"],
      [2, "LEASE_EXPIRED"],
    ]);
  });
});
