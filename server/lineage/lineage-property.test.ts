// A property test over random interleavings of publish, append, acquire, report and retire.
// A small model predicts every outcome; after every step the database must hold at most one
// ready head per key (and exactly the model's), and every acquire must have obeyed the ladder.
import fc from "fast-check";
import { beforeAll, expect, it } from "vitest";
import type { Db } from "../db/client.ts";
import { describeEachAcquirePath, type Acquire } from "../testing/acquire-paths.ts";
import { isStrataError } from "../domain/errors.ts";
import type { AgentScope } from "../domain/scope.ts";
import type { RestorePlan } from "../domain/views.ts";
import { publishBaseline } from "./baselines.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { retireLineage } from "./lineages.ts";
import {
  cleanEvidence,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  scenario,
  uniqueName,
  type Scenario,
} from "../testing/lineage.ts";
import { reportRestore } from "../restore/report-restore.ts";

const REFS = ["main", "release"] as const;
const CONTEXTS = 2;

type Observed = "current" | "previous" | "none";
type Command =
  | { t: "publish"; ref: number; commit: number; observed: Observed }
  | { t: "append"; wc: number; observed: Observed }
  | { t: "acquire"; wc: number | "new"; ref: number }
  | { t: "report"; pick: number; outcome: "restored" | "degraded" | "failed" }
  | { t: "retire"; wc: number; reason: "completed" | "declined" };

// Mostly honest observers, so heads advance; some stale or blind ones, so fences and CAS bite.
const observedArb = fc.oneof(
  { arbitrary: fc.constant<Observed>("current"), weight: 3 },
  { arbitrary: fc.constantFrom<Observed>("previous", "none"), weight: 2 },
);
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({
      t: fc.constant("publish" as const),
      ref: fc.nat(1),
      commit: fc.nat(3),
      observed: observedArb,
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({ t: fc.constant("append" as const), wc: fc.nat(CONTEXTS - 1), observed: observedArb }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("acquire" as const),
      wc: fc.oneof(
        { arbitrary: fc.nat(CONTEXTS - 1), weight: 4 },
        { arbitrary: fc.constant("new" as const), weight: 1 },
      ),
      ref: fc.nat(1),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("report" as const),
      pick: fc.nat(),
      outcome: fc.constantFrom("restored" as const, "degraded" as const, "failed" as const),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("retire" as const),
      wc: fc.nat(CONTEXTS - 1),
      reason: fc.constantFrom("completed" as const, "declined" as const),
    }),
    weight: 1,
  },
);

interface ModelBaseline {
  head: { id: string; commit: string } | null;
  history: string[];
}
interface ModelLineage {
  id: string | null;
  state: "active" | "retired";
  head: string | null;
  history: string[];
  hasCheckpoints: boolean;
  origin: string | null;
}
interface Pending {
  restoreId: string;
  wc: string;
  ref: number;
  rung: RestorePlan["rung"];
  snapshotId: string | null;
}

class Model {
  baselines = REFS.map((): ModelBaseline => ({ head: null, history: [] }));
  lineages = new Map<string, ModelLineage>();
  pending: Pending[] = [];

  lineage(wc: string): ModelLineage {
    let l = this.lineages.get(wc);
    if (!l) {
      l = { id: null, state: "active", head: null, history: [], hasCheckpoints: false, origin: null };
      this.lineages.set(wc, l);
    }
    return l;
  }

  /** The ladder's first rung for (wc, ref), as the seed defines it. */
  expectAcquire(wc: string, ref: number): { rung: RestorePlan["rung"]; snapshotId: string | null } {
    const l = this.lineages.get(wc);
    if (l && l.state === "active" && l.head) return { rung: "checkpoint", snapshotId: l.head };
    const b = this.baselines[ref]?.head;
    if (b) return { rung: "baseline", snapshotId: b.id };
    return { rung: "cold", snapshotId: null };
  }

  /** The next rung after `p` failed. Every baseline here is ready or superseded, so still restorable. */
  expectNext(p: Pending): { rung: RestorePlan["rung"]; snapshotId: string | null } | null {
    if (p.rung === "cold") return null;
    if (p.rung === "checkpoint") {
      const origin = this.lineages.get(p.wc)?.origin ?? null;
      if (origin && origin !== p.snapshotId) return { rung: "baseline", snapshotId: origin };
      const b = this.baselines[p.ref]?.head;
      if (b && b.id !== p.snapshotId) return { rung: "baseline", snapshotId: b.id };
    }
    return { rung: "cold", snapshotId: null };
  }
}

