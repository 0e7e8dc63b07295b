"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "./trpc.tsx";
import { QueryView, ShortId, StateBadge, When, formatBytes } from "./query-view.tsx";
import { useCan } from "./viewer.tsx";

export function CollectionView() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const query = useQuery(trpc.dashboard.collection.queryOptions());
  const canCollect = useCan("collect");
  const run = useMutation(trpc.dashboard.runCollection.mutationOptions());
  const [message, setMessage] = useState<string | null>(null);

  async function runNow() {
    setMessage(null);
    const result = await run.mutateAsync();
    setMessage(
      result.status === "skipped"
        ? "A collection is already running; nothing was started."
        : result.status === "failed"
          ? `The collection failed (${result.errorCode}).`
          : `Collection finished: ${result.tally.headsReleased} heads released, ${result.tally.layersDeleted} layers and ` +
            `${result.tally.blobsDeleted} blobs deleted, ${formatBytes(result.tally.bytesFreed)} freed.`,
    );
    await queryClient.invalidateQueries();
  }

  return (
    <QueryView query={query} isEmpty={() => false} empty={{ title: "", body: null }}>
      {(data) => (
        <>
          {canCollect ? (
            <div className="actions">
              <button
                type="button"
                className="primary"
                disabled={run.isPending}
                onClick={() => void runNow().catch(() => undefined)}
              >
                {run.isPending ? "Collecting…" : "Run collection now"}
              </button>
            </div>
          ) : null}
          {message ? (
            <p className="notice" role="status">
              {message}
            </p>
          ) : null}
          {run.error ? (
            <p className="form-error" role="alert">
              {run.error.message}
            </p>
          ) : null}
          <h2>Space held by retired snapshots</h2>
          <div className="stats">
            <div className="panel stat">
              <b>{data.retiredHeld.keptByPins.snapshots}</b>
              <span>kept by active pins · {formatBytes(data.retiredHeld.keptByPins.bytes)}</span>
            </div>
            <div className="panel stat">
              <b>{data.retiredHeld.releasedNextRun.snapshots}</b>
              <span>released at the next collection · {formatBytes(data.retiredHeld.releasedNextRun.bytes)}</span>
            </div>
            <div className="panel stat">
              <b>{data.retiredHeld.alreadyReleased.snapshots}</b>
              <span>already released · {formatBytes(data.retiredHeld.alreadyReleased.bytes)}</span>
            </div>
          </div>
          <h2>Layers</h2>
          <div className="stats">
            {["available", "deleting", "deleted"].map((state) => {
              const group = data.layersByState.find((l) => l.state === state);
              return (
                <div className="panel stat" key={state}>
                  <b>{group?.count ?? 0}</b>
                  <span>
                    {state} · {formatBytes(group?.bytes ?? 0)}
                  </span>
                </div>
              );
            })}
            <div className="panel stat">
              <b>{data.pendingDeletion.unreachable}</b>
              <span>unreachable, taken by the next run · {formatBytes(data.pendingDeletion.unreachableBytes)}</span>
            </div>
          </div>
          <h2>Layers pending deletion</h2>
          {data.pendingDeletion.layers.length === 0 ? (
            <p className="panel status">No layer is waiting: every available layer is reachable from some head.</p>
          ) : (
            <div className="panel">
              <table>
                <thead>
                  <tr>
                    <th>Layer</th>
                    <th>Kind</th>
                    <th>State</th>
                    <th>Size</th>
                    <th>Created</th>
                    <th>Marked</th>
                  </tr>
                </thead>
                <tbody>
                  {data.pendingDeletion.layers.map((l) => (
                    <tr key={l.uuid}>
                      <td>
                        <ShortId id={l.uuid} />
                      </td>
                      <td>{l.kind}</td>
                      <td>
                        <StateBadge state={l.state === "deleting" ? "deleting" : "unreachable"} />
                      </td>
                      <td>{formatBytes(l.sizeBytes)}</td>
                      <td>
                        <When at={l.createdAt} />
                      </td>
                      <td>
                        <When at={l.deletingAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2>Collection runs</h2>
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
                    <th>By</th>
                    <th>Heads released</th>
                    <th>Layers deleted</th>
                    <th>Blobs deleted</th>
                    <th>Freed</th>
                    <th>Error</th>
                  </tr>
                </thead>
                <tbody>
                  {data.runs.map((r) => (
                    <tr key={r.id}>
                      <td>
                        <When at={r.startedAt} />
                      </td>
                      <td>
                        <When at={r.finishedAt} />
                      </td>
                      <td>
                        <StateBadge state={r.status} />
                      </td>
                      <td>{r.startedBy ?? "—"}</td>
                      <td>{r.headsReleased}</td>
                      <td>{r.layersDeleted}</td>
                      <td>{r.blobsDeleted}</td>
                      <td>{formatBytes(r.bytesFreed)}</td>
                      <td>{r.errorCode ?? "—"}</td>
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
