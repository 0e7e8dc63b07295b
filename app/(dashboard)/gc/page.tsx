import { CollectionView } from "~/components/collection-view.tsx";

export const metadata = { title: "Garbage collection · Strata" };

export default function CollectionPage() {
  return (
    <>
      <h1>Garbage collection</h1>
      <p className="lede">Collection runs and the space that retired snapshots still hold.</p>
      <CollectionView />
    </>
  );
}
