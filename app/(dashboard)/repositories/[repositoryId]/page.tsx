import { Suspense } from "react";
import { RepositoryGraphView } from "~/components/repository-graph-view.tsx";

export const metadata = { title: "Lineage graph · Strata" };

// The view (filters, expanded chains, focus, selection, layout) is in the URL's search
// parameters, read by the client component, so a view can be shared.
export default async function RepositoryGraphPage({ params }: { params: Promise<{ repositoryId: string }> }) {
  const { repositoryId } = await params;
  return (
    <Suspense>
      <RepositoryGraphView repositoryId={decodeURIComponent(repositoryId)} />
    </Suspense>
  );
}
