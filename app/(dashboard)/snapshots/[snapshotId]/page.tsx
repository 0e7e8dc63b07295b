import { SnapshotDetailView } from "~/components/snapshot-detail-view.tsx";

export const metadata = { title: "Snapshot · Strata" };

export default async function SnapshotPage({ params }: { params: Promise<{ snapshotId: string }> }) {
  const { snapshotId } = await params;
  return <SnapshotDetailView snapshotId={decodeURIComponent(snapshotId)} />;
}
