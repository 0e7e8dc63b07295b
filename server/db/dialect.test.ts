// The dialect's contract on both databases: what it renders runs, the clock is the database's,
// locks hold, and each provider hands out its own implementation of what differs beyond SQL.
import { randomBytes, randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { inTransaction, openCatalog } from "./client.ts";
import { dialectOf } from "./dialect.ts";
import { getHealth } from "./health.ts";
import { acquireFor, makeAgent, publishClean, scenario } from "../testing/lineage.ts";
import { describeEachDatabase } from "../testing/databases.ts";

describeEachDatabase("dialect", (catalog, kind) => {
  it("is chosen once by openCatalog and reached from the client and from its transactions", async () => {
    const { db, dialect } = catalog();
    expect(dialect.kind).toBe(kind);
    expect(dialect.prismaProvider).toBe(kind === "postgres" ? "postgresql" : "sqlite");
    expect(dialectOf(db)).toBe(dialect);
    await inTransaction(db, async (tx) => {
      expect(dialectOf(tx)).toBe(dialect);
      // A nested call reuses the caller's transaction and its dialect.
      await inTransaction(tx, async (inner) => expect(dialectOf(inner)).toBe(dialect));
    });
    // A transaction Prisma opened without inTransaction carries none: a clear error, not a guess.
    await db.$transaction(async (tx) => {
      expect(() => dialectOf(tx)).toThrow(/no dialect/);
    });
    expect((await getHealth(db)).database).toBe(kind);
  });

  it("renders placeholders, lists, lock clauses and index hints that run", async () => {
    const { db, dialect } = catalog();
    expect(dialect.p(2)).toBe(kind === "postgres" ? "$2" : "?");
    expect(dialect.list(3, 2)).toBe(kind === "postgres" ? "($2, $3, $4)" : "(?, ?, ?)");
    expect(dialect.lock("update skip locked")).toBe(kind === "postgres" ? " FOR UPDATE SKIP LOCKED" : "");
    expect(dialect.indexedBy("layers_parent_uuid_idx")).toBe(
      kind === "postgres" ? "" : " INDEXED BY layers_parent_uuid_idx",
    );
    const { scope: agent } = await makeAgent(db);
    const baseline = await publishClean(db, agent, scenario(), "main@1", null);
    const id = baseline.snapshot.id;
    await inTransaction(db, async (tx) => {
      for (const mode of ["update", "share", "update skip locked"] as const) {
        const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
          `SELECT id FROM snapshots WHERE id IN ${dialect.list(2)}${dialect.lock(mode)}`,
          id,
          "missing",
        );
        expect(rows.map((r) => r.id)).toEqual([id]);
      }
      const layers = await tx.$queryRawUnsafe<unknown[]>(
        `SELECT uuid FROM layers${dialect.indexedBy("layers_parent_uuid_idx")} WHERE parent_uuid = ${dialect.p(1)}`,
        "none",
      );
      expect(layers).toEqual([]);
    });
  });

  it("reads the database's clock, fixed for a transaction on PostgreSQL", async () => {
    const { db, dialect } = catalog();
    const now = await dialect.now(db);
    expect(Math.abs(now.getTime() - Date.now())).toBeLessThan(5_000);
    await inTransaction(db, async (tx) => {
      const first = await dialect.transactionNow(tx);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const second = await dialect.transactionNow(tx);
      const clock = await dialect.now(tx);
      if (kind === "postgres") expect(second).toEqual(first);
      else expect(second.getTime()).toBeGreaterThan(first.getTime());
      expect(clock.getTime()).toBeGreaterThan(first.getTime());
    });
  });

  it("locks a row until the transaction ends (PostgreSQL), and reads it on both", async () => {
    const { db, dialect } = catalog();
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    await publishClean(db, agent, s, "main@1", null);
    const plan = await acquireFor(db, agent, s);
    await inTransaction(db, async (tx) => {
      const row = await dialect.lockRow<{ id: string }>(tx, "restores", plan.restoreId, "id");
      expect(row).toEqual({ id: plan.restoreId });
      expect(await dialect.lockRow(tx, "lineages", randomUUID(), "state")).toBeNull();
      if (kind === "postgres") {
        // Another connection cannot take the lock while this transaction holds it.
        const other = openCatalog(catalog().url, { poolSize: 1 });
        try {
          await expect(
            other.db.$queryRawUnsafe(`SELECT id FROM restores WHERE id = $1 FOR UPDATE NOWAIT`, plan.restoreId),
          ).rejects.toThrow(/could not obtain lock|55P03/);
        } finally {
          await other.close();
        }
      }
    });
  });

  it("reads blob chunks as text and decodes them to the stored bytes", async () => {
    const { db, dialect } = catalog();
    const bytes = Buffer.from([0, 1, 2, 250, 255, 10, 13]);
    const blob = await db.blob.create({ data: { digest: "d".repeat(64), state: "uploading", storedAt: new Date() } });
    await db.blobChunk.create({ data: { blobId: blob.id, seq: 0, data: bytes } });
    const [row] = await db.$queryRawUnsafe<{ text: string }[]>(dialect.chunkText.select, blob.id, 0);
    expect(dialect.chunkText.decode(row!.text)).toEqual(bytes);
    await db.blob.delete({ where: { id: blob.id } });
  });

  it("writes and reads blob chunks on the driver for a client and on the transaction inside one", async () => {
    const { db, dialect } = catalog();
    const bytes = randomBytes(300 * 1024);
    bytes[0] = 0;
    const blob = await db.blob.create({ data: { digest: "e".repeat(64), state: "uploading", storedAt: new Date() } });
    // A Uint8Array view into a larger buffer: only its own bytes are stored.
    const view = new Uint8Array(bytes.buffer, bytes.byteOffset + 7, 1000);
    await dialect.blobChunks.insert(db, blob.id, 0, bytes);
    await dialect.blobChunks.insert(db, blob.id, 1, view);
    expect(await dialect.blobChunks.read(db, blob.id, 0)).toEqual(bytes);
    expect(await dialect.blobChunks.read(db, blob.id, 1)).toEqual(Buffer.from(view));
    expect(await dialect.blobChunks.read(db, blob.id, 2)).toBeNull();
    // What the client wrote the model API sees byte for byte.
    const stored = await db.blobChunk.findUnique({ where: { blobId_seq: { blobId: blob.id, seq: 0 } } });
    expect(Buffer.from(stored!.data)).toEqual(bytes);

    // Inside a transaction both go with it: a rollback leaves nothing.
    await expect(
      inTransaction(db, async (tx) => {
        await dialect.blobChunks.insert(tx, blob.id, 2, view);
        expect(await dialect.blobChunks.read(tx, blob.id, 2)).toEqual(Buffer.from(view));
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await dialect.blobChunks.read(db, blob.id, 2)).toBeNull();

    // A client write issued while a transaction is open lands once it has ended, never inside it.
    let releaseTransaction!: () => void;
    const holding = new Promise<void>((resolve) => (releaseTransaction = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const transaction = inTransaction(db, async (tx) => {
      await tx.lease.create({
        data: { name: `chunk-order-${blob.id}`, holder: "t", acquiredAt: new Date(), expiresAt: new Date() },
      });
      entered();
      await holding;
      throw new Error("rolled back");
    }).catch((error: Error) => error.message);
    await inside;
    const write = dialect.blobChunks.insert(db, blob.id, 3, view);
    releaseTransaction();
    expect(await transaction).toBe("rolled back");
    await write;
    expect(await dialect.blobChunks.read(db, blob.id, 3)).toEqual(Buffer.from(view));
    await db.blob.delete({ where: { id: blob.id } });
  });

  it("lists the catalog's tables", async () => {
    const { db, dialect } = catalog();
    expect(await dialect.tableNames(db)).toEqual(expect.arrayContaining(["snapshots", "layers", "jobs", "restores"]));
  });

  it("runs set-based statements on the pool for a client and on the transaction inside one (PostgreSQL only)", async () => {
    const { db, dialect } = catalog();
    expect(dialect.statementRunner(db)?.on ?? null).toBe(kind === "postgres" ? "pool" : null);
    const insert = "INSERT INTO leases (name, holder, acquired_at, expires_at) VALUES ($1, 'probe', now(), now())";
    const sawRunner = await inTransaction(db, async (tx) => dialect.statementRunner(tx)?.on ?? null);
    expect(sawRunner).toBe(kind === "postgres" ? "transaction" : null);
    if (kind !== "postgres") return;
    // A statement on a transaction's runner is the transaction's: it goes with a rollback...
    await expect(
      inTransaction(db, async (tx) => {
        await dialect.statementRunner(tx)!.query("probe", insert, ["runner-rolled-back"]);
        expect(await tx.lease.count({ where: { name: "runner-rolled-back" } })).toBe(1);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await db.lease.count({ where: { name: "runner-rolled-back" } })).toBe(0);
    // ...and stays with a commit.
    await inTransaction(db, (tx) => dialect.statementRunner(tx)!.query("probe", insert, ["runner-committed"]));
    expect(await db.lease.count({ where: { name: "runner-committed" } })).toBe(1);
  });
});
