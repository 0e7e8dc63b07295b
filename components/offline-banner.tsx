"use client";
// The dashboard when Strata cannot be reached mid-session: a banner above the page says so and
// retries every few seconds (or at once, on request); the page keeps the data it shows. A link
// clicked meanwhile asks the server first and, when it does not answer, waits for it instead of
// letting the browser fall back to its own error page; the page opens once the server is back.
import { useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useCallback, useEffect, useRef, useState } from "react";
import { OFFLINE_RETRY_MS, isServerUnreachable, useConnection } from "./connection.ts";
import { useTRPC } from "./trpc.tsx";

/** A probe that gets no answer within this long lets the navigation go ahead (a slow server is not a dead one). */
const PROBE_WAIT_MS = 5_000;

/** A click that would make the app router navigate to another page of this app. */
function internalNavigation(event: MouseEvent): string | null {
  if (event.defaultPrevented || event.button !== 0) return null;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return null;
  const anchor = event.target instanceof Element ? event.target.closest("a[href]") : null;
  if (!(anchor instanceof HTMLAnchorElement)) return null;
  if ((anchor.target && anchor.target !== "_self") || anchor.hasAttribute("download")) return null;
  const url = new URL(anchor.href, window.location.href);
  if (url.origin !== window.location.origin || url.pathname.startsWith("/api/")) return null;
  if (url.pathname === window.location.pathname && url.search === window.location.search) return null;
  return `${url.pathname}${url.search}${url.hash}`;
}

export function OfflineBanner() {
  const connection = useConnection();
  const queryClient = useQueryClient();
  const trpc = useTRPC();
  const router = useRouter();
  const [held, setHeld] = useState<string | null>(null);
  const heldRef = useRef<string | null>(null);
  const wasOffline = useRef(false);

  const probe = useCallback(
    () => queryClient.fetchQuery({ ...trpc.health.queryOptions(), staleTime: 0, retry: false }),
    [queryClient, trpc],
  );
  const retryNow = useCallback(() => {
    probe().catch(() => undefined);
  }, [probe]);

  // While offline: ask again every few seconds (also when no query of the page is retrying).
  useEffect(() => {
    if (connection === "online") return;
    const timer = setInterval(retryNow, OFFLINE_RETRY_MS);
    return () => clearInterval(timer);
  }, [connection, retryNow]);

  // Back online: queries that failed meanwhile load again, and a page asked for meanwhile opens.
  useEffect(() => {
    if (connection !== "online") {
      wasOffline.current = true;
      return;
    }
    if (!wasOffline.current) return;
    wasOffline.current = false;
    void queryClient.refetchQueries({
      type: "active",
      predicate: (query) => query.state.status === "error" || query.state.fetchFailureReason != null,
    });
    const href = heldRef.current;
    heldRef.current = null;
    setHeld(null);
    if (href) router.push(href);
  }, [connection, queryClient, router]);

  // Links: ask the server before the app router fetches the page; hold the page while it is unreachable.
  useEffect(() => {
    function onClick(event: MouseEvent) {
      const href = internalNavigation(event);
      if (!href) return;
      event.preventDefault();
      let settled = false;
      const go = () => {
        if (settled) return;
        settled = true;
        router.push(href);
      };
      const timer = setTimeout(go, PROBE_WAIT_MS);
      probe().then(
        () => {
          clearTimeout(timer);
          go();
        },
        (error: unknown) => {
          clearTimeout(timer);
          if (settled) return;
          if (!isServerUnreachable(error)) return go();
          settled = true;
          heldRef.current = href;
          setHeld(href);
        },
      );
    }
    window.addEventListener("click", onClick, true);
    return () => window.removeEventListener("click", onClick, true);
  }, [probe, router]);

  return (
    <div className="offline-banner-region" role="status" data-testid="offline-banner">
      {connection === "online" ? null : (
        <div className="offline-banner">
          <p>
            <strong>{connection === "unreachable" ? "Server unreachable" : "Catalog unavailable"}, retrying…</strong>{" "}
            {connection === "unreachable"
              ? "Strata does not answer. This page keeps what it shows and tries again every few seconds."
              : "The catalog database cannot be reached right now. This page keeps what it shows and tries again every few seconds."}
            {held ? ` The page you asked for (${held}) opens once it is back.` : null}
          </p>
          <button type="button" onClick={retryNow}>
            Retry now
          </button>
        </div>
      )}
    </div>
  );
}
