"use client";
import Link from "next/link";
import { useState } from "react";
import { PinHoldCells, PinId } from "./pin-cells.tsx";
import { PagedFooter, nextCursor, usePagedQuery } from "./paging.tsx";
import { useTRPC } from "./trpc.tsx";
import { QueryView, ShortId, StateBadge, formatBytes } from "./query-view.tsx";

type Status = "all" | "active" | "closed";

export function PinsView() {
  const trpc = useTRPC();
  const [status, setStatus] = useState<Status>("active");
  const [keepingRetired, setKeepingRetired] = useState(false);
  const paged = usePagedQuery(
    100,
    (limit) =>
      trpc.dashboard.pins.infiniteQueryOptions({ status, keepingRetired, limit }, { getNextPageParam: nextCursor }),
    (p) => p.pins,
  );
  const first = paged.firstPage;
  return (
    <>
      <form className="filters" aria-label="Pin filters" onSubmit={(e) => e.preventDefault()}>
        <fieldset>
          <legend>Holds</legend>
          {(["active", "closed", "all"] as Status[]).map((s) => (
            <label key={s} className="check">
              <input
                type="radio"
                name="status"
                value={s}
                checked={status === s}
                disabled={keepingRetired && s !== "active"}
                onChange={() => setStatus(s)}
              />
              {s === "active" ? "Active" : s === "closed" ? "Closed (released or expired)" : "All"}
            </label>
          ))}
        </fieldset>
        <label className="check">
          <input
            type="checkbox"
            checked={keepingRetired}
            onChange={(e) => {
              setKeepingRetired(e.target.checked);
              if (e.target.checked) setStatus("active");
            }}
          />
          Only pins that keep a retired snapshot alive
        </label>
      </form>
      {first ? (
        <div className="stats">
          <div className="panel stat">
            <b>{first.activeCount}</b>
            <span>active pins</span>
          </div>
          <div className="panel stat">
            <b>{first.keepingRetiredCount}</b>
            <span>active pins on retired snapshots (content kept from GC)</span>
          </div>
        </div>
      ) : null}
      <QueryView
        query={paged.list}
        isEmpty={(rows) => rows.length === 0}
        empty={{
          title: keepingRetired ? "No pin keeps a retired snapshot" : "No pins",
          body: (
            <p>
              A pin is taken while a restore is in flight, and for up to 30 days when a restore came back only partly,
              so garbage collection keeps the snapshot.{" "}
              {keepingRetired
                ? "Every retired snapshot's content can be released at the next collection."
                : "Nothing matches this filter right now."}
            </p>
          ),
        }}
      >
        {(rows) => (
          <div className="panel">
            <table>
              <thead>
                <tr>
                  <th>Pin</th>
                  <th>Status</th>
                  <th>Protects</th>
                  <th>Repository</th>
                  <th>Holder</th>
                  <th>Purpose</th>
                  <th>Since</th>
                  <th>Expires</th>
                  <th>Released</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((p) => (
                  <tr key={`${p.agentId}/${p.pinId}`} className={p.keepsRetired ? "highlight" : undefined}>
                    <td>
                      <PinId id={p.pinId} />
                    </td>
                    <td>
                      <StateBadge state={p.status} />
                    </td>
                    <td>
                      {p.snapshot ? (
                        <>
                          <Link href={`/snapshots/${p.snapshot.id}`}>
                            {p.snapshot.class === "baseline"
                              ? `baseline ${(p.snapshot.canonicalRef ?? "").replace("refs/heads/", "")}`
                              : `checkpoint of ${p.snapshot.workContextId}`}
                          </Link>{" "}
                          <StateBadge state={p.snapshot.state} /> · {formatBytes(p.snapshot.sizeBytes)}
                          {p.keepsRetired ? <div className="muted">keeps a retired snapshot&apos;s content</div> : null}
                        </>
                      ) : (
                        <>
                          <ShortId id={p.snapshotId} /> <span className="muted">(no such snapshot)</span>
                        </>
                      )}
                    </td>
                    <td>{p.snapshot?.repository.name ?? "—"}</td>
                    <PinHoldCells pin={p} />
                  </tr>
                ))}
              </tbody>
            </table>
            <PagedFooter paged={paged} shown={rows.length} />
          </div>
        )}
      </QueryView>
    </>
  );
}
