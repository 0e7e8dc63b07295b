import { RepositoriesView } from "~/components/repositories-view.tsx";

export const metadata = { title: "Repositories · Strata" };

export default function RepositoriesPage() {
  return (
    <>
      <h1>Repositories</h1>
      <p className="lede">Every repository the catalog knows, with its clean baselines and work lineages.</p>
      <RepositoriesView />
    </>
  );
}
