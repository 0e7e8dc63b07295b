// Provider capabilities as STRATA_PROVIDERS configures them: a label the variable does not name
// keeps the defaults (snapshots, no idle persistence), a live hold lasts 14 days on an
// idle-persistent provider and one hour otherwise, and a bad value stops the configuration with
// a ConfigError that names the variable and every problem.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../config/config.ts";
import { HANDOFF_HOLD_MS, IDLE_PERSISTENT_HOLD_MS, liveHoldDurationMs, providerCapabilities } from "./providers.ts";

const HOUR = 60 * 60 * 1000;

function providersOf(value: string) {
  return loadConfig({ STRATA_PROVIDERS: value }).providers;
}

describe("provider capabilities", () => {
  it("reads STRATA_PROVIDERS: named capabilities per label, the defaults for the rest", () => {
    const providers = providersOf(" fly: idle-persistent, no-snapshots ; modal:snapshots;");
    expect(providers).toEqual({ fly: { idlePersistentHolds: true, snapshots: false }, modal: { snapshots: true } });
    expect(providerCapabilities(providers, "fly")).toEqual({ snapshots: false, idlePersistentHolds: true });
    expect(providerCapabilities(providers, "modal")).toEqual({ snapshots: true, idlePersistentHolds: false });
    expect(providerCapabilities(providers, "local")).toEqual({ snapshots: true, idlePersistentHolds: false });
    // Unset (or empty) means every label has the defaults.
    expect(loadConfig({}).providers).toEqual({});
    expect(loadConfig({ STRATA_PROVIDERS: "" }).providers).toEqual({});
    expect(providerCapabilities({}, "toString")).toEqual({ snapshots: true, idlePersistentHolds: false });
  });

  it("holds a live workspace 14 days on an idle-persistent provider, one hour otherwise", () => {
    const providers = providersOf("fly:idle-persistent;modal:no-idle-persistent");
    expect(liveHoldDurationMs(providerCapabilities(providers, "fly"))).toBe(14 * 24 * HOUR);
    expect(liveHoldDurationMs(providerCapabilities(providers, "modal"))).toBe(HOUR);
    expect(liveHoldDurationMs(providerCapabilities(providers, "local"))).toBe(HOUR);
    expect([IDLE_PERSISTENT_HOLD_MS, HANDOFF_HOLD_MS]).toEqual([14 * 24 * HOUR, HOUR]);
  });

  it.each([
    ["fly", 1],
    ["fly:idle", 1],
    ["fly:", 1],
    ["fly:snapshots,no-snapshots", 1],
    ["fly:idle-persistent;fly:snapshots", 1],
    ["f ly:snapshots", 1],
    ["fly:sleepy;modal:fast", 2],
  ])("refuses STRATA_PROVIDERS=%j with a ConfigError naming the variable (%i problem(s))", (value, count) => {
    let error: unknown;
    try {
      loadConfig({ STRATA_PROVIDERS: value });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(count);
    expect(problems.every((p) => p.variable === "STRATA_PROVIDERS")).toBe(true);
    expect((error as ConfigError).code).toBe("CONFIG_INVALID");
  });
});
