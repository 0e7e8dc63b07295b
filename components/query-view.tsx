"use client";
import { useQueryClient } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { ErrorPanel } from "./error-panel.tsx";

/** Loading, error and empty states around a query's data, the same on every page. */
export function QueryView<T>({
  query,
  isEmpty,
  empty,
  children,
}: {
  query: { data: T | undefined; isPending: boolean; error: { message: string } | null; refetch?: () => unknown };
  isEmpty: (data: T) => boolean;
  empty: { title: string; body: ReactNode };
  children: (data: T) => ReactNode;
}) {
  const queryClient = useQueryClient();
  if (query.error) {
    // Retry the page's own query when it was handed over, else every query of the page that failed.
    const retry = query.refetch
      ? () => void query.refetch?.()
      : () => void queryClient.refetchQueries({ type: "active", predicate: (q) => q.state.status === "error" });
    return <ErrorPanel error={query.error} onRetry={retry} />;
  }
  if (query.isPending || query.data === undefined)
    return (
      <div className="panel status" role="status">
        Loading…
      </div>
    );
  if (isEmpty(query.data)) {
    return (
      <div className="panel empty" data-testid="empty-state">
        <h2>{empty.title}</h2>
        {empty.body}
      </div>
    );
  }
  return <>{children(query.data)}</>;
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`badge ${state}`}>{state}</span>;
}

export function ShortId({ id }: { id: string | null | undefined }) {
  if (!id) return <span className="mono">—</span>;
  return (
    <span className="mono" title={id}>
      {id.slice(0, 8)}
    </span>
  );
}

/** A time on any page: local with its zone, UTC one click away (components/time.tsx). */
export { LocalTime as When } from "./time.tsx";

export function formatBytes(bytes: bigint | number): string {
  const n = Number(bytes);
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** The "Load more" footer of a paged table. */
export function LoadMore({
  query,
}: {
  query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown };
}) {
  if (!query.hasNextPage) return null;
  return (
    <div className="status">
      <button type="button" onClick={() => void query.fetchNextPage()} disabled={query.isFetchingNextPage}>
        {query.isFetchingNextPage ? "Loading…" : "Load more"}
      </button>
    </div>
  );
}
