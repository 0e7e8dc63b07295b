"use client";
import Link from "next/link";
import { PagedFooter, nextCursor, usePagedQuery } from "./paging.tsx";
import { useTRPC } from "./trpc.tsx";
import { QueryView, When } from "./query-view.tsx";

export function RepositoriesView() {
  const trpc = useTRPC();
  const paged = usePagedQuery(
    100,
    (limit) => trpc.browse.repositories.infiniteQueryOptions({ limit }, { getNextPageParam: nextCursor }),
    (p) => p.items,
  );
  return (
    <QueryView
      query={paged.list}
      isEmpty={(rows) => rows.length === 0}
      empty={{
        title: "No repositories yet",
        body: (
          <p>
            A repository appears here when an agent publishes its first clean baseline or work checkpoint through the
            agent API. Its lineage graph, baselines and checkpoint chains will show on this page.
          </p>
        ),
      }}
    >
      {(rows) => (
        <div className="panel">
          <table>
            <thead>
              <tr>
                <th>Repository</th>
                <th>Identity</th>
                <th>Ready baselines</th>
                <th>Ready checkpoints</th>
                <th>Lineages</th>
                <th>Snapshots</th>
                <th>First seen</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id}>
                  <td>
                    <Link href={`/repositories/${r.id}`}>{r.name}</Link>
                  </td>
                  <td className="mono">{r.identity}</td>
                  <td>{r.readyBaselines}</td>
                  <td>{r.readyCheckpoints}</td>
                  <td>{r._count.lineages}</td>
                  <td>{r._count.snapshots}</td>
                  <td>
                    <When at={r.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <PagedFooter paged={paged} shown={rows.length} />
        </div>
      )}
    </QueryView>
  );
}
