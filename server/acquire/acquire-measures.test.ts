// What acquire reports for /metrics about its database work, on both databases: on PostgreSQL
// each set-based statement is measured once, with the number of acquires it carried (concurrent
// acquires share one), its outcome and round trip; SQLite's acquire runs in a Prisma transaction
// and reports no statement.
import { afterEach, beforeAll, expect, it } from "vitest";
import { inTransaction } from "../db/client.ts";
import { setMeasureSink, type Measure } from "../log/measures.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, publishClean, scenario, type TestAgent } from "../testing/lineage.ts";
import { acquireWorkspace } from "./acquire-workspace.ts";

type StatementMeasure = Extract<Measure, { type: "statement" }>;

describeEachDatabase("acquire's statement measures", (catalog, kind) => {
  let agent: TestAgent;
  const s = scenario();
  const measured: StatementMeasure[] = [];

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "measured");
    // A ready baseline on the key, so every acquire below is decided at its first statement.
    await publishClean(catalog().db, agent.scope, s, "main@1", null);
  });
  afterEach(() => {
    setMeasureSink(null);
    measured.length = 0;
  });

  const listen = () =>
    setMeasureSink((m) => {
      if (m.type === "statement") measured.push(m);
    });
  const request = (workspace: string) => ({
    agent: agent.scope,
    repository: s.repository,
    backendKind: s.backendKind,
    baseImage: s.baseImage,
    canonicalRef: "refs/heads/main",
    workspace,
    host: "worker-1",
  });

  it("measures each statement with the acquires it carried", async () => {
    listen();
    const plans = await Promise.all(
      Array.from({ length: 12 }, (_, i) => acquireWorkspace(catalog().db, request(`/w/measured-${i}`))),
    );
    expect(plans.every((plan) => plan.rung === "baseline")).toBe(true);
    if (kind === "sqlite") {
      expect(measured).toEqual([]);
      return;
    }
    expect(measured.every((m) => m.statement === "acquire" && m.outcome === "ok" && m.seconds > 0)).toBe(true);
    // Every acquire travelled in exactly one statement, and concurrent ones shared.
    expect(measured.reduce((sum, m) => sum + m.requests, 0)).toBe(12);
    expect(Math.max(...measured.map((m) => m.requests))).toBeGreaterThan(1);
    expect(measured.length).toBeLessThan(12);
  });

  it("measures the statement inside a caller's transaction as one acquire", async () => {
    listen();
    const plan = await inTransaction(catalog().db, (tx) => acquireWorkspace(tx, request("/w/measured-tx")));
    expect(plan.rung).toBe("baseline");
    expect(measured.map((m) => [m.statement, m.outcome, m.requests])).toEqual(
      kind === "sqlite" ? [] : [["acquire", "ok", 1]],
    );
  });
});
