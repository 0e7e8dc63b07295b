"use client";
// The dashboard during a catalog outage: the user stays signed in and where they are, sees
// "Catalog unavailable — retrying", and the page tries again by itself.
import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { OFFLINE_RETRY_MS } from "./connection.ts";

/**
 * The whole page while the catalog cannot be reached (the dashboard layout could not check the
 * session): it renders the page again every few seconds, which shows the page once the catalog
 * is back. The session is kept: an outage never signs anyone out. It asks the server first: a
 * refresh that cannot reach it would leave the browser on its own error page.
 */
export function CatalogUnavailablePage() {
  const router = useRouter();
  useEffect(() => {
    const timer = setInterval(() => {
      fetch("/api/trpc/health", { cache: "no-store" }).then(
        () => router.refresh(),
        () => undefined,
      );
    }, OFFLINE_RETRY_MS);
    return () => clearInterval(timer);
  }, [router]);
  return (
    <div className="signin">
      <main className="panel signin-card" role="status" data-testid="catalog-unavailable">
        <div className="brand-dark">Strata</div>
        <h1>Catalog unavailable — retrying</h1>
        <p className="lede">
          The catalog database cannot be reached right now. This page tries again every few seconds and shows itself
          once the catalog is back; you stay signed in.
        </p>
      </main>
    </div>
  );
}
