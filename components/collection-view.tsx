"use client";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "./trpc.tsx";
import { QueryView, StateBadge, When, formatBytes } from "./query-view.tsx";

export function CollectionView() {
  const trpc = useTRPC();
  const query = useQuery(trpc.browse.collection.queryOptions());
  return (
    <QueryView query={query} isEmpty={() => false} empty={{ title: "", body: null }}>
      {(data) => (
        <>
          <div className="stats">
            {["available", "deleting", "deleted"].map((state) => {
              const group = data.layersByState.find((l) => l.state === state);
              return (
                <div className="panel stat" key={state}>
                  <b>{group?.count ?? 0}</b>
                  <span>
                    layers {state}
                    {group ? ` · ${formatBytes(group.bytes)}` : ""}
                  </span>
                </div>
              );
            })}
            <div className="panel stat">
              <b>{data.retiredSnapshots}</b>
              <span>retired snapshots · {formatBytes(data.retiredBytes)} held</span>
            </div>
          </div>
          {data.runs.length === 0 ? (
            <div className="panel empty" data-testid="empty-state">
              <h2>No collection runs yet</h2>
              <p>
                Collection frees layers and blobs that no ready snapshot, active pin or recent upload can reach. Runs
                will be listed here with what each one deleted.
              </p>
            </div>
          ) : (
            <div className="panel">
              <table>
                <thead>
                  <tr>
                    <th>Started</th>
                    <th>Finished</th>
                    <th>Status</th>
                    <th>Heads released</th>
                    <th>Layers deleted</th>
                    <th>Blobs deleted</th>
                    <th>Freed</th>
                    <th>Error</th>
                  </tr>
                </thead>
                <tbody>
                  {data.runs.map((run) => (
                    <tr key={run.id}>
                      <td>
                        <When at={run.startedAt} />
                      </td>
                      <td>
                        <When at={run.finishedAt} />
                      </td>
                      <td>
                        <StateBadge state={run.status} />
                      </td>
                      <td>{run.headsReleased}</td>
                      <td>{run.layersDeleted}</td>
                      <td>{run.blobsDeleted}</td>
                      <td>{formatBytes(run.bytesFreed)}</td>
                      <td>{run.errorCode ?? "—"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </QueryView>
  );
}
