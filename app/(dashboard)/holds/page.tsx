import { LiveHoldsView } from "~/components/live-holds-view.tsx";

export const metadata = { title: "Live holds · Strata" };

export default function LiveHoldsPage() {
  return (
    <>
      <h1>Live holds</h1>
      <p className="lede">
        Paused work contexts that keep their live workspace: acquire on the hold&apos;s host continues there, nothing
        restored, until the hold ends or expires. Each keeps the checkpoint its pause appended from collection.
      </p>
      <LiveHoldsView />
    </>
  );
}
