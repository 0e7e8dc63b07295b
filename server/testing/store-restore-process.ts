// A restore in a process of its own that uses this host's shared object stores, for the test of
// concurrent restores into one new store (host-object-store.test.ts).
// Run: node --import tsx server/testing/store-restore-process.ts '<json>' with
// json = { manifest, snapshotId, into, stateDir, objectStores, blobs: { digest: base64 } }.
// Prints the restore result as one line of JSON.
import { memoryBlobSource } from "../restore/engine/restore-blobs.ts";
import { restoreWorktree } from "../restore/engine/restore.ts";

interface Args {
  manifest: unknown;
  snapshotId: string;
  into: string;
  stateDir: string;
  objectStores: string;
  blobs: Record<string, string>;
}

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const blobs = new Map(Object.entries(args.blobs).map(([digest, b64]) => [digest, Buffer.from(b64, "base64")]));
const report = await restoreWorktree({ snapshotId: args.snapshotId, manifest: args.manifest }, args.into, {
  blobs: memoryBlobSource(blobs),
  stateDir: args.stateDir,
  objectStores: args.objectStores,
});
process.stdout.write(`${JSON.stringify(report.result)}\n`);
