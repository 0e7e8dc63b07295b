import { describe, expect, it } from "vitest";
import { chooseRestore, nextRungAfterFailure, type CandidateFacts, type LineageFacts } from "./restore-ladder.ts";

const lineage = (over: Partial<LineageFacts> = {}): LineageFacts => ({
  state: "active",
  workContextId: "wc-1",
  hasCheckpoints: true,
  ...over,
});
const checkpoint = (over: Partial<CandidateFacts> = {}): CandidateFacts => ({
  id: "cp-1",
  class: "checkpoint",
  state: "ready",
  workContextId: "wc-1",
  ...over,
});
const baseline = (over: Partial<CandidateFacts> = {}): CandidateFacts => ({
  id: "b-1",
  class: "baseline",
  state: "ready",
  workContextId: null,
  ...over,
});

describe("chooseRestore", () => {
  it("resumes the work context's own head first", () => {
    expect(chooseRestore({ lineage: lineage(), lineageHead: checkpoint(), baseline: baseline() })).toEqual({
      rung: "checkpoint",
      snapshotId: "cp-1",
      mustInspectExternalState: false,
    });
  });

  it("starts new work from the ready baseline", () => {
    expect(chooseRestore({ lineage: null, lineageHead: null, baseline: baseline() })).toEqual({
      rung: "baseline",
      snapshotId: "b-1",
      mustInspectExternalState: false,
    });
  });

  it("starts cold when there is neither", () => {
    expect(chooseRestore({ lineage: null, lineageHead: null, baseline: null }).rung).toBe("cold");
  });

  it("never resumes another work context's checkpoint", () => {
    const foreign = checkpoint({ id: "cp-other", workContextId: "wc-2" });
    const choice = chooseRestore({ lineage: lineage(), lineageHead: foreign, baseline: baseline() });
    expect(choice).toEqual({ rung: "baseline", snapshotId: "b-1", mustInspectExternalState: true });
  });

  it("never lets a checkpoint satisfy the baseline lookup, even a clean one", () => {
    const posing = checkpoint({ id: "cp-clean", workContextId: "wc-9" });
    expect(chooseRestore({ lineage: null, lineageHead: null, baseline: posing })).toEqual({
      rung: "cold",
      snapshotId: null,
      mustInspectExternalState: false,
    });
  });

  it("ignores the head of a retired lineage, and heads or baselines that are not ready", () => {
    expect(
      chooseRestore({ lineage: lineage({ state: "retired" }), lineageHead: checkpoint(), baseline: null }).rung,
    ).toBe("cold");
    expect(
      chooseRestore({ lineage: lineage(), lineageHead: checkpoint({ state: "superseded" }), baseline: null }).rung,
    ).toBe("cold");
    expect(chooseRestore({ lineage: null, lineageHead: null, baseline: baseline({ state: "superseded" }) }).rung).toBe(
      "cold",
    );
  });

  it("asks a resumed work context to inspect external state when it cannot resume its own state", () => {
    expect(chooseRestore({ lineage: lineage(), lineageHead: null, baseline: null }).mustInspectExternalState).toBe(
      true,
    );
    const fresh = lineage({ hasCheckpoints: false });
    expect(chooseRestore({ lineage: fresh, lineageHead: null, baseline: baseline() }).mustInspectExternalState).toBe(
      false,
    );
  });
});

describe("chooseRestore for a forked work context", () => {
  const forked = (over: Partial<LineageFacts> = {}) =>
    lineage({ workContextId: "wc-fork", hasCheckpoints: false, forkedFromId: "cp-1", ...over });

  it("restores the checkpoint it was forked from, on the checkpoint rung, also once superseded", () => {
    for (const state of ["ready", "superseded"]) {
      expect(
        chooseRestore({
          lineage: forked(),
          lineageHead: null,
          forkSource: checkpoint({ state }),
          baseline: baseline(),
        }),
      ).toEqual({ rung: "checkpoint", snapshotId: "cp-1", mustInspectExternalState: false });
    }
  });

  it("prefers its own head once it has one", () => {
    const own = checkpoint({ id: "cp-own", workContextId: "wc-fork" });
    const choice = chooseRestore({
      lineage: forked({ hasCheckpoints: true }),
      lineageHead: own,
      forkSource: checkpoint(),
      baseline: baseline(),
    });
    expect(choice.snapshotId).toBe("cp-own");
  });

  it("never takes another checkpoint than the recorded one, a retired one, or one for a retired or resumed fork", () => {
    const cases: [LineageFacts, CandidateFacts][] = [
      [forked(), checkpoint({ id: "cp-other" })],
      [forked(), checkpoint({ state: "retired" })],
      [forked(), baseline({ id: "cp-1" })],
      [forked({ state: "retired" }), checkpoint()],
      [forked({ hasCheckpoints: true }), checkpoint()],
      [lineage({ hasCheckpoints: false }), checkpoint()],
    ];
    for (const [facts, source] of cases) {
      const choice = chooseRestore({ lineage: facts, lineageHead: null, forkSource: source, baseline: baseline() });
      expect([facts, source, choice.rung]).toEqual([facts, source, "baseline"]);
    }
  });

  it("asks a fork that cannot have its checkpoint to inspect external state", () => {
    const choice = chooseRestore({ lineage: forked(), lineageHead: null, forkSource: null, baseline: baseline() });
    expect(choice).toEqual({ rung: "baseline", snapshotId: "b-1", mustInspectExternalState: true });
  });
});

