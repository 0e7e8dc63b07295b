import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { createGitRunner } from "../../git/runner.ts";
import { defaultCheckoutName, refComponent, snapshotRefName, snapshotWriter } from "./snapshot-ref.ts";
import { git, initRepository, removeTemporaryDirectories } from "../../testing/repos.ts";
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

  it("writes the commit git commit-tree would write, and moves the ref to it", async () => {
    const root = initRepository();
    const head = git(root, ["rev-parse", "HEAD"]).trim();
    const tree = git(root, ["rev-parse", "HEAD^{tree}"]).trim();
    const ref = snapshotRefName("ctx", "co");
    const writer = snapshotWriter(createGitRunner({ cwd: root }), ref);
    writer.prepare();
    const written = await writer.write({ tree, head, now: new Date(1_700_000_000_000) });
    writer.cancel();
    expect(written).toEqual({ name: ref, commit: git(root, ["rev-parse", ref]).trim() });
    const date = "1700000000 +0000";
    const expected = execFileSync("git", ["commit-tree", "--no-gpg-sign", "-p", head, tree], {
      cwd: root,
      input: `Strata worktree snapshot\n\nref: ${ref}\n`,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "Strata",
        GIT_AUTHOR_EMAIL: "strata@localhost",
        GIT_AUTHOR_DATE: date,
        GIT_COMMITTER_NAME: "Strata",
        GIT_COMMITTER_EMAIL: "strata@localhost",
        GIT_COMMITTER_DATE: date,
      },
    });
    expect(written.commit).toBe(expected.toString().trim());
  });

  it("writes no ref when a prepared snapshot is cancelled", async () => {
    const root = initRepository();
    const ref = snapshotRefName("ctx", "cancelled");
    const writer = snapshotWriter(createGitRunner({ cwd: root }), ref);
    writer.prepare();
    writer.cancel();
    expect(git(root, ["for-each-ref", "refs/strata/"])).toBe("");
    // The ref can still be written afterwards.
    const tree = git(root, ["rev-parse", "HEAD^{tree}"]).trim();
    const again = await snapshotWriter(createGitRunner({ cwd: root }), ref).write({
      tree,
      head: null,
      now: new Date(),
    });
    expect(git(root, ["rev-parse", ref]).trim()).toBe(again.commit);
  });
});
