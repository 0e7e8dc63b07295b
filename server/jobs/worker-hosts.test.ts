// Worker hosts on both databases: a registered worker makes its host live and listed, a stopped
// or unseen one does not; an agent sees the hosts it may address, staff every host with its
// workers and queue; a job for a host nobody serves says so (waitingForHost) and, once it has
// waited the configured time, fails with NO_WORKER through the queue (a restore's restore and pin
// are settled), by the check itself or by any worker's housekeeping; a served host's job waits.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import { hasActivePin } from "../content/pins.ts";
import { trustUser } from "../domain/scope.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { addOrigin, initRepository, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { waitFor } from "../testing/worker-processes.ts";
import { enqueueCapture, enqueueRestore, getJob, listJobs } from "./agent-jobs.ts";
import { JobQueue } from "./queue.ts";
import {
  failJobsWithoutWorker,
  listHosts,
  registerWorker,
  WORKER_LIVENESS_MS,
  workerSeen,
  workerStopped,
  type HostList,
} from "./worker-hosts.ts";
import { startWorkerProcess } from "./worker-process.ts";

afterAll(removeTemporaryDirectories);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const operator = trustUser("user-operator", "op@example.test", "operator");

type StaffHost = Extract<HostList, { view: "staff" }>["hosts"][number];

