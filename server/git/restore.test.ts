import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { memoryBlobSource } from "./restore-blobs.ts";
import { restoreWorktree, type RestoreOptions } from "./restore.ts";
import { CHECKOUT_FIXTURES, FAKE_SECRET } from "./test-checkouts.ts";
import { git, removeTemporaryDirectories, temporaryDirectory } from "./test-repos.ts";

afterAll(removeTemporaryDirectories);

const SNAPSHOT_ID = "0d3c1a52-8d0e-4a4e-9a56-3f1e8b2c9d71";

/** A "second machine": its own directory for worktrees and its own state directory. */
function secondMachine() {
  const dir = temporaryDirectory("strata-machine-");
  return { into: join(dir, "worktrees", "restored"), stateDir: join(dir, "state") };
}

function options(blobs: Map<string, Buffer>, stateDir: string, extra: Partial<RestoreOptions> = {}): RestoreOptions {
  return { blobs: memoryBlobSource(blobs), stateDir, ...extra };
}

/** Output of a git call that may fail (then ""). */
function gitMaybe(dir: string, args: string[]): string {
  const run = spawnSync("git", args, { cwd: dir, encoding: "utf8" });
  return run.status === 0 ? run.stdout.trim() : "";
}

/** What the restored worktree holds, read with plain git. */
function inspect(dir: string) {
  git(dir, ["update-index", "-q", "--really-refresh"]);
  return {
    tree: git(dir, ["write-tree"]).trim(),
    dirtyFiles: git(dir, ["diff-files", "--name-only"]).trim(),
    strays: git(dir, ["ls-files", "--others", "--exclude-standard"]).trim(),
    head: gitMaybe(dir, ["rev-parse", "--verify", "--quiet", "HEAD"]) || null,
    branch: gitMaybe(dir, ["symbolic-ref", "--quiet", "--short", "HEAD"]) || null,
    remotes: gitMaybe(dir, ["config", "--get-regexp", "^remote\\..*\\.url$"]),
  };
}

function expectRecorded(dir: string, manifest: CaptureManifest) {
  const seen = inspect(dir);
  expect(seen.tree).toBe(manifest.tree);
  expect(seen.dirtyFiles).toBe("");
  expect(seen.strays).toBe("");
  expect(seen.head).toBe(manifest.head);
  expect(seen.branch).toBe(manifest.branch);
  expect(seen.remotes).toBe(manifest.remotes.map((r) => `remote.${r.name}.url ${r.url}`).join("\n"));
  // Its own object store: nothing borrowed from the first machine.
  expect(existsSync(join(dir, ".git", "objects", "info", "alternates"))).toBe(false);
}

describe("restoring every capture fixture on a second machine", () => {
  for (const fixture of CHECKOUT_FIXTURES) {
    it(`${fixture.name}: the same tree id`, async () => {
      const captured = await fixture.make();
      const machine = secondMachine();
      const report = await restoreWorktree(
        { snapshotId: SNAPSHOT_ID, manifest: captured.manifest },
        machine.into,
        options(captured.blobs, machine.stateDir),
      );
      expect(report.result.status, JSON.stringify(report.result.missing)).toBe("restored");
      expect(report.path).toBe(machine.into);
      expect(report.result.holds).toMatchObject({
        stage: "exact",
        tree: captured.manifest.tree,
        basis: "recorded-head",
      });
      expectRecorded(machine.into, captured.manifest);
      // No staging directory or crash record is left.
      expect(readdirSync(join(machine.into, ".."))).toEqual(["restored"]);
      expect(readdirSync(join(machine.stateDir, "restores"))).toEqual([]);
      const secret = readdirSync(machine.into, { recursive: true, encoding: "utf8" })
        .filter((p) => !p.startsWith(".git"))
        .some((p) => {
          try {
            return readFileSync(join(machine.into, p)).includes(FAKE_SECRET);
          } catch {
            return false;
          }
        });
      expect(secret).toBe(false);
    });
  }
});
