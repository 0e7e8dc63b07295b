import { SnapshotDiffView } from "~/components/snapshot-diff-view.tsx";

export const metadata = { title: "Compare snapshots · Strata" };

function one(value: string | string[] | undefined): string | null {
  const v = Array.isArray(value) ? value[0] : value;
  return v && v.trim() !== "" ? v.trim() : null;
}

export default async function DiffPage({ searchParams }: { searchParams: Promise<Record<string, string | string[]>> }) {
  const params = await searchParams;
  const from = one(params.from);
  const to = one(params.to);
  return (
    <>
      <h1>Compare snapshots</h1>
      <p className="lede">
        The files that differ between two snapshots of one repository, computed from the content the catalog holds.
      </p>
      {/* Keyed by the pair, so the pickers start from the URL's ids after every navigation. */}
      <SnapshotDiffView key={`${from ?? ""}..${to ?? ""}`} from={from} to={to} />
    </>
  );
}
