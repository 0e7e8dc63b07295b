import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { inTransaction } from "./client.ts";
import { acquireFor, makeAgent, publishClean, scenario } from "../testing/lineage.ts";
import { createTestCatalog, describeEachDatabase } from "../testing/databases.ts";

describeEachDatabase("catalog client", (catalog) => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  beforeEach(() => {
    warnings.length = 0;
    process.on("warning", onWarning);
  });
  afterEach(() => {
    process.off("warning", onWarning);
  });

  it("loads a select's relations inside a transaction without relying on pg's own query queue", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const baseline = await publishClean(db, agent, s, "main@1", null);
    const plan = await acquireFor(db, agent, s);
    // Prisma loads the relations concurrently on the transaction's one connection (pg warns from
    // the third query waiting at once).
    const row = await inTransaction(db, (tx) =>
      tx.restore.findFirst({
        where: { id: plan.restoreId },
        select: {
          snapshot: { select: { id: true } },
          nextRestore: { select: { id: true } },
          lineage: { select: { workContextId: true } },
          agent: { select: { id: true } },
        },
      }),
    );
    expect(row).toEqual({
      snapshot: { id: baseline.snapshot.id },
      nextRestore: null,
      lineage: { workContextId: plan.workContextId },
      agent: { id: agent.agentId },
    });
    // Let a warning emitted during the transaction reach the listener.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.filter((w) => /already executing/.test(w))).toEqual([]);
  });
});

describe("PostgreSQL catalog connections", () => {
  it("are ended by the server when they sit idle in a transaction, so a paused process cannot keep its row locks", async () => {
    const catalog = await createTestCatalog("postgres");
    try {
      const [row] = await catalog.db.$queryRawUnsafe<{ idle_in_transaction_session_timeout: string }[]>(
        "SHOW idle_in_transaction_session_timeout",
      );
      expect(row?.idle_in_transaction_session_timeout).toBe("30s");
    } finally {
      await catalog.drop();
    }
  });
});
