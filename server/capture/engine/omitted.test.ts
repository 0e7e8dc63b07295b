import { describe, expect, it } from "vitest";
import { planIndexChanges, type OmissionRules } from "./omitted.ts";
import type { StatusEntry } from "../../git/status.ts";

const H = "1".repeat(40);
const I = "2".repeat(40);
const Z = "0".repeat(40);

function rules(over: Partial<OmissionRules> = {}): OmissionRules {
  return {
    includeUntracked: true,
    maxFileBytes: 1000,
    maxSnapshotBytes: 10_000,
    snapshotIgnored: new Set(),
    nestedRepositories: new Set(),
    sizes: new Map(),
    ...over,
  };
}

function changed(path: string, x: string, y: string, inHead = true): StatusEntry {
  return {
    kind: "changed",
    x,
    y,
    submodule: "N...",
    modeHead: inHead ? "100644" : "000000",
    modeIndex: "100644",
    modeWorktree: "100644",
    oidHead: inHead ? H : Z,
    oidIndex: I,
    path,
  };
}

describe("what a capture leaves out", () => {
  it("takes changed and untracked files from the working tree", () => {
    const plan = planIndexChanges(
      [changed("a.txt", ".", "M"), changed("gone.txt", ".", "D"), { kind: "untracked", path: "new.txt" }],
      rules(),
    );
    expect(plan).toEqual({ update: ["a.txt", "gone.txt", "new.txt"], reset: [], resetToHeadLookup: [], omitted: [] });
  });

  it("lists ignored paths and nested repositories without touching the index", () => {
    const plan = planIndexChanges(
      [
        { kind: "ignored", path: "node_modules/" },
        { kind: "untracked", path: "tools/" },
      ],
      rules({ nestedRepositories: new Set(["tools/"]) }),
    );
    expect(plan.update).toEqual([]);
    expect(plan.omitted).toEqual([
      { path: "node_modules/", reason: "ignored" },
      { path: "tools/", reason: "nested-repository" },
    ]);
  });

  it("keeps HEAD content for a tracked denied file, putting the index back when it differs", () => {
    const plan = planIndexChanges([changed(".env", "M", "M"), changed("config/.env.prod", ".", "M")], rules());
    expect(plan.update).toEqual([]);
    expect(plan.reset).toEqual([{ mode: "100644", oid: H, path: ".env" }]);
    expect(plan.omitted.map((o) => [o.path, o.reason, o.detail])).toEqual([
      [".env", "denied", "matches .env*; HEAD content kept"],
      ["config/.env.prod", "denied", "matches .env*; HEAD content kept"],
    ]);
  });

  it("removes a denied file staged but never committed", () => {
    const plan = planIndexChanges([changed("id_rsa", "A", ".", false)], rules());
    expect(plan.reset).toEqual([{ mode: "0", oid: Z, path: "id_rsa" }]);
    expect(plan.omitted[0]).toMatchObject({ path: "id_rsa", reason: "denied" });
  });

  it("applies snapshot-ignore, untracked capture and maxFileBytes in that order", () => {
    const plan = planIndexChanges(
      [
        { kind: "untracked", path: "out/a.tmp" },
        { kind: "untracked", path: "notes.md" },
        changed("big.bin", ".", "M"),
        changed("ok.txt", ".", "M"),
      ],
      rules({
        includeUntracked: false,
        snapshotIgnored: new Set(["out/a.tmp"]),
        sizes: new Map([
          ["big.bin", 5000],
          ["ok.txt", 10],
        ]),
      }),
    );
    expect(plan.update).toEqual(["ok.txt"]);
    expect(plan.omitted.map((o) => [o.path, o.reason])).toEqual([
      ["out/a.tmp", "snapshot-ignore"],
      ["notes.md", "untracked"],
      ["big.bin", "too-large"],
    ]);
  });

  it("spends maxSnapshotBytes in path order, counting content captured earlier", () => {
    const plan = planIndexChanges(
      [
        changed("a.txt", "M", "."),
        { kind: "untracked", path: "b.txt" },
        changed("c.txt", "M", "M"),
        { kind: "untracked", path: "d.txt" },
      ],
      rules({
        maxSnapshotBytes: 250,
        sizes: new Map([
          ["a.txt", 100],
          ["b.txt", 100],
          ["c.txt", 100],
          ["d.txt", 10],
        ]),
      }),
    );
    expect(plan.update).toEqual(["b.txt", "d.txt"]);
    expect(plan.reset).toEqual([{ mode: "100644", oid: H, path: "c.txt" }]);
    expect(plan.omitted.map((o) => [o.path, o.reason])).toEqual([["c.txt", "snapshot-too-large"]]);
  });

  it("records a submodule's new commit and sends unmerged denied paths back to HEAD", () => {
    const sub: StatusEntry = {
      kind: "changed",
      x: ".",
      y: "M",
      submodule: "SC..",
      modeHead: "160000",
      modeIndex: "160000",
      modeWorktree: "160000",
      oidHead: H,
      oidIndex: H,
      path: "lib",
    };
    const plan = planIndexChanges(
      [
        sub,
        { kind: "unmerged", x: "U", y: "U", submodule: "N...", path: "conflict.txt" },
        { kind: "unmerged", x: "A", y: "A", submodule: "N...", path: "x.pem" },
      ],
      rules(),
    );
    expect(plan.update).toEqual(["lib", "conflict.txt"]);
    expect(plan.resetToHeadLookup).toEqual(["x.pem"]);
  });
});
