import { CollectionView } from "~/components/collection-view.tsx";

export const metadata = { title: "Garbage collection · Strata" };

export default function CollectionPage() {
  return (
    <>
      <h1>Garbage collection</h1>
      <p className="lede">
        The workers&apos; schedule, what a collection would delete and free (a dry run), the run log, and the space that
        retired snapshots still hold.
      </p>
      <CollectionView />
    </>
  );
}