describe("nextRungAfterFailure", () => {
  const base = { failedSnapshotId: "cp-1", lineage: lineage(), recordedOrigin: null, currentBaseline: null };

  it("falls from a checkpoint to the lineage's recorded baseline, even a superseded one", () => {
    const recorded = baseline({ id: "b-old", state: "superseded" });
    const choice = nextRungAfterFailure({
      ...base,
      failed: "checkpoint",
      recordedOrigin: recorded,
      currentBaseline: baseline(),
    });
    expect(choice).toEqual({ rung: "baseline", snapshotId: "b-old", mustInspectExternalState: true });
  });

  it("falls from a checkpoint to the current baseline when the recorded one is gone", () => {
    const gone = baseline({ id: "b-old", state: "deleting" });
    const choice = nextRungAfterFailure({
      ...base,
      failed: "checkpoint",
      recordedOrigin: gone,
      currentBaseline: baseline(),
    });
    expect(choice?.snapshotId).toBe("b-1");
  });

  it("does not treat a recorded checkpoint origin as a baseline", () => {
    const fork = checkpoint({ id: "cp-origin" });
    const choice = nextRungAfterFailure({ ...base, failed: "checkpoint", recordedOrigin: fork, currentBaseline: null });
    expect(choice).toEqual({ rung: "cold", snapshotId: null, mustInspectExternalState: true });
  });

  it("falls from a held original to the partial capture that names it, and from that to a baseline", () => {
    const partial = checkpoint({ id: "cp-partial" });
    const afterOriginal = nextRungAfterFailure({
      ...base,
      failed: "checkpoint",
      failedSnapshotId: "cp-original",
      partialHead: partial,
      currentBaseline: baseline(),
    });
    expect(afterOriginal).toEqual({ rung: "checkpoint", snapshotId: "cp-partial", mustInspectExternalState: false });
    const afterPartial = nextRungAfterFailure({
      ...base,
      failed: "checkpoint",
      failedSnapshotId: "cp-partial",
      partialHead: partial,
      currentBaseline: baseline(),
    });
    expect(afterPartial).toEqual({ rung: "baseline", snapshotId: "b-1", mustInspectExternalState: true });
  });

  it("never falls to a partial capture of a retired lineage or of another work context", () => {
    const retired = nextRungAfterFailure({
      ...base,
      failed: "checkpoint",
      failedSnapshotId: "cp-original",
      lineage: lineage({ state: "retired" }),
      partialHead: checkpoint({ id: "cp-partial" }),
    });
    expect(retired?.rung).toBe("cold");
    const foreign = nextRungAfterFailure({
      ...base,
      failed: "checkpoint",
      failedSnapshotId: "cp-original",
      partialHead: checkpoint({ id: "cp-partial", workContextId: "someone-else" }),
    });
    expect(foreign?.rung).toBe("cold");
  });

  it("falls from a fork's failed checkpoint to the current baseline (its origin is no baseline)", () => {
    const choice = nextRungAfterFailure({
      ...base,
      failed: "checkpoint",
      lineage: lineage({ workContextId: "wc-fork", hasCheckpoints: false, forkedFromId: "cp-1" }),
      recordedOrigin: checkpoint(),
      currentBaseline: baseline(),
    });
    expect(choice).toEqual({ rung: "baseline", snapshotId: "b-1", mustInspectExternalState: true });
  });

  it("falls from a baseline to cold, and from cold to nothing", () => {
    const afterBaseline = nextRungAfterFailure({
      ...base,
      failed: "baseline",
      failedSnapshotId: "b-1",
      lineage: lineage({ hasCheckpoints: false }),
      currentBaseline: baseline(),
    });
    expect(afterBaseline).toEqual({ rung: "cold", snapshotId: null, mustInspectExternalState: false });
    expect(nextRungAfterFailure({ ...base, failed: "cold", failedSnapshotId: null })).toBeNull();
  });
});
