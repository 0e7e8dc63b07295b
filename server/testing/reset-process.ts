// Test support: a real process that reuses a pooled worktree and resets it to a snapshot, then
// stops at a step of the reset (before its first write, or before its verification) and prints
// `{"at": step}` so the test can kill it there with SIGKILL, as a crash would.
//
//   node --import tsx reset-process.ts '{"dir", "host", "timings", "input": <file>, "stopAt"}'
//   input: JSON { snapshotId, manifest, blobs: { [sha256]: base64 } }
import { readFileSync } from "node:fs";
import { memoryBlobSource } from "../restore/engine/restore-blobs.ts";
import type { LeaseTimings } from "../worktrees/lease.ts";
import { openWorktreePool } from "../worktrees/pool.ts";
import { isReusable, resetHeldWorktree } from "../worktrees/reuse-worktree.ts";
import { takeWorktree } from "../worktrees/take-worktree.ts";

interface Args {
  dir: string;
  host: string;
  timings: Partial<LeaseTimings>;
  input: string;
  stopAt: "write" | "verify";
  repository: { identity: string; name: string };
}

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const input = JSON.parse(readFileSync(args.input, "utf8")) as {
  snapshotId: string;
  manifest: unknown;
  blobs: Record<string, string>;
};
const blobs = new Map(Object.entries(input.blobs).map(([digest, b64]) => [digest, Buffer.from(b64, "base64")]));
const pool = await openWorktreePool({ dir: args.dir, host: args.host, timings: args.timings });
const held = await takeWorktree(pool, args.repository, { owner: "killed-task", reuse: isReusable });
if (held.origin !== "reused" || !held.previous) {
  process.stdout.write(`${JSON.stringify({ failed: `took a ${held.origin} worktree` })}\n`);
  process.exit(1);
}
await resetHeldWorktree(held, { snapshotId: input.snapshotId, manifest: input.manifest }, held.previous, {
  blobs: memoryBlobSource(blobs),
  beforeStep: async (step) => {
    if (step !== args.stopAt) return;
    process.stdout.write(`${JSON.stringify({ at: step, name: held.name })}\n`);
    // Wait here until killed (the timer keeps the process alive).
    await new Promise(() => setInterval(() => undefined, 1000));
  },
});
process.stdout.write(`${JSON.stringify({ failed: "the reset finished" })}\n`);
