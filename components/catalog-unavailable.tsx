"use client";
// The dashboard during a catalog outage: the user stays signed in and where they are, sees
// "Catalog unavailable — retrying", and the page or its queries try again by themselves.
import { useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useEffect, useSyncExternalStore } from "react";

/** How often the dashboard tries again while the catalog is unavailable (the API's Retry-After). */
export const CATALOG_RETRY_MS = 3_000;

/** A tRPC client error that is the API's UNAVAILABLE (a catalog outage): worth retrying. */
export function isCatalogUnavailable(error: unknown): boolean {
  const data = (error as { data?: { strata?: { code?: unknown } | null; httpStatus?: unknown } | null } | null)?.data;
  return data?.strata?.code === "UNAVAILABLE" || data?.httpStatus === 503;
}

/**
 * The whole page while the catalog cannot be reached (the dashboard layout could not check the
 * session): it renders the page again every few seconds, which shows the page once the catalog
 * is back. The session is kept: an outage never signs anyone out.
 */
export function CatalogUnavailablePage() {
  const router = useRouter();
  useEffect(() => {
    const timer = setInterval(() => router.refresh(), CATALOG_RETRY_MS);
    return () => clearInterval(timer);
  }, [router]);
  return (
    <div className="signin">
      <div className="panel signin-card" role="status" data-testid="catalog-unavailable">
        <div className="brand-dark">Strata</div>
        <h1>Catalog unavailable — retrying</h1>
        <p className="lede">
          The catalog database cannot be reached right now. This page tries again every few seconds and shows itself
          once the catalog is back; you stay signed in.
        </p>
      </div>
    </div>
  );
}

/**
 * A notice above the page while any query is being retried because the catalog is unavailable
 * (the query client retries those every few seconds and keeps the data it has).
 */
export function CatalogStatusNotice() {
  const queryClient = useQueryClient();
  const cache = queryClient.getQueryCache();
  const unavailable = useSyncExternalStore(
    (onChange) => cache.subscribe(onChange),
    () => cache.getAll().some((q) => isCatalogUnavailable(q.state.fetchFailureReason ?? q.state.error)),
    () => false,
  );
  if (!unavailable) return null;
  return (
    <div className="notice" role="status" data-testid="catalog-retrying">
      Catalog unavailable, retrying…
    </div>
  );
}
