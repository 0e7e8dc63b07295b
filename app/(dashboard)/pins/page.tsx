import { PinsView } from "~/components/pins-view.tsx";

export const metadata = { title: "Pins · Strata" };

export default function PinsPage() {
  return (
    <>
      <h1>Pins</h1>
      <p className="lede">Usage holds: while a pin is active, its snapshot and everything beneath it is kept.</p>
      <PinsView />
    </>
  );
}
