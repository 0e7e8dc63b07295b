// The worker loop over a real queue on both databases: a failing handler is retried with
// backoff until it succeeds; cancelling a running job fires the handler's AbortSignal and
// nothing of the cancelled run is recorded.
import { randomUUID } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { StrataError } from "../domain/errors.ts";
import { makeAgent, type TestAgent } from "../testing/lineage.ts";
import { JobQueue } from "./queue.ts";
import { queuePort } from "./worker-process.ts";
import { startWorker, type JobHandler, type RunningWorker, type WorkerEvent } from "./worker.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describeEachDatabase("worker loop", (catalog) => {
  let queue: JobQueue;
  let agent: TestAgent;
  beforeAll(async () => {
    queue = new JobQueue(catalog().db);
    agent = await makeAgent(catalog().db, "loop");
  });

  function run(host: string, handle: JobHandler, events: WorkerEvent[]): RunningWorker {
    const workerId = `${host}:${randomUUID().slice(0, 6)}`;
    return startWorker({
      port: queuePort(queue, host, workerId),
      handle,
      pollIntervalMs: 20,
      onEvent: (e) => events.push(e),
    });
  }

  it("retries a retryable failure with backoff, then completes", async () => {
    const host = `h-${randomUUID().slice(0, 8)}`;
    const job = (await queue.enqueue(catalog().db, {
      kind: "capture",
      host,
      agentId: agent.scope.agentId,
      data: {},
      retry: { backoffMs: 100, backoffMaxMs: 200 },
    }))!;
    const seen: number[] = [];
    const events: WorkerEvent[] = [];
    const worker = run(
      host,
      async (j, ctx) => {
        seen.push(j.attempt);
        await ctx.progress({ step: "working", attempt: j.attempt });
        if (j.attempt < 3) throw new StrataError("TIMEOUT", "git took too long");
        return { done: j.attempt };
      },
      events,
    );
    await until("completion", async () => (await queue.get(catalog().db, job.id))?.state === "completed");
    await worker.stop();
    expect(seen).toEqual([1, 2, 3]);
    const done = (await queue.get(catalog().db, job.id))!;
    expect(done).toMatchObject({
      attempts: 3,
      result: { done: 3 },
      progress: { step: "working", attempt: 3 },
      error: null,
    });
    // The failed attempts are the job's history, not its error.
    expect(done.attemptErrors).toMatchObject([
      { attempt: 1, code: "TIMEOUT", message: "git took too long", hint: null, retryable: true },
      { attempt: 2, code: "TIMEOUT", message: "git took too long", hint: null, retryable: true },
    ]);
    expect(events.filter((e) => e.type === "failed").map((e) => e.type === "failed" && e.outcome)).toEqual([
      "retry",
      "retry",
    ]);
    // Each attempt's events carry what its log line needs.
    expect(events.find((e) => e.type === "failed")).toMatchObject({
      facts: {
        jobId: job.id,
        kind: "capture",
        host,
        attempt: 1,
        outcome: "retry",
        code: "TIMEOUT",
        message: "git took too long",
      },
    });
    const completed = events.find((e) => e.type === "completed");
    expect(completed?.type === "completed" && completed.facts).toMatchObject({
      attempt: 3,
      outcome: "completed",
      code: null,
    });
    expect(completed?.type === "completed" && completed.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("aborts the handler of a cancelled job and records nothing of that run", async () => {
    const host = `h-${randomUUID().slice(0, 8)}`;
    const job = (await queue.enqueue(catalog().db, {
      kind: "restore",
      host,
      agentId: agent.scope.agentId,
      data: {},
      retry: { leaseSeconds: 1 },
    }))!;
    let aborted = false;
    const events: WorkerEvent[] = [];
    const worker = run(
      host,
      async (_job, ctx) => {
        await ctx.progress({ step: "started" });
        await new Promise<void>((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            aborted = true;
            reject(ctx.signal.reason as Error);
          });
        });
        return { unreachable: true };
      },
      events,
    );
    await until("the job to start", async () => (await queue.get(catalog().db, job.id))?.state === "active");
    await queue.cancel(catalog().db, job.id, { agentId: agent.scope.agentId });
    // Heartbeats run every quarter of the one-second lease.
    await until("the handler to be aborted", async () => aborted);
    await worker.stop();
    expect(await queue.get(catalog().db, job.id)).toMatchObject({ state: "cancelled", result: null, error: null });
    expect(events.some((e) => e.type === "lost" && e.job.id === job.id)).toBe(true);
  });
});