function pickObserved(observed: Observed, head: string | null, history: string[]): string | null {
  if (observed === "current") return head;
  if (observed === "previous") return history.at(-1) ?? null;
  return null;
}

async function codeOf(call: Promise<unknown>): Promise<string | null> {
  try {
    await call;
    return null;
  } catch (error) {
    if (isStrataError(error)) return error.code;
    throw error;
  }
}

async function checkHeads(db: Db, s: Scenario, model: Model): Promise<void> {
  const repo = await db.repository.findUnique({ where: { identity: s.repository.identity } });
  if (!repo) return;
  const ready = await db.snapshot.findMany({
    where: { repositoryId: repo.id, state: "ready" },
    select: { id: true, class: true, canonicalRef: true, workContextId: true },
  });
  for (const [i, ref] of REFS.entries()) {
    const heads = ready.filter((r) => r.class === "baseline" && r.canonicalRef === `refs/heads/${ref}`);
    expect(heads.length).toBeLessThanOrEqual(1);
    expect(heads[0]?.id ?? null).toBe(model.baselines[i]?.head?.id ?? null);
  }
  const byContext = new Map<string, string[]>();
  for (const r of ready.filter((x) => x.class === "checkpoint")) {
    byContext.set(r.workContextId ?? "", [...(byContext.get(r.workContextId ?? "") ?? []), r.id]);
  }
  for (const ids of byContext.values()) expect(ids.length).toBeLessThanOrEqual(1);
  for (const [wc, l] of model.lineages) expect(byContext.get(wc)?.[0] ?? null).toBe(l.head);
}

function checkPlan(plan: RestorePlan, wc: string, expected: { rung: string; snapshotId: string | null }): void {
  expect({ rung: plan.rung, snapshotId: plan.snapshot?.id ?? null }).toEqual(expected);
  // Structure, whatever the model says: the rung's class, and only this context's checkpoints.
  if (plan.rung === "cold") expect(plan.snapshot).toBeNull();
  else expect(plan.snapshot?.class).toBe(plan.rung);
  if (plan.rung === "checkpoint") expect(plan.snapshot?.workContextId).toBe(wc);
  expect(plan.workContextId).toBe(wc);
}

