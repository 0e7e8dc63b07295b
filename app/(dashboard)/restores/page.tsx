import { RestoresView } from "~/components/restores-view.tsx";

export const metadata = { title: "Restores · Strata" };

export default function RestoresPage() {
  return (
    <>
      <h1>Restores</h1>
      <p className="lede">Which snapshot seeded which workspace, on which rung of the ladder, and how it went.</p>
      <RestoresView />
    </>
  );
}
