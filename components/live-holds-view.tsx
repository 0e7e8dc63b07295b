"use client";
import Link from "next/link";
import { useState } from "react";
import { PagedFooter, nextCursor, usePagedQuery } from "./paging.tsx";
import { useTRPC } from "./trpc.tsx";
import { QueryView, ShortId, StateBadge, When } from "./query-view.tsx";

/**
 * Live holds: paused work contexts that keep their live workspace, where and until when. Each
 * keeps the checkpoint its pause appended from the sweeper and collection while it lasts.
 */
export function LiveHoldsView() {
  const trpc = useTRPC();
  const [status, setStatus] = useState<"active" | "all">("active");
  const paged = usePagedQuery(
    100,
    (limit) => trpc.dashboard.liveHolds.infiniteQueryOptions({ status, limit }, { getNextPageParam: nextCursor }),
    (p) => p.holds,
  );
  const first = paged.firstPage;
  return (
    <>
      <form className="filters" aria-label="Live hold filters" onSubmit={(e) => e.preventDefault()}>
        <fieldset>
          <legend>Holds</legend>
          {(["active", "all"] as const).map((s) => (
            <label key={s} className="check">
              <input
                type="radio"
                name="live-hold-status"
                value={s}
                checked={status === s}
                onChange={() => setStatus(s)}
              />
              {s === "active" ? "Active" : "All (ended and expired too)"}
            </label>
          ))}
        </fieldset>
      </form>
      {first ? (
        <div className="stats">
          <div className="panel stat">
            <b>{first.activeCount}</b>
            <span>active live holds (their checkpoints kept from GC)</span>
          </div>
        </div>
      ) : null}
      <QueryView
        query={paged.list}
        isEmpty={(holds) => holds.length === 0}
        empty={{
          title: "No live holds",
          body: (
            <p>
              A paused work context may hold its live workspace after its checkpoint was appended: 14 days on an
              idle-persistent provider, one hour otherwise. Acquire on that host then continues there, nothing restored.
            </p>
          ),
        }}
      >
        {(holds) => (
          <div className="panel">
            <table>
              <thead>
                <tr>
                  <th>Work context</th>
                  <th>Agent</th>
                  <th>Keeps</th>
                  <th>Repository</th>
                  <th>Host and workspace</th>
                  <th>Provider</th>
                  <th>Status</th>
                  <th>Since</th>
                  <th>Expires</th>
                  <th>Ended</th>
                </tr>
              </thead>
              <tbody>
                {holds.map((h) => (
                  <tr key={h.id}>
                    <td className="mono" title={`hold ${h.id}`}>
                      {h.workContextId}
                    </td>
                    <td>{h.agentName}</td>
                    <td>
                      <Link href={`/snapshots/${h.snapshotId}`}>
                        checkpoint <ShortId id={h.snapshotId} />
                      </Link>{" "}
                      <StateBadge state={h.snapshotState} />
                    </td>
                    <td>{h.repository.name}</td>
                    <td>
                      {h.host}
                      <div className="mono muted">{h.workspace}</div>
                    </td>
                    <td>
                      {h.provider}
                      <div className="muted">{h.idlePersistent ? "idle-persistent: 14 days" : "1 hour"}</div>
                    </td>
                    <td>
                      <StateBadge state={h.status} />
                    </td>
                    <td>
                      <When at={h.createdAt} />
                    </td>
                    <td>
                      <When at={h.expiresAt} />
                    </td>
                    <td>
                      {h.endedAt ? (
                        <>
                          <When at={h.endedAt} /> <span className="muted">({h.endReason})</span>
                        </>
                      ) : (
                        "—"
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <PagedFooter paged={paged} shown={holds.length} />
          </div>
        )}
      </QueryView>
    </>
  );
}
