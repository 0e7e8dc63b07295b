// A job's error is a StrataError's shape and nothing of the server's internals, on both
// databases: a handler's plain Error is recorded INTERNAL with a generic sentence; a job whose
// transaction the catalog's outage interrupted records UNAVAILABLE; a job that completed after a
// failed attempt has no error, and its attempts' causes are its history; rows of the earlier
// `{ code, message }` shape still read.
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inTransaction, openCatalog, type CatalogHandle, type DatabaseKind, type Db } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { StrataError } from "../domain/errors.ts";
import { DATABASE_KINDS, describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { startPrivatePostgres } from "../testing/private-postgres.ts";
import { isCatalogUnreachable } from "./catalog-outage.ts";
import { ATTEMPT_ERRORS_KEPT, INTERNAL_JOB_MESSAGE, jobErrorOf, readJobError, withAttemptError } from "./job-errors.ts";
import { JobQueue } from "./queue.ts";
import { queuePort } from "./worker-process.ts";
import { startWorker, type JobHandler, type RunningWorker, type WorkerEvent } from "./worker.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, fn: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Words no stored or returned job error may hold. */
const INTERNAL_WORDS = [/invocation/i, /prisma/i, /\.ts\b/, /\.js\b/, /\n\s*at /, /secret internal/];

function expectNoInternalText(value: unknown): void {
  const text = JSON.stringify(value);
  for (const words of INTERNAL_WORDS) expect(text).not.toMatch(words);
}

function runWorker(queue: JobQueue, host: string, handle: JobHandler, events: WorkerEvent[]): RunningWorker {
  const workerId = `${host}|${randomUUID().slice(0, 6)}`;
  return startWorker({
    port: queuePort(queue, host, workerId),
    handle,
    host,
    pollIntervalMs: 20,
    heartbeatMs: 200,
    outageRetryMaxMs: 200,
    onEvent: (event) => events.push(event),
  });
}

/** The job row's error columns as the database holds them. */
async function storedErrors(db: Db, id: string) {
  return db.job.findUniqueOrThrow({ where: { id }, select: { error: true, attemptErrors: true } });
}

describeEachDatabase("job errors", (catalog) => {
  let queue: JobQueue;
  let agent: TestAgent;

  beforeAll(async () => {
    queue = new JobQueue(catalog().db);
    agent = await makeAgent(catalog().db, "job-errors");
  });

  const enqueue = (host: string, retry: { maxAttempts?: number; backoffMs?: number; backoffMaxMs?: number } = {}) =>
    queue.enqueue(catalog().db, { kind: "capture", host, agentId: agent.scope.agentId, data: {}, retry });

  it("records a handler's plain Error as INTERNAL with the generic message, never its own words", async () => {
    const host = uniqueName("plain");
    const job = (await enqueue(host, { maxAttempts: 1 }))!;
    const events: WorkerEvent[] = [];
    const worker = runWorker(
      queue,
      host,
      async () => {
        throw new Error("secret internal /srv/app/server/x.ts:12 invocation");
      },
      events,
    );
    await until("the job to fail", async () => (await queue.get(catalog().db, job.id))?.state === "failed");
    await worker.stop();

    const failed = (await queue.get(catalog().db, job.id))!;
    const expected = { code: "INTERNAL", message: INTERNAL_JOB_MESSAGE, hint: null, retryable: true };
    expect(failed.error).toEqual(expected);
    expect(failed.attemptErrors).toEqual([{ attempt: 1, at: expect.any(Date), ...expected }]);
    const stored = await storedErrors(catalog().db, job.id);
    expect(stored.error).toEqual(expected);
    expectNoInternalText([failed.error, failed.attemptErrors, stored]);
    // The worker's own log line still says what was thrown.
    expect(events.find((e) => e.type === "failed")).toMatchObject({
      outcome: "failed",
      failure: expected,
      facts: { code: "INTERNAL", message: "secret internal /srv/app/server/x.ts:12 invocation" },
    });
  });

  it("a job that failed its first attempt and completed on its second has no error, and keeps the cause as history", async () => {
    const host = uniqueName("second");
    const job = (await enqueue(host, { backoffMs: 50, backoffMaxMs: 100 }))!;
    const events: WorkerEvent[] = [];
    const worker = runWorker(
      queue,
      host,
      async (claimed) => {
        if (claimed.attempt === 1) {
          throw new StrataError("TIMEOUT", "git took too long.", { hint: "Retried by the worker." });
        }
        return { attempt: claimed.attempt };
      },
      events,
    );
    await until("the job to complete", async () => (await queue.get(catalog().db, job.id))?.state === "completed");
    await worker.stop();

    const done = (await queue.get(catalog().db, job.id))!;
    expect(done).toMatchObject({ state: "completed", attempts: 2, result: { attempt: 2 }, error: null });
    expect(done.attemptErrors).toEqual([
      {
        attempt: 1,
        at: expect.any(Date),
        code: "TIMEOUT",
        message: "git took too long.",
        hint: "Retried by the worker.",
        retryable: true,
      },
    ]);
    // The attempt ended after the job started and before it finished (the database's clock).
    const at = done.attemptErrors[0]!.at.getTime();
    expect(at).toBeGreaterThanOrEqual(done.createdAt.getTime());
    expect(at).toBeLessThanOrEqual(done.finishedAt!.getTime());
    expect((await storedErrors(catalog().db, job.id)).error).toBeNull();
  });

  it("reads rows of the earlier { code, message } shape: hint null, retryable from the code, internal text replaced", async () => {
    const host = uniqueName("old");
    const db = catalog().db;
    const old = async (state: "failed" | "retry" | "completed", error: Record<string, string>) => {
      const job = (await enqueue(host))!;
      await db.job.update({
        where: { id: job.id },
        data: {
          state,
          attempts: 1,
          startedAt: new Date(),
          error,
          ...(state === "retry" ? {} : { finishedAt: new Date() }),
        },
      });
      return (await queue.get(db, job.id))!;
    };

    const leaked = await old("failed", {
      code: "INTERNAL",
      message:
        "\nInvalid `this.db.job.updateMany()` invocation in\n/srv/strata/server/jobs/queue.ts:271:39\n\n  268 …\nTransaction already closed",
    });
    expect(leaked.error).toEqual({ code: "INTERNAL", message: INTERNAL_JOB_MESSAGE, hint: null, retryable: true });
    expect(leaked.attemptErrors).toEqual([]);

    expect((await old("retry", { code: "TIMEOUT", message: "slow" })).error).toEqual({
      code: "TIMEOUT",
      message: "slow",
      hint: null,
      retryable: true,
    });
    expect((await old("failed", { code: "UNSAFE_TARGET", message: "The target is not empty." })).error).toEqual({
      code: "UNSAFE_TARGET",
      message: "The target is not empty.",
      hint: null,
      retryable: false,
    });
    // A code this server does not know: kept, retryable; its message kept unless it reads as internal.
    expect((await old("failed", { code: "SOMETHING_OLD", message: "It went wrong." })).error).toEqual({
      code: "SOMETHING_OLD",
      message: "It went wrong.",
      hint: null,
      retryable: true,
    });
    expect((await old("failed", { code: "SOMETHING_OLD", message: "at run (/srv/x/worker.js:3:9)" })).error).toEqual({
      code: "SOMETHING_OLD",
      message: INTERNAL_JOB_MESSAGE,
      hint: null,
      retryable: true,
    });
    // A completed job of the earlier release kept its first attempt's error: not any more.
    expect((await old("completed", { code: "TIMEOUT", message: "slow" })).error).toBeNull();
  });
});

describe("job error shapes", () => {
  const root = fileURLToPath(new URL("../../", import.meta.url));

  it("keeps a StrataError's message, without the paths of Strata's own files", () => {
    expect(
      jobErrorOf({
        code: "GIT_FAILED",
        message: `git failed: fatal: bad object (${root}server/git/run.ts:40)`,
        retryable: false,
      }),
    ).toEqual({
      code: "GIT_FAILED",
      message: "git failed: fatal: bad object (<strata>)",
      hint: null,
      retryable: false,
    });
    // A typed error that carries a Prisma report (a catalog outage while a capture published) keeps its own words.
    const report =
      "\nInvalid `prisma.blob.findMany()` invocation in\n/srv/strata/server/content/blobs.ts:40:3\n\n→ 40 await db.blob.findMany(\nCan't reach database server at `10.0.0.5:5432`";
    expect(
      jobErrorOf({
        code: "BLOB_STORE_FAILED",
        message: `The catalog could not be reached: ${report}`,
        retryable: true,
      }),
    ).toMatchObject({ code: "BLOB_STORE_FAILED", message: "The catalog could not be reached." });
    // A path of the checkout is the agent's own, and stays.
    expect(
      jobErrorOf({ code: "UNSAFE_TARGET", message: "/home/me/work is not empty.", retryable: false }).message,
    ).toBe("/home/me/work is not empty.");
  });

  it("never keeps internal text under INTERNAL, and turns an unknown code into INTERNAL", () => {
    expect(jobErrorOf({ code: "INTERNAL", message: "TypeError at f (/srv/a.js:1:2)", retryable: true }).message).toBe(
      INTERNAL_JOB_MESSAGE,
    );
    expect(jobErrorOf({ code: "NOPE" as "INTERNAL", message: "whatever", retryable: false })).toEqual({
      code: "INTERNAL",
      message: INTERNAL_JOB_MESSAGE,
      hint: null,
      retryable: false,
    });
    expect(readJobError(null)).toBeNull();
    expect(readJobError("text")).toBeNull();
  });

  it("keeps the latest attempts' causes only", () => {
    let history: unknown = null;
    const cause = { code: "TIMEOUT", message: "slow", hint: null, retryable: true };
    for (let attempt = 1; attempt <= ATTEMPT_ERRORS_KEPT + 5; attempt += 1) {
      history = withAttemptError(history as never, attempt, new Date(), cause);
    }
    const kept = history as { attempt: number }[];
    expect(kept).toHaveLength(ATTEMPT_ERRORS_KEPT);
    expect(kept[0]!.attempt).toBe(6);
    expect(kept.at(-1)!.attempt).toBe(ATTEMPT_ERRORS_KEPT + 5);
  });
});

/**
 * A catalog the test can take away and give back, for real. PostgreSQL: a private cluster stopped
 * and started. SQLite: the worker's connection closed and the catalog's directory moved away (an
 * open file would stay readable), then moved back.
 */
interface Outage {
  catalog: CatalogHandle;
  /** Words of the database's address that no job error may hold. */
  secrets: string[];
  begin(): Promise<void>;
  end(): Promise<void>;
  destroy(): Promise<void>;
}

async function outageOf(kind: DatabaseKind): Promise<Outage> {
  if (kind === "postgres") {
    const cluster = await startPrivatePostgres();
    await migrate(cluster.url);
    const catalog = openCatalog(cluster.url, { poolSize: 4, connectTimeoutMs: 1_000 });
    return {
      catalog,
      secrets: [`127.0.0.1:${cluster.port}`, String(cluster.port)],
      begin: () => cluster.stop(),
      end: () => cluster.start(),
      destroy: async () => {
        await catalog.close();
        await cluster.destroy();
      },
    };
  }
  const root = mkdtempSync(path.join(os.tmpdir(), "strata-job-outage-"));
  const dir = path.join(root, "catalog");
  const away = path.join(root, "moved-away");
  mkdirSync(dir);
  const url = `file:${path.join(dir, "catalog.db")}`;
  await migrate(url);
  const catalog = openCatalog(url);
  return {
    catalog,
    secrets: [root],
    begin: async () => {
      await catalog.db.$disconnect();
      renameSync(dir, away);
    },
    end: async () => renameSync(away, dir),
    destroy: async () => {
      await catalog.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

for (const kind of DATABASE_KINDS) {
  describe(`a job whose transaction a catalog outage interrupts [${kind}]`, () => {
    let outage: Outage;

    beforeAll(async () => {
      outage = await outageOf(kind);
    }, 120_000);

    afterAll(async () => {
      await outage?.destroy();
    });

    it("records UNAVAILABLE, with no internal text, and runs again once the catalog is back", async () => {
      const db = outage.catalog.db;
      const queue = new JobQueue(db);
      const agent = await makeAgent(db, "outage");
      const host = uniqueName("outage");
      const job = (await queue.enqueue(db, {
        kind: "restore",
        host,
        agentId: agent.scope.agentId,
        data: {},
        retry: { backoffMs: 50, backoffMaxMs: 100 },
      }))!;

      let inside!: () => void;
      const running = new Promise<void>((resolve) => (inside = resolve));
      let goOn!: () => void;
      const databaseGone = new Promise<void>((resolve) => (goOn = resolve));
      const events: WorkerEvent[] = [];
      const worker = runWorker(
        queue,
        host,
        async (claimed) => {
          if (claimed.attempt > 1) return { attempt: claimed.attempt };
          // A handler's own transaction (a restore reporting its rung), open when the catalog goes.
          return inTransaction(
            db,
            async (tx) => {
              await tx.job.count({ where: { host } });
              inside();
              await databaseGone;
              await tx.job.count({ where: { host } });
              return { unreachable: true };
            },
            { attempts: 1 },
          );
        },
        events,
      );

      await running;
      await outage.begin();
      goOn();
      // The attempt fails, and the worker keeps trying to record it while the catalog is gone.
      await until("the outage to be noticed", () =>
        events.some((e) => e.type === "error" && e.job?.id === job.id && isCatalogUnreachable(e.error)),
      );
      await sleep(500);
      await outage.end();
      await until("the job to complete", async () => (await queue.get(db, job.id))?.state === "completed");
      await worker.stop();

      const done = (await queue.get(db, job.id))!;
      expect(done).toMatchObject({ state: "completed", attempts: 2, error: null, result: { attempt: 2 } });
      expect(done.attemptErrors).toEqual([
        {
          attempt: 1,
          at: expect.any(Date),
          code: "UNAVAILABLE",
          message: "The catalog database was unreachable during the job.",
          hint: expect.any(String),
          retryable: true,
        },
      ]);
      const stored = await storedErrors(db, job.id);
      expectNoInternalText([done.attemptErrors, stored]);
      for (const secret of outage.secrets) expect(JSON.stringify([done, stored])).not.toContain(secret);
      expect(events.find((e) => e.type === "failed" && e.job.id === job.id)).toMatchObject({
        outcome: "retry",
        failure: { code: "UNAVAILABLE" },
      });
    }, 120_000);

    // The operator's case: a database that stops answering (not refusing) outlasts the handler's
    // transaction, whose next statement Prisma refuses as a closed, expired transaction. Only
    // PostgreSQL has a server process to pause; SQLite's outage is the one above.
    if (kind !== "postgres") return;
    it("records UNAVAILABLE when the database stopped answering until the handler's transaction expired", async () => {
      const db = outage.catalog.db;
      const queue = new JobQueue(db);
      const agent = await makeAgent(db, "hung");
      const host = uniqueName("hung");
      const job = (await queue.enqueue(db, {
        kind: "restore",
        host,
        agentId: agent.scope.agentId,
        data: {},
        retry: { maxAttempts: 1 },
      }))!;
      const events: WorkerEvent[] = [];
      const worker = runWorker(
        queue,
        host,
        () =>
          inTransaction(
            db,
            async (tx) => {
              const [{ pid }] = await tx.$queryRawUnsafe<[{ pid: number }]>("SELECT pg_backend_pid() AS pid");
              process.kill(pid, "SIGSTOP");
              setTimeout(() => process.kill(pid, "SIGCONT"), 1_500);
              await tx.job.count({ where: { host } });
              await tx.job.count({ where: { host } });
              return { unreachable: true };
            },
            { timeout: 500, attempts: 1 },
          ),
        events,
      );
      await until("the job to fail", async () => (await queue.get(db, job.id))?.state === "failed");
      await worker.stop();

      const failed = (await queue.get(db, job.id))!;
      expect(failed.error).toEqual({
        code: "UNAVAILABLE",
        message: "The catalog database was unreachable during the job.",
        hint: expect.any(String),
        retryable: true,
      });
      expectNoInternalText([failed.error, failed.attemptErrors, await storedErrors(db, job.id)]);
      const thrown = events.find((e) => e.type === "failed" && e.job.id === job.id);
      expect(thrown?.type === "failed" && String((thrown.error as Error).message)).toMatch(/expired transaction/);
    }, 60_000);
  });
}
