// The outage classifier against the errors Prisma 6.19, its pg and better-sqlite3 adapters and pg
// really throw: a refused connection, a server shut down under a running query, an exhausted
// pool, an SQLite file whose directory is gone; and the errors that are not outages.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { parseIntoClientConfig } from "pg-connection-string";
import { describe, expect, it } from "vitest";
import { StrataError } from "../domain/errors.ts";
import { createAgent } from "../auth/agents.ts";
import { createEmptyDatabase, describeEachDatabase } from "../testing/databases.ts";
import { adminPostgresUrl } from "../testing/postgres.ts";
import { startPrivatePostgres } from "../testing/private-postgres.ts";
import { waitFor } from "../testing/worker-processes.ts";
import { openCatalog } from "./client.ts";
import type { Prisma } from "./generated/postgres/client.ts";
import { asCatalogUnavailable, catalogUnavailable, isDatabaseUnavailable } from "./errors.ts";
import { migrate } from "./migrate.ts";

/** What `work` threw (it must throw). */
async function thrown(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

describe("isDatabaseUnavailable: outages", () => {
  it("knows a PostgreSQL catalog nothing listens for: model calls, raw queries, transactions and pg itself", async () => {
    const closed = "postgresql://postgres@127.0.0.1:1/strata";
    const catalog = openCatalog(closed);
    const pool = new pg.Pool(parseIntoClientConfig(closed) as pg.PoolConfig);
    try {
      const errors = [
        await thrown(() => catalog.db.agentToken.findUnique({ where: { tokenHash: "x" } })),
        await thrown(() => catalog.db.$queryRawUnsafe("SELECT 1")),
        await thrown(() => catalog.db.$transaction((tx) => tx.agent.findMany())),
        await thrown(() => pool.query("SELECT 1")),
      ];
      expect(errors.map(isDatabaseUnavailable)).toEqual([true, true, true, true]);
    } finally {
      await catalog.close();
      await pool.end();
    }
  });

  it("gives up on a server that accepts the connection and never answers, and calls it an outage", async () => {
    // A listener that takes connections and says nothing: a PostgreSQL that hangs, or a host
    // in between that drops everything after the handshake.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    const catalog = openCatalog(`postgresql://postgres@127.0.0.1:${port}/strata`, { connectTimeoutMs: 300 });
    try {
      const error = await thrown(() => catalog.db.agent.findMany());
      expect(isDatabaseUnavailable(error)).toBe(true);
      expect(sockets.length).toBeGreaterThan(0);
    } finally {
      await catalog.close();
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it("knows a server shut down under running queries, then refusing new ones; the broken transaction's connection comes back", async () => {
    const cluster = await startPrivatePostgres();
    // One connection: a transaction the shutdown broke must not keep it after the server is back.
    const single = openCatalog(cluster.url, { poolSize: 1 });
    const catalog = openCatalog(cluster.url);
    try {
      await migrate(cluster.url);
      const running = [
        thrown(() => catalog.db.$queryRawUnsafe("SELECT pg_sleep(30)")),
        thrown(() => single.db.$transaction((tx) => tx.$queryRawUnsafe("SELECT pg_sleep(30)"), { timeout: 60_000 })),
      ];
      // Both are running before the shutdown terminates them (57P01).
      const admin = new pg.Client(parseIntoClientConfig(cluster.url) as pg.ClientConfig);
      await admin.connect();
      const sleeping = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'`;
      while ((await admin.query<{ n: number }>(sleeping)).rows[0]!.n < 2) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await admin.end();
      await cluster.stop();
      const afterwards = await thrown(() => catalog.db.agent.findMany());
      expect([...(await Promise.all(running)), afterwards].map(isDatabaseUnavailable)).toEqual([true, true, true]);

      await cluster.start();
      expect(await single.db.$transaction((tx) => tx.agent.count())).toBe(0);
      expect(await single.db.agent.count()).toBe(0);
    } finally {
      await single.close();
      await catalog.close();
      await cluster.destroy();
    }
  });

  it("outlives an idle connection the server ends when only the pool's own statements used it, and closes it all", async () => {
    const database = await createEmptyDatabase("postgres");
    const catalog = openCatalog(database.url);
    const admin = new pg.Client(parseIntoClientConfig(database.url) as pg.ClientConfig);
    await admin.connect();
    const alive = async (pid: number) =>
      (await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1", [pid]))
        .rows[0]!.n === 1;
    const gone = (pid: number) => waitFor(`backend ${pid} to end`, async () => !(await alive(pid)), 10_000);
    try {
      // The acquire's path: statements on the pool, Prisma never connected.
      const runner = catalog.dialect.statementRunner(catalog.db)!;
      const backend = async () =>
        (await runner.query<{ pid: number }>("probe", "SELECT pg_backend_pid() AS pid", []))[0]!.pid;
      const first = await backend();
      // A restart or an administrator ends the idle connection: no unhandled error, a new one next time.
      await admin.query("SELECT pg_terminate_backend($1)", [first]);
      await gone(first);
      // The pool hears of it on the connection's socket a moment after the backend is gone.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const second = await backend();
      expect(second).not.toBe(first);
      await catalog.close();
      await gone(second);
    } finally {
      await catalog.close().catch(() => undefined);
      await admin.end();
      await database.drop();
    }
  });

  it("knows pg's pool timing out for a connection while every one is taken", async () => {
    const pool = new pg.Pool({
      ...(parseIntoClientConfig(adminPostgresUrl()) as pg.PoolConfig),
      max: 1,
      connectionTimeoutMillis: 10_000,
    });
    // Opening the one connection may take longer than 100 ms on a loaded machine; only the
    // wait for a taken connection is what this test is about, so shorten it afterwards.
    const held = await pool.connect();
    pool.options.connectionTimeoutMillis = 100;
    try {
      expect(isDatabaseUnavailable(await thrown(() => pool.query("SELECT 1")))).toBe(true);
    } finally {
      held.release();
      await pool.end();
    }
  });

  it("knows an interactive transaction whose database stopped answering until the transaction expired", async () => {
    const cluster = await startPrivatePostgres();
    const catalog = openCatalog(cluster.url);
    try {
      await migrate(cluster.url);
      const error = await thrown(() =>
        catalog.db.$transaction(
          async (tx) => {
            const [{ pid }] = await tx.$queryRawUnsafe<[{ pid: number }]>("SELECT pg_backend_pid() AS pid");
            // The transaction's server process stops answering (a hung server, a host paused) and
            // comes back after the transaction's timeout: its next statement meets a closed transaction.
            process.kill(pid, "SIGSTOP");
            setTimeout(() => process.kill(pid, "SIGCONT"), 1_500);
            await tx.agent.count();
            await tx.agent.count();
          },
          { timeout: 500 },
        ),
      );
      expect((error as { code?: unknown }).code).toBe("P2028");
      expect(String((error as Error).message)).toMatch(/expired transaction/);
      expect(isDatabaseUnavailable(error)).toBe(true);
    } finally {
      await catalog.close();
      await cluster.destroy();
    }
  });

  it("knows Prisma's words for an interactive transaction that is gone, except a commit's", () => {
    const p2028 = (message: string) => Object.assign(new Error(message), { code: "P2028" });
    const gone = [
      "Invalid `this.db.job.updateMany()` invocation in\n/srv/strata/server/jobs/queue.ts:271:39\n\nTransaction already closed: A query cannot be executed on a transaction that was rolled back.",
      "Transaction API error: Transaction already closed: A commit cannot be executed on an expired transaction.",
      "Transaction API error: Transaction not found. Transaction ID is invalid, refers to an old closed transaction Prisma doesn't have information about anymore, or was obtained before disconnecting.",
      "Transaction API error: A query cannot be executed on an expired transaction. The timeout for this transaction was 20000 ms, however 20114 ms passed since the start of the transaction.",
    ];
    expect(gone.map((m) => isDatabaseUnavailable(p2028(m)))).toEqual([true, true, true, true]);
    // A statement sent after the transaction committed is a bug of its caller.
    const afterCommit = "Transaction already closed: A query cannot be executed on a committed transaction.";
    expect(isDatabaseUnavailable(p2028(afterCommit))).toBe(false);
  });

  it("knows an SQLite catalog whose directory is gone", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "strata-gone-"));
    const catalog = openCatalog(`file:${path.join(dir, "catalog.db")}`);
    rmSync(dir, { recursive: true, force: true });
    try {
      expect(isDatabaseUnavailable(await thrown(() => catalog.db.agent.findMany()))).toBe(true);
      expect(isDatabaseUnavailable(await thrown(() => catalog.db.$transaction((tx) => tx.agent.findMany())))).toBe(
        true,
      );
    } finally {
      await catalog.close();
    }
  });

  it("looks through wrappers (better-auth's APIError keeps the Prisma error as its cause)", () => {
    const wrapped = new Error("Failed to get session", { cause: Object.assign(new Error("x"), { code: "P1001" }) });
    expect(isDatabaseUnavailable(wrapped)).toBe(true);
  });
});

describeEachDatabase("isDatabaseUnavailable: not outages", (catalog) => {
  it("leaves constraint violations, missing records, typed errors and plain bugs alone", async () => {
    const name = `not-outage-${Math.random().toString(36).slice(2)}`;
    await createAgent(catalog().db, { name });
    const errors = [
      await thrown(() => catalog().db.agent.create({ data: { name } })),
      await thrown(() => catalog().db.agent.update({ where: { name: `${name}-none` }, data: { name: "x" } })),
      await thrown(() => catalog().db.$queryRawUnsafe("SELECT * FROM no_such_table")),
      new StrataError("NOT_FOUND", "No such thing."),
      new TypeError("Cannot read properties of undefined"),
    ];
    expect(errors.map(isDatabaseUnavailable)).toEqual([false, false, false, false, false]);
    expect(asCatalogUnavailable(errors[0])).toBeNull();
  });

  it("leaves a statement sent on a transaction that committed alone (the caller's bug)", async () => {
    let leaked: Prisma.TransactionClient | null = null;
    await catalog().db.$transaction(async (tx) => {
      leaked = tx;
      await tx.agent.count();
    });
    const error = await thrown(() => leaked!.agent.count());
    expect(String((error as Error).message)).toMatch(/committed transaction/);
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});

describeEachDatabase("isDatabaseUnavailable: a transaction past its timeout", (catalog) => {
  it("calls it unavailable: the same words as one the database stopped answering, and retrying is the answer", async () => {
    const error = await thrown(() =>
      catalog().db.$transaction(
        async (tx) => {
          await tx.agent.count();
          await new Promise((resolve) => setTimeout(resolve, 600));
          await tx.agent.count();
        },
        { timeout: 200 },
      ),
    );
    expect((error as { code?: unknown }).code).toBe("P2028");
    expect(isDatabaseUnavailable(error)).toBe(true);
  });
});

describe("catalogUnavailable", () => {
  it("is UNAVAILABLE, retryable, and says nothing of its cause", async () => {
    const catalog = openCatalog("postgresql://postgres@127.0.0.1:1/strata");
    const cause = await thrown(() => catalog.db.agent.findMany());
    await catalog.close();
    const error = asCatalogUnavailable(cause);
    expect(error?.toJSON()).toEqual({
      code: "UNAVAILABLE",
      message: "The catalog database is unavailable.",
      hint: "Retry in a few seconds.",
      retryable: true,
      data: null,
    });
    expect(error?.cause).toBe(cause);
    expect(catalogUnavailable().toJSON()).toEqual(error?.toJSON());
  });
});