async function run(db: Db, agent: AgentScope, commands: Command[], acquire: Acquire): Promise<void> {
  const s = scenario("prop");
  const model = new Model();
  const contexts = Array.from({ length: CONTEXTS }, () => uniqueName("wc"));
  let step = 0;

  // Every run starts with a baseline on each ref, so lineages usually begin from one.
  const prefix: Command[] = REFS.map((_, ref) => ({ t: "publish", ref, commit: 0, observed: "current" }));
  for (const cmd of [...prefix, ...commands]) {
    step += 1;
    if (cmd.t === "publish") {
      const ref = REFS[cmd.ref] ?? "main";
      const b = model.baselines[cmd.ref]!;
      const commitLabel = `${ref}-${cmd.commit}`;
      const commit = oid(commitLabel);
      const observedHeadId = pickObserved(cmd.observed, b.head?.id ?? null, b.history);
      const call = publishBaseline(db, {
        agent,
        key: { repository: s.repository, backendKind: s.backendKind, baseImage: s.baseImage, canonicalRef: ref },
        commit,
        manifest: manifestOf({ head: commit, branch: ref }),
        evidence: cleanEvidence(commit, { remoteTrackingRef: `refs/remotes/origin/${ref}`, branch: ref }),
        observedHeadId,
      });
      if (b.head?.commit === commitLabel) {
        expect((await call).outcome).toBe("unchanged");
      } else if ((b.head?.id ?? null) === observedHeadId) {
        const result = await call;
        expect(result.outcome).toBe("published");
        if (b.head) b.history.push(b.head.id);
        b.head = { id: result.snapshot.id, commit: commitLabel };
      } else {
        expect(await codeOf(call)).toBe("BASELINE_STALE");
      }
    } else if (cmd.t === "append") {
      const wc = contexts[cmd.wc]!;
      const l = model.lineage(wc);
      const observedHeadId = pickObserved(cmd.observed, l.head, l.history);
      const call = appendCheckpoint(db, {
        agent,
        key: lineageKeyOf(s, wc),
        observedHeadId,
        manifest: manifestOf({ head: oid(`${wc}-${step}`), branch: `task-${cmd.wc}` }),
      });
      if (l.state === "retired") {
        expect(await codeOf(call)).toBe("SNAPSHOT_RETIRED");
      } else if (observedHeadId === l.head) {
        const result = await call;
        l.id = result.lineageId;
        if (l.head) l.history.push(l.head);
        l.head = result.snapshot.id;
        l.hasCheckpoints = true;
      } else {
        expect(await codeOf(call)).toBe("FENCE_LOST");
        l.id ??= (await db.lineage.findFirst({ where: { workContextId: wc }, select: { id: true } }))?.id ?? null;
      }
    } else if (cmd.t === "acquire") {
      const named = cmd.wc === "new" ? undefined : contexts[cmd.wc];
      const expected = named ? model.expectAcquire(named, cmd.ref) : model.expectAcquire("", cmd.ref);
      const plan = await acquire(db, {
        agent,
        repository: s.repository,
        backendKind: s.backendKind,
        baseImage: s.baseImage,
        canonicalRef: REFS[cmd.ref] ?? "main",
        workContextId: named,
        workspace: `/w/${step}`,
        host: "prop",
      });
      const wc = plan.workContextId;
      checkPlan(plan, wc, expected);
      const l = model.lineage(wc);
      if (l.id === null) {
        l.id = plan.lineage.id;
        l.origin = plan.snapshot?.id ?? null;
      }
      expect(plan.lineage.id).toBe(l.id);
      model.pending.push({
        restoreId: plan.restoreId,
        wc,
        ref: cmd.ref,
        rung: plan.rung,
        snapshotId: plan.snapshot?.id ?? null,
      });
    } else if (cmd.t === "report") {
      if (model.pending.length === 0) continue;
      const [p] = model.pending.splice(cmd.pick % model.pending.length, 1);
      if (!p) continue;
      const result =
        cmd.outcome === "failed"
          ? await reportRestore(db, { agent, restoreId: p.restoreId, outcome: "failed", error: { code: "X" } })
          : cmd.outcome === "degraded"
            ? await reportRestore(db, { agent, restoreId: p.restoreId, outcome: "degraded", missing: ["bundle"] })
            : await reportRestore(db, { agent, restoreId: p.restoreId, outcome: "restored" });
      expect(result.restore.outcome).toBe(cmd.outcome);
      if (cmd.outcome !== "failed") {
        expect(result.next).toBeNull();
      } else {
        const expected = model.expectNext(p);
        if (!expected) {
          expect(result.next).toBeNull();
        } else {
          const next = result.next!;
          checkPlan(next, p.wc, expected);
          expect(next.previousRestoreId).toBe(p.restoreId);
          const l = model.lineage(p.wc);
          if (!l.hasCheckpoints && l.origin === p.snapshotId) l.origin = expected.snapshotId;
          model.pending.push({ ...p, restoreId: next.restoreId, rung: next.rung, snapshotId: expected.snapshotId });
        }
      }
    } else {
      const l = model.lineages.get(contexts[cmd.wc]!);
      if (!l?.id) continue;
      const result = await retireLineage(db, { lineageId: l.id, reason: cmd.reason, actor: { kind: "agent", agent } });
      expect(result.alreadyRetired).toBe(l.state === "retired");
      expect(result.retiredSnapshotIds).toEqual(l.state === "active" && l.head ? [l.head] : []);
      if (l.head) l.history.push(l.head);
      l.head = null;
      l.state = "retired";
    }
    await checkHeads(db, s, model);
  }
}

describeEachAcquirePath("lineage property", (catalog, acquire) => {
  let agent: AgentScope;
  beforeAll(async () => {
    agent = (await makeAgent(catalog().db, "prop")).scope;
  });

  it("keeps one ready head per key and obeys the ladder under random interleavings", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(commandArb, { minLength: 10, maxLength: 30, size: "max" }), (commands) =>
        run(catalog().db, agent, commands, acquire),
      ),
      {
        numRuns: 30,
        // One interleaving always runs: a lineage begins from a baseline that is then superseded,
        // and its checkpoint fails to restore (the ladder must fall to the recorded baseline).
        examples: [
          [
            [
              { t: "acquire", wc: 0, ref: 0 },
              { t: "report", pick: 0, outcome: "restored" },
              { t: "publish", ref: 0, commit: 1, observed: "current" },
              { t: "append", wc: 0, observed: "current" },
              { t: "acquire", wc: 0, ref: 0 },
              { t: "report", pick: 0, outcome: "failed" },
              { t: "report", pick: 0, outcome: "failed" },
              { t: "report", pick: 0, outcome: "failed" },
            ],
          ],
        ],
      },
    );
  }, 240_000);
});
