"use client";
// A repository's pooled worktrees on the host this dashboard's server runs on: each worktree's
// state (held, stale, or what an idle one holds), holder, lease age and last snapshot. Other
// hosts keep their own pools; `strata pool list` there shows them.
import { useQuery } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import Link from "next/link";
import type { AppRouter } from "~/server/trpc/root.ts";
import { QueryView, ShortId, When } from "./query-view.tsx";
import { useTRPC } from "./trpc.tsx";

type PooledWorktree = inferRouterOutputs<AppRouter>["dashboard"]["repositoryPool"]["worktrees"][number];

// The badge colours of the states the other pages use for the same tone.
const TONE: Record<PooledWorktree["status"], string> = {
  held: "active",
  stale: "pending",
  "idle-clean": "available",
  "idle-dirty": "degraded",
  marked: "failed",
  "idle-empty": "released",
  missing: "released",
  "not-a-checkout": "released",
};

/** "12 s ago", on the pool filesystem's clock. */
function ago(ms: number): string {
  if (ms < 1000) return "just now";
  if (ms < 120_000) return `${Math.round(ms / 1000)} s ago`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min ago`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h ago`;
  return `${Math.round(ms / 86_400_000)} days ago`;
}

function LastSnapshot({ snapshot }: { snapshot: PooledWorktree["snapshot"] }) {
  if (!snapshot) return <span className="muted">none recorded</span>;
  const row = snapshot.catalog;
  if (!row) {
    return (
      <>
        <ShortId id={snapshot.id} /> <span className="muted">(not in this catalog)</span>
      </>
    );
  }
  const label =
    row.class === "baseline"
      ? `baseline ${(row.canonicalRef ?? "").replace("refs/heads/", "")}`
      : `${row.workContextId ?? "checkpoint"} #${row.sequence ?? "?"}`;
  return <Link href={`/snapshots/${snapshot.id}`}>{label}</Link>;
}

function Lease({ w }: { w: PooledWorktree }) {
  if (w.holder === null) return <>released {ago(w.leaseAgeMs)}</>;
  return (
    <>
      {w.state === "free" ? "lapsed, last refreshed" : "refreshed"} {ago(w.leaseAgeMs)}
      {w.keptByProcess ? <div className="muted">kept: its process still runs on this host</div> : null}
    </>
  );
}

export function RepositoryPoolView({ repositoryId }: { repositoryId: string }) {
  const trpc = useTRPC();
  // Leases age by the second: ask again every 10 s (the holder's refresh interval).
  const query = useQuery({ ...trpc.dashboard.repositoryPool.queryOptions({ repositoryId }), refetchInterval: 10_000 });
  const pool = query.data;
  return (
    <section aria-labelledby="pooled-worktrees">
      <h2 id="pooled-worktrees">Pooled worktrees</h2>
      {pool ? (
        <p className="muted" data-testid="pool-host">
          On host <b className="mono">{pool.host}</b>, in <span className="mono">{pool.directory}</span>. Other hosts
          keep their own pools: <code>strata pool list</code> there shows them.
        </p>
      ) : null}
      <QueryView
        query={query}
        isEmpty={(p) => p.worktrees.length === 0}
        empty={{
          title: "No pooled worktrees on this host",
          body: (
            <p>
              Host {pool?.host} has no pooled worktrees for this repository. A resume on this host restores its
              checkouts into worktrees here and keeps them for the next task.
            </p>
          ),
        }}
      >
        {(p) => (
          <div className="panel">
            <table>
              <thead>
                <tr>
                  <th>Worktree</th>
                  <th>State</th>
                  <th>Holder</th>
                  <th>Lease</th>
                  <th>Last snapshot</th>
                  <th>Owner</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {p.worktrees.map((w) => (
                  <tr key={w.name}>
                    <td>
                      <b>{w.name}</b>
                      <div className="muted mono">{w.path}</div>
                    </td>
                    <td>
                      <span className={`badge ${TONE[w.status]}`} style={{ whiteSpace: "nowrap" }}>
                        {w.status}
                      </span>
                      {w.detail ? <div className="muted">{w.detail}</div> : null}
                      {w.marked && w.state !== "free" ? (
                        <div className="muted">resetting to another snapshot</div>
                      ) : null}
                    </td>
                    <td>{w.holder ? `pid ${w.holder.pid} on ${w.holder.host}` : "—"}</td>
                    <td>
                      <Lease w={w} />
                    </td>
                    <td>
                      <LastSnapshot snapshot={w.snapshot} />
                    </td>
                    <td className="mono">{w.owner ?? "—"}</td>
                    <td>
                      <When at={new Date(w.createdAt)} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryView>
    </section>
  );
}
