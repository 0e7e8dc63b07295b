// A database outage in the middle of a job, for real: the catalog lives in a private PostgreSQL
// cluster (initdb/pg_ctl in a temporary directory, never the shared server) that the test stops
// while a job runs and starts again later, with a lease shorter than the outage and another
// worker's expiry racing the holder once the database is back. The attempt's recorded cause is
// the outage (UNAVAILABLE), never LEASE_EXPIRED. PostgreSQL only: a SQLite catalog is a local
// file, with no server to lose.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openCatalog, type CatalogHandle } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { startPrivatePostgres, type PrivatePostgres } from "../testing/private-postgres.ts";
import { makeAgent, uniqueName } from "../testing/lineage.ts";
import { isCatalogUnreachable } from "./catalog-outage.ts";
import { JobQueue } from "./queue.ts";
import { queuePort } from "./worker-process.ts";
import { startWorker, type WorkerEvent } from "./worker.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, fn: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe("a job interrupted by a database outage (private PostgreSQL cluster)", () => {
  let cluster: PrivatePostgres;
  let catalog: CatalogHandle;

  beforeAll(async () => {
    cluster = await startPrivatePostgres();
    await migrate(cluster.url);
    catalog = openCatalog(cluster.url, { poolSize: 4 });
  }, 120_000);

  afterAll(async () => {
    await catalog?.close();
    await cluster?.destroy();
  });

  it("records UNAVAILABLE as the attempt's cause once the database answers, not LEASE_EXPIRED", async () => {
    const db = catalog.db;
    const queue = new JobQueue(db);
    const agent = await makeAgent(db, "outage");
    const host = uniqueName("outage");
    const enqueued = (await queue.enqueue(db, {
      kind: "capture",
      host,
      agentId: agent.scope.agentId,
      data: {},
      retry: { leaseSeconds: 1, backoffMs: 50, backoffMaxMs: 100 },
    }))!;

    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    let databaseDown!: () => void;
    const down = new Promise<void>((resolve) => (databaseDown = resolve));
    const events: WorkerEvent[] = [];
    const worker = startWorker({
      port: queuePort(queue, host, `${host}|worker`),
      async handle(job, ctx) {
        if (job.attempt > 1) return { attempt: job.attempt };
        running();
        await down;
        // The job's next catalog write meets the outage.
        await ctx.progress({ step: "after the outage began" });
        return { unreachable: true };
      },
      host,
      pollIntervalMs: 50,
      heartbeatMs: 200,
      outageRetryMaxMs: 200,
      onEvent: (event) => events.push(event),
    });

    await started;
    await cluster.stop();
    databaseDown();
    // The holder fails the attempt, cannot record it, and keeps trying; the lease passes meanwhile.
    await until("the outage to be noticed", () =>
      events.some((e) => e.type === "error" && e.job?.id === enqueued.id && isCatalogUnreachable(e.error)),
    );
    await sleep(1_500);
    await cluster.start();

    // Another worker's housekeeping expires claims while the holder reconnects: whichever lands
    // first, the attempt's cause ends up the outage.
    let expiring = true;
    const expirer = (async () => {
      while (expiring) {
        await queue.expire().catch(() => undefined);
        await sleep(20);
      }
    })();
    await until("the job to complete", async () => (await queue.get(db, enqueued.id))?.state === "completed");
    expiring = false;
    await expirer;
    await worker.stop();

    const job = (await queue.get(db, enqueued.id))!;
    expect(job).toMatchObject({ state: "completed", attempts: 2, result: { attempt: 2 } });
    // Attempt 1's recorded cause is the job's history; the completed job itself has no error.
    expect(job.error).toBeNull();
    const cause = job.attemptErrors.find((e) => e.attempt === 1 && e.code !== "LEASE_EXPIRED");
    expect(cause).toMatchObject({ code: "UNAVAILABLE", retryable: true });
    expect(cause?.message).toMatch(/catalog database was unreachable during the job/);
    expect(job.attemptErrors.at(-1)).toMatchObject({ attempt: 1, code: "UNAVAILABLE" });

    const failed = events.find((e) => e.type === "failed" && e.job.id === enqueued.id && e.job.attempt === 1);
    expect(failed).toMatchObject({
      type: "failed",
      outcome: "retry",
      failure: { code: "UNAVAILABLE" },
      facts: { jobId: enqueued.id, kind: "capture", host, attempt: 1, outcome: "retry", code: "UNAVAILABLE" },
    });
    const completed = events.find((e) => e.type === "completed" && e.job.id === enqueued.id);
    expect(completed).toMatchObject({ facts: { attempt: 2, outcome: "completed", code: null } });
  }, 120_000);
});
