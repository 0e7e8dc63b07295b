// Real worker processes (`node cli/strata.mjs worker --host X`) with a lease of ten minutes, so
// that a job can only run again before it through the reclaim: a live sibling worker's job is
// never taken; a worker killed with SIGKILL and restarted on its host re-runs its job at once.
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import type { JobView } from "../domain/jobs.ts";
import { initRepository, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { testHostRoots, type TestHostRoots } from "../testing/host-roots.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import {
  killHard,
  killWorkers,
  startWorker,
  stopGently,
  waitFor,
  type WorkerChild,
} from "../testing/worker-processes.ts";
import { enqueueCapture } from "./agent-jobs.ts";
import { JobQueue } from "./queue.ts";
import { parseWorkerId } from "./worker-identity.ts";

// Far longer than any test here: the lease never hands a job out again during one.
process.env.STRATA_JOB_LEASE_SECONDS = "600";

afterAll(removeTemporaryDirectories);
afterAll(killWorkers);

describeEachDatabase("a dead worker's jobs come back at once", (catalog) => {
  let agent: TestAgent;
  let queue: JobQueue;
  let dataDir: string;
  let repo: string;
  let roots: TestHostRoots;

  beforeAll(async () => {
    queue = new JobQueue(catalog().db);
    agent = await makeAgent(catalog().db, "reclaim");
    dataDir = temporaryDirectory("strata-reclaim-data-");
    roots = testHostRoots();
    repo = roots.give(agent.name, initRepository({ "README.md": "# reclaim\n" }));
    write(repo, "notes.txt", "uncommitted\n");
  });

  async function job(id: string): Promise<JobView> {
    return (await queue.get(catalog().db, id))!;
  }

  async function captureJob(host: string): Promise<JobView> {
    const key = {
      repository: { identity: `example.invalid/${uniqueName("reclaim")}` },
      backendKind: "local",
      baseImage: "img",
      workContextId: uniqueName("wc"),
    };
    return enqueueCapture(catalog().db, { host, dir: repo, key, agent: agent.scope });
  }

  const completed = (id: string) =>
    waitFor(`job ${id} to complete`, async () => {
      const j = await job(id);
      return j.state === "completed" ? j : null;
    });

  /** A worker that claims `id` and blocks in the middle of it (alive, renewing nothing). */
  async function workerHolding(host: string, id: string): Promise<{ worker: WorkerChild; claimedBy: string }> {
    const worker = startWorker(catalog().url, host, dataDir, { ...roots.env, STRATA_TEST_PAUSE_AT: "capture:publish" });
    await waitFor("the worker to pause mid-capture", async () => worker.stderr().includes("paused at capture:publish"));
    const held = await job(id);
    expect(held).toMatchObject({ state: "active", attempts: 1 });
    expect(parseWorkerId(held.claimedBy!)).toMatchObject({ host, pid: worker.child.pid });
    return { worker, claimedBy: held.claimedBy! };
  }

  it("never takes a live sibling's job; a worker killed with SIGKILL and restarted on its host re-runs its job at once", async () => {
    const host = uniqueName("kill");
    const held = await captureJob(host);
    const { worker: first, claimedBy } = await workerHolding(host, held.id);

    // A sibling worker of the host starts (it reclaims before its first claim) and runs a job of
    // its own; the first worker is alive, so its job is left alone.
    const sibling = startWorker(catalog().url, host, dataDir, roots.env);
    const own = await captureJob(host);
    const ownDone = await completed(own.id);
    expect(parseWorkerId(ownDone.claimedBy!)).toMatchObject({ host, pid: sibling.child.pid });
    expect(await job(held.id)).toMatchObject({ state: "active", attempts: 1, claimedBy });
    await stopGently(sibling);

    // The first worker is killed and started again on its host.
    await killHard(first);
    const restarted = startWorker(catalog().url, host, dataDir, roots.env);
    const done = await completed(held.id);
    await stopGently(restarted);

    // Attempt 2 ran in the restarted worker, long before the ten-minute lease could have passed.
    expect(done.attempts).toBe(2);
    expect(parseWorkerId(done.claimedBy!)).toMatchObject({ host, pid: restarted.child.pid });
    // The completed job has no error; the handed-back attempt is its history.
    expect(done.error).toBeNull();
    expect(done.attemptErrors).toMatchObject([{ attempt: 1, code: "WORKER_DIED", retryable: true }]);
    expect((done.result as { outcome: string }).outcome).toBe("appended");
    // The operator's log says which job came back and whose it was.
    const handedBack = restarted
      .stderr()
      .split("\n")
      .filter((line) => line.includes("job of a dead worker handed back") && line.includes(held.id));
    expect(handedBack).toHaveLength(1);
    expect(handedBack[0]).toContain(claimedBy);
  }, 120_000);
});
