"use client";
import Link from "next/link";
import { useState } from "react";
import { PagedFooter, nextCursor, usePagedQuery } from "./paging.tsx";
import { useTRPC } from "./trpc.tsx";
import { QueryView, ShortId, StateBadge, When, formatBytes } from "./query-view.tsx";

export function SnapshotsView() {
  const trpc = useTRPC();
  const [includeRetired, setIncludeRetired] = useState(false);
  const paged = usePagedQuery(
    50,
    (limit) => trpc.browse.snapshots.infiniteQueryOptions({ includeRetired, limit }, { getNextPageParam: nextCursor }),
    (p) => p.items,
  );
  return (
    <>
      <label style={{ display: "inline-flex", gap: 6, marginBottom: 12 }}>
        <input type="checkbox" checked={includeRetired} onChange={(e) => setIncludeRetired(e.target.checked)} />
        Show retired and deleted snapshots
      </label>
      <QueryView
        query={paged.list}
        isEmpty={(r) => r.length === 0}
        empty={{
          title: "No snapshots yet",
          body: (
            <p>
              Snapshots are recorded when an agent publishes a validated baseline of a clean checkout, or appends a
              checkpoint of its own work in progress. Both kinds will be listed here.
            </p>
          ),
        }}
      >
        {(items) => (
          <div className="panel">
            <table>
              <thead>
                <tr>
                  <th>Snapshot</th>
                  <th>Class</th>
                  <th>State</th>
                  <th>Repository</th>
                  <th>Agent</th>
                  <th>Ref / work context</th>
                  <th>Head</th>
                  <th>Size</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {items.map((s) => (
                  <tr key={s.id}>
                    <td>
                      <Link href={`/snapshots/${s.id}`}>{s.alias ?? <ShortId id={s.id} />}</Link>
                    </td>
                    <td>{s.class}</td>
                    <td>
                      <StateBadge state={s.state} />
                    </td>
                    <td>
                      <Link href={`/repositories/${s.repositoryId}`}>{s.repository.name}</Link>
                    </td>
                    <td>{s.agent.name}</td>
                    <td className="mono">
                      {s.class === "baseline" ? s.canonicalRef : `${s.workContextId} #${s.sequence}`}
                    </td>
                    <td>
                      <ShortId id={s.headCommit} />
                    </td>
                    <td>{formatBytes(s.sizeBytes)}</td>
                    <td>
                      <When at={s.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <PagedFooter paged={paged} shown={items.length} />
          </div>
        )}
      </QueryView>
    </>
  );
}
