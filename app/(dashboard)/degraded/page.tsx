import { DegradedRestoresView } from "~/components/degraded-restores-view.tsx";

export const metadata = { title: "Degraded restores · Strata" };

export default function DegradedRestoresPage() {
  return (
    <>
      <h1>Degraded restores</h1>
      <p className="lede">
        Restores that came back with less than their snapshot, or with nothing: what each holds, what is missing, and
        what to do next.
      </p>
      <DegradedRestoresView />
    </>
  );
}
