import { SnapshotsView } from "~/components/snapshots-view.tsx";

export const metadata = { title: "Snapshots · Strata" };

export default function SnapshotsPage() {
  return (
    <>
      <h1>Snapshots</h1>
      <p className="lede">
        Baselines and checkpoints, newest first. Retired snapshots are hidden unless you ask for them.
      </p>
      <SnapshotsView />
    </>
  );
}
