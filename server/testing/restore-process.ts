// A restore in a process of its own, for the test that kills one midway (restore.test.ts).
// Run: node --import tsx server/testing/restore-process.ts '<json>' with
// json = { manifest, snapshotId, into, stateDir, blobs: { digest: base64 } }.
// Serves every blob but the patches, whose reads never finish: it prints "STUCK" once the
// restore waits for one, inside its staging directory, and stays there until killed.
import { restoreWorktree } from "../restore/engine/restore.ts";
import type { BlobSource } from "../restore/engine/restore-blobs.ts";

interface Args {
  manifest: { patches: { digest: string }[] };
  snapshotId: string;
  into: string;
  stateDir: string;
  blobs: Record<string, string>;
}

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const patches = new Set(args.manifest.patches.map((p) => p.digest));
const blobs: BlobSource = {
  async open(digest) {
    if (patches.has(digest)) {
      process.stdout.write("STUCK\n");
      await new Promise(() => setInterval(() => undefined, 60_000));
    }
    const bytes = Buffer.from(args.blobs[digest] ?? "", "base64");
    return (async function* () {
      yield bytes;
    })();
  },
};
await restoreWorktree({ snapshotId: args.snapshotId, manifest: args.manifest }, args.into, {
  blobs,
  stateDir: args.stateDir,
});
process.stdout.write("DONE\n");