describeEachDatabase("worker hosts", (catalog) => {
  let agent: TestAgent;
  let queue: JobQueue;
  let pid = 40_000;

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "hosts");
    queue = new JobQueue(catalog().db);
  });

  /** A worker row of `host`, as a worker process registers itself. */
  async function registered(host: string) {
    const id = `${host}|${++pid}|1|boot|ns|${uniqueName("n")}`;
    await registerWorker(catalog().db, { id, host, version: "9.9.9", pid });
    return id;
  }

  async function agentHosts(): Promise<string[]> {
    const list = await listHosts(catalog().db, { agent: agent.scope });
    expect(list.view).toBe("agent");
    return list.hosts.map((h) => h.name);
  }

  async function staffHost(name: string): Promise<StaffHost | undefined> {
    const list = await listHosts(catalog().db, { user: operator });
    if (list.view !== "staff") throw new Error("expected the staff view");
    return list.hosts.find((h) => h.name === name);
  }

  describe("liveness", () => {
    it("a registered worker makes its host live and listed; once stopped, it is not", async () => {
      const host = uniqueName("live");
      const id = await registered(host);
      expect(await agentHosts()).toContain(host);
      expect(await workerSeen(catalog().db, id)).toBe(true);
      expect(await staffHost(host)).toMatchObject({
        live: true,
        workers: [{ id, pid, version: "9.9.9", live: true, stoppedAt: null }],
      });

      await workerStopped(catalog().db, id);
      expect(await agentHosts()).not.toContain(host);
      const stopped = await staffHost(host);
      expect(stopped).toMatchObject({ live: false, workers: [{ id, live: false }] });
      expect(stopped?.workers[0]?.stoppedAt).toBeInstanceOf(Date);
      expect(stopped?.lastSeenAt).toBeInstanceOf(Date);
      // A stopped worker is not seen again: only a new start serves the host.
      expect(await workerSeen(catalog().db, id)).toBe(false);
      expect(await agentHosts()).not.toContain(host);
    });

    it("a worker not seen within the liveness window does not make its host live", async () => {
      const host = uniqueName("unseen");
      const id = await registered(host);
      const db = catalog().db;
      // As a killed worker leaves its row: last seen longer ago than the window.
      const row = await db.worker.findUniqueOrThrow({ where: { id } });
      const past = new Date(row.lastSeenAt.getTime() - WORKER_LIVENESS_MS - 5_000);
      await db.worker.update({ where: { id }, data: { lastSeenAt: past, startedAt: past } });
      expect(await agentHosts()).not.toContain(host);
      expect(await staffHost(host)).toMatchObject({ live: false, lastSeenAt: past, workers: [{ id, live: false }] });
      // Seen again, it is live again.
      expect(await workerSeen(db, id)).toBe(true);
      expect(await agentHosts()).toContain(host);
    });

    it("a worker process registers before its first claim and is marked stopped when it stops", async () => {
      const host = uniqueName("process");
      const worker = await startWorkerProcess({
        catalog: catalog(),
        host,
        dataDir: temporaryDirectory("strata-hosts-"),
        schedule: { sweepIntervalSeconds: 0, gcIntervalSeconds: 0 },
        pollIntervalMs: 20,
      });
      expect(await agentHosts()).toContain(host);
      const listed = await staffHost(host);
      expect(listed?.workers.map((w) => w.id)).toEqual([worker.workerId]);
      expect(listed?.workers[0]).toMatchObject({ pid: process.pid, live: true, stoppedAt: null });
      await worker.stop();
      expect(await agentHosts()).not.toContain(host);
      expect((await staffHost(host))?.workers[0]?.stoppedAt).toBeInstanceOf(Date);
    });
  });

  describe("views", () => {
    it("an agent sees only live hosts' names; staff see every host, its workers and its queue", async () => {
      const served = uniqueName("served");
      const nobody = uniqueName("nobody");
      await registered(served);
      const key = {
        repository: { identity: `example.invalid/${uniqueName("v")}` },
        backendKind: "local",
        baseImage: "img",
      };
      await enqueueCapture(catalog().db, {
        host: nobody,
        dir: "/srv/a",
        key: { ...key, workContextId: "w1" },
        agent: agent.scope,
      });
      await enqueueCapture(catalog().db, {
        host: nobody,
        dir: "/srv/b",
        key: { ...key, workContextId: "w2" },
        agent: agent.scope,
      });

      const agentView = await listHosts(catalog().db, { agent: agent.scope });
      const mine = agentView.hosts.find((h) => h.name === served);
      expect(mine).toEqual({ name: served, live: true, lastSeenAt: expect.any(Date) });
      expect(agentView.hosts.map((h) => h.name)).not.toContain(nobody);

      expect(await staffHost(nobody)).toMatchObject({
        live: false,
        lastSeenAt: null,
        workers: [],
        queue: [{ kind: "capture", created: 2, retry: 0, active: 0 }],
        oldestWaitingSince: expect.any(Date),
      });
      expect((await staffHost(nobody))?.oldestWaitingSeconds).toBeGreaterThanOrEqual(0);
      expect(await staffHost(served)).toMatchObject({ live: true, queue: [], oldestWaitingSince: null });
    });
  });

  describe("jobs for a host nobody serves", () => {
    let repo: string;

    beforeAll(() => {
      repo = initRepository({ "README.md": "# hosts\n" });
      write(repo, "notes.txt", "uncommitted\n");
      addOrigin(repo);
    });

    /** A restore of a fresh checkpoint into a new directory on `host`: a restore row and a pin. */
    async function restoreFor(host: string) {
      const key = {
        repository: { identity: `example.invalid/${uniqueName("hosts")}` },
        backendKind: "local",
        baseImage: "img",
        workContextId: uniqueName("wc"),
      };
      const { snapshotId } = await captureAndPublish(localCatalog(catalog().db, agent.scope), {
        dir: repo,
        target: { kind: "checkpoint", key },
      });
      const workspace = join(temporaryDirectory("strata-nowhere-"), "workspace");
      const { plan, job } = await enqueueRestore(catalog().db, {
        ...key,
        canonicalRef: "refs/heads/main",
        workspace,
        host,
        agent: agent.scope,
      });
      return { snapshotId, plan, job: job! };
    }

    it("reports waitingForHost at once and fails with NO_WORKER after the configured time, ending its restore", async () => {
      const db = catalog().db;
      const host = uniqueName("laptop");
      const { snapshotId, plan, job } = await restoreFor(host);
      expect(job.state).toBe("created");
      expect(job.waitingForHost).toMatchObject({ host, lastSeenAt: null });
      // The default wait (600 s) counts from the job's creation.
      expect(job.waitingForHost!.failsAt.getTime() - job.createdAt.getTime()).toBe(600_000);
      expect((await getJob(db, { jobId: job.id, agent: agent.scope })).waitingForHost?.host).toBe(host);
      const listed = await listJobs(db, { host, agent: agent.scope });
      expect(listed.map((j) => j.waitingForHost?.host)).toEqual([host]);

      // Not yet waited long enough: nothing fails.
      expect((await failJobsWithoutWorker(queue, { afterSeconds: 600 })).map((j) => j.id)).not.toContain(job.id);
      await sleep(1_100);
      const failed = await failJobsWithoutWorker(queue, { afterSeconds: 1 });
      expect(failed).toContainEqual({ id: job.id, kind: "restore", host, lastSeenAt: null });

      const row = await db.job.findUniqueOrThrow({ where: { id: job.id } });
      expect(row.state).toBe("failed");
      expect(row.finishedAt).not.toBeNull();
      const error = row.error as { code: string; message: string; hint: string; retryable: boolean };
      expect(error).toMatchObject({ code: "NO_WORKER", retryable: false });
      expect(error.message).toContain(host);
      expect(error.message).toMatch(/no worker of it ever ran/);
      expect(error.hint).toContain(`strata worker --host ${host}`);
      expect(error.hint).toContain("host.list");
      expect((await getJob(db, { jobId: job.id, agent: agent.scope })).waitingForHost).toBeNull();

      // Its restore is reported failed with the cause, and its pin released.
      const restore = await db.restore.findUniqueOrThrow({ where: { id: plan.restoreId } });
      expect(restore).toMatchObject({ outcome: "failed", errorCode: "NO_WORKER" });
      expect(await db.restore.count({ where: { workContextId: restore.workContextId, outcome: "pending" } })).toBe(0);
      const pin = await db.pin.findFirstOrThrow({ where: { agentId: agent.scope.agentId, pinId: restore.pinId! } });
      expect(pin.released).toBe(true);
      expect(await hasActivePin(db, snapshotId)).toBe(false);
      // A second check finds nothing more to do.
      expect((await failJobsWithoutWorker(queue, { afterSeconds: 1 })).map((j) => j.id)).not.toContain(job.id);
    });

    it("a job for a host with a live worker is not failed and does not report waitingForHost", async () => {
      const db = catalog().db;
      const host = uniqueName("served");
      const id = await registered(host);
      const { plan, job } = await restoreFor(host);
      expect(job.waitingForHost).toBeNull();
      await sleep(1_100);
      await workerSeen(db, id);
      expect((await failJobsWithoutWorker(queue, { afterSeconds: 1 })).map((j) => j.id)).not.toContain(job.id);
      expect((await db.job.findUniqueOrThrow({ where: { id: job.id } })).state).toBe("created");
      expect((await db.restore.findUniqueOrThrow({ where: { id: plan.restoreId } })).outcome).toBe("pending");

      // Once its worker has stopped, the job says when that worker was last seen.
      await workerStopped(db, id);
      const waiting = await getJob(db, { jobId: job.id, agent: agent.scope });
      expect(waiting.waitingForHost).toMatchObject({ host, lastSeenAt: expect.any(Date) });
      // The host was seen after the job was created: the wait counts from then.
      expect(waiting.waitingForHost!.failsAt.getTime()).toBe(waiting.waitingForHost!.lastSeenAt!.getTime() + 600_000);
      await queue.cancel(db, job.id);
    });

    it("any worker's housekeeping fails the jobs of a host nobody serves", async () => {
      const db = catalog().db;
      const host = uniqueName("off");
      const job = await enqueueCapture(db, {
        host,
        dir: "/srv/off",
        key: {
          repository: { identity: `example.invalid/${uniqueName("off")}` },
          backendKind: "local",
          baseImage: "img",
          workContextId: "w",
        },
        agent: agent.scope,
      });
      const worker = await startWorkerProcess({
        catalog: catalog(),
        host: uniqueName("elsewhere"),
        dataDir: temporaryDirectory("strata-hosts-"),
        schedule: { sweepIntervalSeconds: 0, gcIntervalSeconds: 0 },
        pollIntervalMs: 20,
        housekeepingMs: 50,
        noWorkerSeconds: 1,
      });
      try {
        const failed = await waitFor("the job to fail", async () => {
          const row = await db.job.findUniqueOrThrow({ where: { id: job.id } });
          return row.state === "failed" ? row : null;
        });
        expect(failed.error).toMatchObject({ code: "NO_WORKER" });
      } finally {
        await worker.stop();
      }
    });
  });
});
