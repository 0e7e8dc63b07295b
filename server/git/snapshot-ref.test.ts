import { describe, expect, it } from "vitest";
import { defaultCheckoutName, refComponent, snapshotRefName } from "./snapshot-ref.ts";
import { git, initRepository, removeTemporaryDirectories } from "./test-repos.ts";
import { afterAll } from "vitest";

afterAll(removeTemporaryDirectories);

describe("snapshot ref names", () => {
  it.each([
    ["task-42", "task-42"],
    ["run_7", "run_7"],
    ["a/b", "a%2Fb"],
    ["..", "%2E%2E"],
    ["x.lock", "x%2Elock"],
    ["-rf", "%2Drf"],
    ["has space", "has%20space"],
    ["@{u}", "%40%7Bu%7D"],
    ["ü", "%C3%BC"],
    ["100%", "100%25"],
    ["", "%00"],
  ])("%j becomes the component %j", (text, component) => {
    expect(refComponent(text)).toBe(component);
  });

  it("always makes a ref git accepts, under refs/strata/snapshots", () => {
    const root = initRepository();
    for (const [context, checkout] of [
      ["ctx", "co"],
      ["../../heads/main", "x.lock"],
      ["-d", "@"],
      ["a b\tc", "~^:?*[\\"],
    ] as const) {
      const name = snapshotRefName(context, checkout);
      expect(name.startsWith("refs/strata/snapshots/")).toBe(true);
      expect(git(root, ["check-ref-format", name]).trim()).toBe("");
    }
  });

  it("names a checkout by its directory and a digest of its path", () => {
    expect(defaultCheckoutName("/home/me/src/app")).toMatch(/^app-[0-9a-f]{12}$/);
    expect(defaultCheckoutName("/a/app")).not.toBe(defaultCheckoutName("/b/app"));
  });
});
