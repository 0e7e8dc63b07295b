"use client";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "./trpc.tsx";
import { QueryView, ShortId, When } from "./query-view.tsx";

export function PinsView() {
  const trpc = useTRPC();
  const query = useQuery(trpc.browse.pins.queryOptions({}));
  return (
    <QueryView
      query={query}
      isEmpty={(rows) => rows.length === 0}
      empty={{
        title: "No pins",
        body: (
          <p>
            A pin is taken while a restore is in flight, and for up to 30 days when a restore came back only partly, so
            garbage collection keeps the snapshot. Nothing holds a snapshot right now.
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
                <th>Snapshot</th>
                <th>Status</th>
                <th>Holder</th>
                <th>Purpose</th>
                <th>Since</th>
                <th>Expires</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <tr key={p.pinId}>
                  <td>
                    <ShortId id={p.pinId} />
                  </td>
                  <td>
                    <ShortId id={p.snapshotId} />
                  </td>
                  <td>
                    <span className={`badge ${p.released ? "retired" : "ready"}`}>
                      {p.released ? "closed" : "active"}
                    </span>
                  </td>
                  <td>{p.holder ?? "—"}</td>
                  <td>{p.purpose ?? "—"}</td>
                  <td>
                    <When at={p.createdAt} />
                  </td>
                  <td>
                    <When at={p.expiresAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </QueryView>
  );
}
