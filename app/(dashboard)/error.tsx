"use client";
// A dashboard page that failed to render: the navigation stays, the page says so in words, and
// offers a retry (once the server answers) and a way back.
import Link from "next/link";
import { useRouter } from "next/navigation";
import { startTransition, useState } from "react";

export default function DashboardError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  const router = useRouter();
  const [unreachable, setUnreachable] = useState(false);
  async function retry() {
    // Rendering again needs the server: asked first, so an unreachable one is said here instead of
    // the browser falling back to its own error page.
    const answered = await fetch("/api/trpc/health", { cache: "no-store" }).then(
      () => true,
      () => false,
    );
    setUnreachable(!answered);
    if (!answered) return;
    startTransition(() => {
      router.refresh();
      reset();
    });
  }
  return (
    <section className="panel problem" role="alert" aria-labelledby="page-error-title" data-testid="page-error">
      <h1 id="page-error-title">This page could not be shown</h1>
      <p>
        Something went wrong while drawing it{error.message ? `: ${error.message}` : "."}
        {error.digest ? ` (reference ${error.digest}, in the server log)` : null}
      </p>
      {unreachable ? <p className="form-error">Server unreachable: retry once it is back.</p> : null}
      <div className="problem-actions">
        <button type="button" className="primary" onClick={() => void retry()}>
          Retry
        </button>
        <Link href="/repositories">Repositories</Link>
        <Link href="/snapshots">Snapshots</Link>
      </div>
    </section>
  );
}
