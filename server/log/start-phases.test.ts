// What the ready lines report: each phase once, at the time it was first reached, in the order
// reached, after Node's own start.
import { describe, expect, it } from "vitest";
import { markStart, startPhases } from "./start-phases.ts";

describe("start phases", () => {
  it("reports each phase at its first mark, in ms since the process began, after Node's start", async () => {
    markStart("test-first");
    const first = startPhases()["test-first"];
    await new Promise((resolve) => setTimeout(resolve, 5));
    markStart("test-second");
    markStart("test-first");
    const phases = startPhases();

    expect(phases["test-first"]).toBe(first);
    expect(phases["test-second"]).toBeGreaterThanOrEqual(phases["test-first"]!);
    expect(phases.node).toBeGreaterThan(0);
    expect(phases["test-first"]).toBeGreaterThanOrEqual(phases.node!);
    const names = Object.keys(phases);
    expect(names.indexOf("test-second")).toBeGreaterThan(names.indexOf("test-first"));
  });
});
