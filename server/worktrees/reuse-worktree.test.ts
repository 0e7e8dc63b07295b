// Reuse of idle pooled worktrees with real git: a worktree restored from one snapshot and left
// idle with dependencies in node_modules is taken by another task and reset to its snapshot
// (node_modules byte-identical, the tree verified, the files the same as a fresh restore's);
// one with an untracked file or an ignored .env is neither reused nor pruned; eviction past
// maxIdlePerRepository removes only clean ones; a reset killed between its mark and its
// verification (a real process, SIGKILL) leaves the worktree marked: never reused, pruned.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { memoryBlobSource } from "../restore/engine/restore-blobs.ts";
import { restoreWorktree } from "../restore/engine/restore.ts";
import { captureInto } from "../testing/checkouts.ts";
import {
  addOrigin,
  commitAll,
  git,
  imageOf,
  initRepository,
  remove,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";
import type { LeaseTimings } from "./lease.ts";
import { listPool } from "./list-pool.ts";
import { openWorktreePool, type RecordedSnapshot, type WorktreePool } from "./pool.ts";
import { prunePool } from "./prune-pool.ts";
import { evictIdleWorktrees, isReusable, resetHeldWorktree } from "./reuse-worktree.ts";
import { recordWorktreeSnapshot, releaseWorktree, takeWorktree, type HeldWorktree } from "./take-worktree.ts";
import { checkWorktree } from "./verify-worktree.ts";
import { isMarked } from "./worktree-cleanliness.ts";

afterAll(removeTemporaryDirectories);

// Windows wide enough that a busy machine never lets a refreshed lease go stale.
const FAST: Partial<LeaseTimings> = { refreshMs: 100, staleMs: 1_000, graceMs: 1_000, unverifiedKeepMs: 3_000 };
const APP = { identity: "github.com/acme/app", name: "app" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Past a lease's stale time and the grace after it. */
const FREE_AFTER = (FAST.staleMs ?? 0) + (FAST.graceMs ?? 0) + 100;

const holds: HeldWorktree[] = [];
afterEach(() => {
  for (const held of holds.splice(0)) held.lease.stop();
});

interface Snapshot {
  snapshotId: string;
  manifest: CaptureManifest;
}

/** Two snapshots of one checkout: s1 (dirty edits), then s2 (a pushed commit and other edits). */
async function twoSnapshots() {
  const source = initRepository({
    "a.txt": "a\n",
    "b.txt": "b\n",
    "lib/c.txt": "c\n",
    "lib/d.txt": "d\n",
    ".gitignore": "node_modules/\n.env\n",
    ".fixture": `${randomUUID()}\n`,
  });
  addOrigin(source);
  const blobs = new Map<string, Buffer>();
  write(source, "a.txt", "a, edited for s1\n");
  write(source, "new.txt", "new in s1\n");
  const s1: Snapshot = { snapshotId: randomUUID(), manifest: await captureInto(source, blobs) };
  write(source, "b.txt", "b, committed for s2\n");
  commitAll(source, "for s2");
  git(source, ["push", "--quiet", "origin", "main"]);
  write(source, "lib/c.txt", "c, edited for s2\n");
  remove(source, "new.txt");
  remove(source, "lib/d.txt");
  const s2: Snapshot = { snapshotId: randomUUID(), manifest: await captureInto(source, blobs) };
  return { s1, s2, blobs: memoryBlobSource(blobs) };
}

function recordedOf(s: Snapshot): RecordedSnapshot {
  return { id: s.snapshotId, head: s.manifest.head, tree: s.manifest.tree };
}

/** `aheadMs`: how far this pool's time is moved forward (leases age without waiting). */
async function openPool(dir: string, host = "host-a", aheadMs?: () => number): Promise<WorktreePool> {
  return openWorktreePool({ dir, host, timings: FAST, aheadMs });
}

async function take(...args: Parameters<typeof takeWorktree>): Promise<HeldWorktree> {
  const held = await takeWorktree(...args);
  holds.push(held);
  return held;
}

/** A new pooled worktree restored from `s`, recorded, with dependencies installed, released idle. */
async function idleWorktree(pool: WorktreePool, s: Snapshot, blobs: ReturnType<typeof memoryBlobSource>) {
  const held = await take(pool, APP, { owner: `task-${randomUUID()}`, fresh: true });
  const report = await restoreWorktree(s, held.path, { blobs, stateDir: join(pool.dir, "..", "state") });
  expect(report.result.status).toBe("restored");
  expect(await recordWorktreeSnapshot(held, { snapshot: recordedOf(s), env: s.manifest.envHash })).toBe("changed");
  write(held.path, "node_modules/pkg/index.js", "module.exports = 42;\n");
  write(held.path, "node_modules/.bin/tool", "#!/bin/sh\n", 0o755);
  expect(await releaseWorktree(held)).toBe("released");
  return held;
}

/** Every file under a directory: content digest and mode. */
function filesUnder(root: string, base = "", out = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(join(root, base), { withFileTypes: true })) {
    const rel = base ? `${base}/${entry.name}` : entry.name;
    const full = join(root, rel);
    if (entry.isDirectory()) filesUnder(root, rel, out);
    else out.set(rel, `${statSync(full).mode} ${createHash("sha256").update(readFileSync(full)).digest("hex")}`);
  }
  return out;
}

/** What `git status` and the files (not .git, not node_modules) of a checkout say. */
function contentOf(path: string) {
  const { files } = imageOf(path);
  for (const key of [...files.keys()]) if (key.startsWith("node_modules/")) files.delete(key);
  return { status: git(path, ["status", "--porcelain=v2", "--branch"]), files };
}

describe("reuse of idle clean worktrees", () => {
  it("resets an idle clean worktree to another snapshot, keeping node_modules byte-identical, verified like a fresh restore", async () => {
    const { s1, s2, blobs } = await twoSnapshots();
    const machine = temporaryDirectory("strata-machine-");
    const pool = await openPool(join(machine, "worktrees"));
    const idle = await idleWorktree(pool, s1, blobs);
    const modules = join(idle.path, "node_modules", "pkg", "index.js");
    const before = { files: filesUnder(join(idle.path, "node_modules")), ino: statSync(modules).ino };

    const held = await take(pool, APP, { owner: "task-2", reuse: isReusable });
    expect({ name: held.name, origin: held.origin, previous: held.previous }).toEqual({
      name: idle.name,
      origin: "reused",
      previous: recordedOf(s1),
    });
    const report = await resetHeldWorktree(held, s2, held.previous!, { blobs });
    if (report.status !== "reset") throw report.cause;
    expect(report.result).toMatchObject({ status: "restored", holds: { stage: "exact", tree: s2.manifest.tree } });
    expect(report.changedPaths).toBeGreaterThanOrEqual(4);

    expect(filesUnder(join(held.path, "node_modules"))).toEqual(before.files);
    expect(statSync(modules).ino).toBe(before.ino);
    expect(await isMarked(held.path)).toBe(false);
    const verified = await checkWorktree(s2, held.path);
    expect(verified).toMatchObject({ matches: true, tree: s2.manifest.tree, drift: { total: 0 } });

    // The same files, index and HEAD as a fresh restore of the same snapshot.
    const fresh = join(machine, "fresh");
    await restoreWorktree(s2, fresh, { blobs, stateDir: join(machine, "state") });
    expect(contentOf(held.path)).toEqual(contentOf(fresh));
    expect(git(held.path, ["config", "strata.restoredFrom"]).trim()).toBe(s2.snapshotId);
  });

  it("never reuses nor prunes a worktree with an untracked file or an ignored .env; reuses and prunes it once clean", async () => {
    const { s1, blobs } = await twoSnapshots();
    const dir = join(temporaryDirectory("strata-machine-"), "worktrees");
    const pool = await openPool(dir);
    const idle = await idleWorktree(pool, s1, blobs);
    const other = await openPool(dir, "host-b");

    write(idle.path, "notes.txt", "not recorded anywhere\n");
    expect((await take(pool, APP, { owner: "task-3", reuse: isReusable })).name).not.toBe(idle.name);
    const keptUntracked = (await prunePool(other)).kept.find((k) => k.name === idle.name);
    expect(keptUntracked).toMatchObject({ reason: "dirty", detail: expect.stringContaining("notes.txt") });

    remove(idle.path, "notes.txt");
    const status = () => git(idle.path, ["status", "--porcelain", "--untracked-files=all"]);
    const clean = status();
    write(idle.path, ".env", "TOKEN=not-a-real-secret\n");
    // git status does not show it: only the secret rule keeps this worktree.
    expect(status()).toBe(clean);
    expect((await take(pool, APP, { owner: "task-4", reuse: isReusable })).name).not.toBe(idle.name);
    const keptSecret = (await prunePool(other)).kept.find((k) => k.name === idle.name);
    expect(keptSecret).toMatchObject({ reason: "dirty", detail: expect.stringContaining(".env") });
    expect(existsSync(join(idle.path, ".env"))).toBe(true);

    remove(idle.path, ".env");
    const removed = (await prunePool(other)).removed.map((w) => w.name);
    expect(removed).toContain(idle.name);
    expect(existsSync(idle.path)).toBe(false);
  });

  it("keeps at most maxIdlePerRepository idle worktrees, removing the oldest clean ones, never a dirty one", async () => {
    const { s1, blobs } = await twoSnapshots();
    const pool = await openPool(join(temporaryDirectory("strata-machine-"), "worktrees"));
    const idle: HeldWorktree[] = [];
    for (let i = 0; i < 6; i++) {
      idle.push(await idleWorktree(pool, s1, blobs));
      await sleep(20);
    }
    // The oldest one holds work nobody recorded.
    write(idle[0]!.path, "a.txt", "edited after the restore\n");
    const removed = await evictIdleWorktrees(pool, APP, 4);
    expect(removed).toEqual([idle[1]!.name, idle[2]!.name]);
    const left = (await listPool(pool)).worktrees.map((w) => w.name);
    expect(left).toEqual([idle[0]!, ...idle.slice(3)].map((w) => w.name));
    expect(existsSync(join(idle[0]!.path, "a.txt"))).toBe(true);
    expect(await evictIdleWorktrees(pool, APP, 4)).toEqual([]);
  });

  it.each(["write", "verify"] as const)(
    "marks a worktree whose reset was killed before its %s: never reused, removed by prune",
    async (stopAt) => {
      const { s1, s2, blobs: source } = await twoSnapshots();
      const machine = temporaryDirectory("strata-machine-");
      const dir = join(machine, "worktrees");
      const pool = await openPool(dir);
      const idle = await idleWorktree(pool, s1, source);

      const blobs: Record<string, string> = {};
      for (const digest of [...s2.manifest.patches.map((p) => p.digest)]) {
        const chunks: Buffer[] = [];
        for await (const chunk of await source.open(digest)) chunks.push(Buffer.from(chunk));
        blobs[digest] = Buffer.concat(chunks).toString("base64");
      }
      const input = join(machine, "reset-input.json");
      writeFileSync(input, JSON.stringify({ ...s2, blobs }));
      const child = spawn(
        process.execPath,
        [
          "--import",
          "tsx",
          fileURLToPath(new URL("../testing/reset-process.ts", import.meta.url)),
          JSON.stringify({ dir, host: "host-killed", timings: FAST, input, stopAt, repository: APP }),
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once("line", resolve);
        child.once("exit", (code) => reject(new Error(`the reset process exited (${code})`)));
      });
      expect(JSON.parse(line)).toEqual({ at: stopAt, name: idle.name });
      expect(await isMarked(idle.path)).toBe(true);
      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));

      // Another host, once the killed process's lease has passed.
      const judge = await openPool(dir, "host-b", () => FREE_AFTER);
      expect((await listPool(judge)).worktrees).toEqual([
        expect.objectContaining({ name: idle.name, state: "free", marked: true, owner: "killed-task" }),
      ]);
      const next = await take(judge, APP, { owner: "killed-task", reuse: () => true });
      expect(next).toMatchObject({ origin: "new" });
      expect(next.name).not.toBe(idle.name);
      const pruned = await prunePool(judge);
      expect(pruned.removed.map((w) => w.name)).toEqual([idle.name]);
      expect(existsSync(idle.path)).toBe(false);
    },
  );
});
