"use client";
// Paged lists: the page size lives in the URL (?size=), so a shared link shows the same pages;
// the pages themselves go forward by cursor ("Load more", components/query-view.tsx).
import {
  useInfiniteQuery,
  type InfiniteData,
  type QueryKey,
  type UseInfiniteQueryOptions,
} from "@tanstack/react-query";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { LoadMore } from "./query-view.tsx";

const SIZES = [25, 50, 100, 200] as const;

/** The page size the URL asks for (?size=N, 1 to 200), else `fallback`. */
function usePageSize(fallback: number): number {
  const size = Number(useSearchParams().get("size"));
  return Number.isInteger(size) && size >= 1 ? Math.min(size, 200) : fallback;
}

/** "N shown · rows per page [select]": changing it rewrites ?size= in the URL. */
function PageSizePicker({ size, shown }: { size: number; shown: number }) {
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const choices = [...new Set<number>([...SIZES, size])].sort((a, b) => a - b);
  return (
    <div className="paging">
      <span className="muted">{shown} shown</span>
      <label>
        Rows per page{" "}
        <select
          value={size}
          onChange={(e) => {
            const next = new URLSearchParams(params.toString());
            next.set("size", e.target.value);
            router.replace(`${pathname}?${next.toString()}`, { scroll: false });
          }}
        >
          {choices.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
    </div>
  );
}

/** The next page's cursor of a list that answers `{ nextCursor }`: none when it is null. */
export function nextCursor<C>(page: { nextCursor: C | null }): C | undefined {
  return page.nextCursor ?? undefined;
}

/**
 * A list read page by page: `optionsFor(limit)` is the list's infinite query at the URL's page
 * size (`fallbackSize` when the URL names none); `itemsOf` picks a page's rows.
 */
export function usePagedQuery<TPage, TItem, TError extends { message: string }, TKey extends QueryKey, TParam>(
  fallbackSize: number,
  optionsFor: (limit: number) => UseInfiniteQueryOptions<TPage, TError, InfiniteData<TPage, TParam>, TKey, TParam>,
  itemsOf: (page: TPage) => TItem[],
) {
  const size = usePageSize(fallbackSize);
  const query = useInfiniteQuery(optionsFor(size));
  const rows = query.data?.pages.flatMap(itemsOf);
  return {
    size,
    query,
    firstPage: query.data?.pages[0],
    /** What `QueryView` shows: the rows of every page loaded so far. */
    list: { data: rows, isPending: query.isPending, error: query.error },
  };
}

/** Under a paged table: "Load more" while there is more, then the rows shown and the page size picker. */
export function PagedFooter({
  paged,
  shown,
}: {
  paged: { size: number; query: Parameters<typeof LoadMore>[0]["query"] };
  shown: number;
}) {
  return (
    <>
      <LoadMore query={paged.query} />
      <PageSizePicker size={paged.size} shown={shown} />
    </>
  );
}
