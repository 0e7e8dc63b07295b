"use client";
import Link from "next/link";
import { PagedFooter, nextCursor, usePagedQuery } from "./paging.tsx";
import { useTRPC } from "./trpc.tsx";
import { QueryView, ShortId, StateBadge, When } from "./query-view.tsx";

export function RestoresView() {
  const trpc = useTRPC();
  const paged = usePagedQuery(
    100,
    (limit) => trpc.browse.restores.infiniteQueryOptions({ limit }, { getNextPageParam: nextCursor }),
    (p) => p.items,
  );
  return (
    <QueryView
      query={paged.list}
      isEmpty={(rows) => rows.length === 0}
      empty={{
        title: "No restores yet",
        body: (
          <p>
            Each time an agent acquires a workspace, Strata records which snapshot seeded it — the work&apos;s own
            checkpoint, the repository baseline, or a cold start — and the outcome it reported.
          </p>
        ),
      }}
    >
      {(rows) => (
        <div className="panel">
          <table>
            <thead>
              <tr>
                <th>Restore</th>
                <th>Repository</th>
                <th>Agent</th>
                <th>Rung</th>
                <th>Snapshot</th>
                <th>Outcome</th>
                <th>Workspace</th>
                <th>Host</th>
                <th>Started</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id}>
                  <td>
                    <ShortId id={r.id} />
                  </td>
                  <td>{r.repository.name}</td>
                  <td>{r.agent.name}</td>
                  <td>{r.rung}</td>
                  <td>
                    {r.snapshotId ? (
                      <Link href={`/snapshots/${r.snapshotId}`}>
                        <ShortId id={r.snapshotId} />
                      </Link>
                    ) : (
                      "cold"
                    )}
                  </td>
                  <td>
                    <StateBadge state={r.outcome} />
                    {r.discardedAt ? " (discarded)" : ""}
                  </td>
                  <td className="mono">{r.workspace}</td>
                  <td>{r.host}</td>
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
