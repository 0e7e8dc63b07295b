// The live rung of an acquire, on the host: the held workspace the plan names is continued in
// only while it still is the plan's snapshot (HEAD the recorded commit, or a descendant over the
// same files, nothing drifted), judged as a resume in place judges it. Anything else (the
// directory is gone, drifted, or no checkout) answers false, and the snapshot is restored instead.
import type { RestorePlan } from "../domain/views.ts";
import { loadCaptureManifest } from "../restore/restore-snapshot.ts";
import { checkIfCheckout, continuesAt, type SnapshotRecordSource } from "./verify-worktree.ts";

export async function continuesLive(source: SnapshotRecordSource, plan: RestorePlan): Promise<boolean> {
  if (!plan.live || !plan.snapshot) return false;
  const { manifest } = await loadCaptureManifest(source, plan.snapshot);
  const verified = await checkIfCheckout({ snapshotId: plan.snapshot.id, manifest }, plan.live.workspace);
  return verified !== null && continuesAt(verified);
}
