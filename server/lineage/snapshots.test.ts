import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { retireSnapshot } from "./retirement.ts";
import { getSnapshot } from "./snapshots.ts";
import { makeAgent, oid, publishClean, scenario } from "../testing/lineage.ts";

describeEachDatabase("getSnapshot", (catalog) => {
  it("returns the agent's own snapshot with its manifest and evidence, and hides others'", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const { scope: other } = await makeAgent(db);
    const s = scenario();
    const b0 = await publishClean(db, agent, s, "main@1", null);
    const b1 = await publishClean(db, agent, s, "main@2", b0.snapshot.id);

    const old = await getSnapshot(db, { agent, snapshotId: b0.snapshot.id });
    expect(old).toMatchObject({
      id: b0.snapshot.id,
      state: "superseded",
      canonicalCommit: oid("main@1"),
      repository: { identity: s.repository.identity },
      validation: { branch: "main", fetched: true },
      manifest: { head: oid("main@1") },
    });
    expect(old.supersededAt).not.toBeNull();
    const hidden = await getSnapshot(db, { agent: other, snapshotId: b1.snapshot.id }).catch((e: unknown) => e);
    expect(isStrataError(hidden, "NOT_FOUND")).toBe(true);
  });
});

describeEachDatabase("getSnapshot after retirement", (catalog) => {
  it("hides a retired snapshot like snapshot.list does, unless asked for it", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const b0 = await publishClean(db, agent, scenario(), "main@1", null);
    await retireSnapshot(db, {
      snapshotId: b0.snapshot.id,
      agentId: agent.agentId,
      actor: { type: "agent", id: agent.agentId },
      reason: "no longer wanted",
    });

    const hidden = await getSnapshot(db, { agent, snapshotId: b0.snapshot.id }).catch((e: unknown) => e);
    expect(isStrataError(hidden, "NOT_FOUND")).toBe(true);
    const shown = await getSnapshot(db, { agent, snapshotId: b0.snapshot.id, includeRetired: true });
    expect(shown).toMatchObject({ id: b0.snapshot.id, state: "retired" });
  });
});
