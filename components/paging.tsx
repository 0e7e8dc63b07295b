"use client";
// Paged lists: the page size lives in the URL (?size=), so a shared link shows the same pages;
// the pages themselves go forward by cursor ("Load more", components/query-view.tsx).
import { usePathname, useRouter, useSearchParams } from "next/navigation";

const SIZES = [25, 50, 100, 200] as const;

/** The page size the URL asks for (?size=N, 1 to 200), else `fallback`. */
export function usePageSize(fallback: number): number {
  const size = Number(useSearchParams().get("size"));
  return Number.isInteger(size) && size >= 1 ? Math.min(size, 200) : fallback;
}

/** "N shown · rows per page [select]": changing it rewrites ?size= in the URL. */
export function PageSizePicker({ size, shown }: { size: number; shown: number }) {
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
