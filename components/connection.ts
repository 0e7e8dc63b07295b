"use client";
// Whether the dashboard can reach Strata right now, as every tRPC answer tells it: an answer means
// the server is up, a fetch that never got one means the server is unreachable, and the API's
// UNAVAILABLE (503, Retry-After) means the server is up but its catalog database is not.
import { TRPCClientError, type TRPCLink } from "@trpc/client";
import { observable } from "@trpc/server/observable";
import { useSyncExternalStore } from "react";
import type { AppRouter } from "~/server/trpc/root.ts";

export type Connection = "online" | "unreachable" | "catalog-unavailable";

/** What a call that never reached the server says, instead of the browser's "Failed to fetch". */
const SERVER_UNREACHABLE_MESSAGE = "Server unreachable: Strata did not answer. Retry once it is back.";

/** How often the dashboard tries again while the server or its catalog is unavailable (the API's Retry-After). */
export const OFFLINE_RETRY_MS = 3_000;

/** A tRPC client error that is the API's UNAVAILABLE (a catalog outage): worth retrying. */
export function isCatalogUnavailable(error: unknown): boolean {
  const data = (error as { data?: { strata?: { code?: unknown } | null; httpStatus?: unknown } | null } | null)?.data;
  return data?.strata?.code === "UNAVAILABLE" || data?.httpStatus === 503;
}

/** A call that got no answer at all: the browser's fetch failed (server stopped, network down). */
export function isServerUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.message === SERVER_UNREACHABLE_MESSAGE) return true;
  const cause = (error as { cause?: unknown }).cause;
  // Chromium says "Failed to fetch", Firefox "NetworkError when attempting…", Safari "Load failed".
  return (
    error instanceof TRPCClientError &&
    !error.data &&
    cause instanceof TypeError &&
    /fetch|network|load failed/i.test(cause.message)
  );
}

/** Either kind of outage: the dashboard waits and retries rather than showing an error. */
export function isOutage(error: unknown): boolean {
  return isServerUnreachable(error) || isCatalogUnavailable(error);
}

let current: Connection = "online";
const listeners = new Set<() => void>();

function report(next: Connection) {
  if (next === current) return;
  current = next;
  for (const listener of listeners) listener();
}

/** The connection as the latest tRPC answer (or failure to get one) showed it. */
export function useConnection(): Connection {
  return useSyncExternalStore(
    (onChange) => {
      listeners.add(onChange);
      return () => listeners.delete(onChange);
    },
    () => current,
    () => "online",
  );
}

/**
 * A link that watches every call: it records the connection, and a call that never reached the
 * server fails with SERVER_UNREACHABLE_MESSAGE (what dialogs and pages show) instead of the
 * browser's "Failed to fetch".
 */
export function connectionLink(): TRPCLink<AppRouter> {
  return () =>
    ({ next, op }) =>
      observable((observer) =>
        next(op).subscribe({
          next(value) {
            report("online");
            observer.next(value);
          },
          error(error) {
            if (isServerUnreachable(error)) {
              report("unreachable");
              observer.error(new TRPCClientError(SERVER_UNREACHABLE_MESSAGE, { cause: error }));
              return;
            }
            // Any other answer came from the server, so it is up; UNAVAILABLE says its catalog is not.
            report(isCatalogUnavailable(error) ? "catalog-unavailable" : "online");
            observer.error(error);
          },
          complete() {
            observer.complete();
          },
        }),
      );
}
