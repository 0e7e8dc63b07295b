import { describe, expect, it } from "vitest";
import { DEFAULT_SWEEP_SETTINGS, isStaleHead, retentionCutoff } from "./retention.ts";

const DAY = 24 * 60 * 60 * 1000;
const now = new Date("2027-01-31T00:00:00Z");
const ago = (days: number) => new Date(now.getTime() - days * DAY);

describe("isStaleHead", () => {
  it("is stale only when neither the capture nor the last restore is within the window", () => {
    expect(isStaleHead({ readyAt: ago(15), lastRestoredAt: null }, now, DEFAULT_SWEEP_SETTINGS)).toBe(true);
    expect(isStaleHead({ readyAt: ago(13), lastRestoredAt: null }, now, DEFAULT_SWEEP_SETTINGS)).toBe(false);
    expect(isStaleHead({ readyAt: ago(30), lastRestoredAt: ago(2) }, now, DEFAULT_SWEEP_SETTINGS)).toBe(false);
    expect(isStaleHead({ readyAt: ago(30), lastRestoredAt: ago(20) }, now, DEFAULT_SWEEP_SETTINGS)).toBe(true);
  });

  it("follows the configured windows", () => {
    const settings = { ...DEFAULT_SWEEP_SETTINGS, staleAfterMs: DAY };
    expect(isStaleHead({ readyAt: ago(2), lastRestoredAt: null }, now, settings)).toBe(true);
    expect(retentionCutoff(now, DEFAULT_SWEEP_SETTINGS)).toEqual(ago(7));
  });
});
