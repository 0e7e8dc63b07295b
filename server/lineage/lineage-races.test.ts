// Races with real concurrent transactions: on PostgreSQL each call holds its own connection
// and transaction at the same time; on SQLite the same calls queue on the write lock.
import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { retireSnapshot } from "./retirement.ts";
import { acquireFor, lineageKeyOf, makeAgent, manifestOf, oid, publishClean, scenario } from "../testing/lineage.ts";

function tally(results: PromiseSettledResult<unknown>[]) {
  const won = results.filter((r) => r.status === "fulfilled");
  const codes = results.flatMap((r) =>
    r.status === "rejected" ? [isStrataError(r.reason) ? r.reason.code : String(r.reason)] : [],
  );
  return { won, codes };
}

describeEachDatabase("lineage races", (catalog) => {
  it("16 publishers racing from the same observed head: one wins, 15 get BASELINE_STALE", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const head = await publishClean(db, agent, s, "main@0", null);

    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => publishClean(db, agent, s, `main@racer-${i}`, head.snapshot.id)),
    );
    const { won, codes } = tally(results);
    expect(won).toHaveLength(1);
    expect(codes).toEqual(Array.from({ length: 15 }, () => "BASELINE_STALE"));

    const ready = await db.snapshot.findMany({
      where: { repository: { identity: s.repository.identity }, class: "baseline", state: "ready" },
    });
    expect(ready).toHaveLength(1);
    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof publishClean>>>).value;
    expect(ready[0]?.id).toBe(winner.snapshot.id);
    expect(winner.supersededId).toBe(head.snapshot.id);
    // Losers changed nothing: two baselines in all, the old head superseded exactly once.
    const all = await db.snapshot.findMany({
      where: { repository: { identity: s.repository.identity }, class: "baseline" },
      select: { id: true, state: true },
    });
    expect(all).toHaveLength(2);
    expect(all.find((b) => b.id === head.snapshot.id)?.state).toBe("superseded");
  });

  it("16 first publishers of a key (observed none): one wins, 15 get BASELINE_STALE", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    // The repository exists already, so the race is decided by the one-ready-baseline index.
    await acquireFor(db, agent, s);
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => publishClean(db, agent, s, `first-${i}`, null)),
    );
    const { won, codes } = tally(results);
    expect(won).toHaveLength(1);
    expect(codes).toEqual(Array.from({ length: 15 }, () => "BASELINE_STALE"));
    const ready = await db.snapshot.count({
      where: { repository: { identity: s.repository.identity }, class: "baseline", state: "ready" },
    });
    expect(ready).toBe(1);
  });

  it("8 checkpoint appends with the same observed head: exactly one advances the lineage", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const plan = await acquireFor(db, agent, s);
    const key = lineageKeyOf(s, plan.workContextId);
    const first = await appendCheckpoint(db, {
      agent,
      key,
      observedHeadId: null,
      manifest: manifestOf({ head: oid("w0"), branch: "task" }),
    });

    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        appendCheckpoint(db, {
          agent,
          key,
          observedHeadId: first.snapshot.id,
          manifest: manifestOf({ head: oid(`w1-${i}`), branch: "task" }),
        }),
      ),
    );
    const { won, codes } = tally(results);
    expect(won).toHaveLength(1);
    expect(codes).toEqual(Array.from({ length: 7 }, () => "FENCE_LOST"));

    const chain = await db.snapshot.findMany({
      where: { lineageId: first.lineageId },
      select: { id: true, state: true, sequence: true, predecessorId: true },
    });
    const ready = chain.filter((c) => c.state === "ready");
    expect(ready).toHaveLength(1);
    expect(ready[0]).toMatchObject({ sequence: 2, predecessorId: first.snapshot.id });
    expect(chain.find((c) => c.id === first.snapshot.id)?.state).toBe("superseded");
    // Every loser's capture went to reclamation.
    expect(chain.filter((c) => c.state === "deleting")).toHaveLength(7);
  });

  it("8 first appends to a new lineage (observed none): exactly one starts the chain", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    await acquireFor(db, agent, s);
    const key = lineageKeyOf(s, `wc-${oid("race").slice(0, 8)}`);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        appendCheckpoint(db, {
          agent,
          key,
          observedHeadId: null,
          manifest: manifestOf({ head: oid(`start-${i}`), branch: "task" }),
        }),
      ),
    );
    const { won, codes } = tally(results);
    expect(won).toHaveLength(1);
    expect(codes).toEqual(Array.from({ length: 7 }, () => "FENCE_LOST"));
    expect(await db.lineage.count({ where: { workContextId: key.workContextId } })).toBe(1);
  });

  it("8 concurrent first acquires of one client-named work context share one lineage", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const baseline = await publishClean(db, agent, s, "base", null);
    const workContextId = `wc-${oid("shared").slice(0, 8)}`;
    const plans = await Promise.all(Array.from({ length: 8 }, () => acquireFor(db, agent, s, workContextId)));

    const lineages = await db.lineage.findMany({ where: { workContextId }, select: { id: true } });
    expect(lineages).toHaveLength(1);
    expect(new Set(plans.map((p) => p.lineage.id))).toEqual(new Set([lineages[0]!.id]));
    expect(plans.map((p) => p.snapshot?.id)).toEqual(Array.from({ length: 8 }, () => baseline.snapshot.id));
    // Eight restores, each with its own active pin on the baseline.
    const restores = await db.restore.findMany({ where: { workContextId }, select: { pinId: true } });
    expect(restores).toHaveLength(8);
    const pins = await db.pin.findMany({ where: { snapshotId: baseline.snapshot.id, released: false } });
    expect(new Set(pins.map((p) => p.pinId))).toEqual(new Set(restores.map((r) => r.pinId)));
  });

  it("16 acquires racing the retirement of their baseline: none pins it after retirement", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const baseline = await publishClean(db, agent, s, "base", null);
    const acquires = Array.from({ length: 16 }, () => acquireFor(db, agent, s));
    const retired = retireSnapshot(db, { snapshotId: baseline.snapshot.id, actor: { type: "system" } });
    const [plans, retirement] = await Promise.all([Promise.all(acquires), retired]);

    // Each plan either pinned the baseline before retirement took its row (and retirement saw
    // that pin) or came after and started cold: the pins retirement counted are exactly the
    // plans that name the baseline.
    const onBaseline = plans.filter((p) => p.snapshot?.id === baseline.snapshot.id);
    expect(retirement.state).toBe("retired");
    expect(onBaseline.length).toBe(retirement.activePins);
    expect(plans.filter((p) => p.rung === "cold")).toHaveLength(16 - onBaseline.length);
    expect(await db.pin.count({ where: { snapshotId: baseline.snapshot.id } })).toBe(onBaseline.length);
    expect(plans.every((p) => (p.rung === "cold") === (p.pinId === null))).toBe(true);
  });
});
