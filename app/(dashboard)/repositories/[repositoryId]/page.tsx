import { RepositoryGraphView } from "~/components/repository-graph-view.tsx";

export const metadata = { title: "Lineage graph · Strata" };

export default async function RepositoryGraphPage({
  params,
  searchParams,
}: {
  params: Promise<{ repositoryId: string }>;
  searchParams: Promise<{ workContext?: string | string[] }>;
}) {
  const { repositoryId } = await params;
  const { workContext } = await searchParams;
  return (
    <RepositoryGraphView
      repositoryId={decodeURIComponent(repositoryId)}
      initialWorkContext={typeof workContext === "string" ? workContext : ""}
    />
  );
}
