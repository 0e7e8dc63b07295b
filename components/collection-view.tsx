"use client";
// The garbage-collection page: the worker's schedule; for admins, a dry run that says what a
// collection would delete and free, then a confirmation naming those figures before the real
// run, whose figures are shown beside the preview's; the run log of dry and real runs.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import { useState } from "react";
import type { AppRouter } from "~/server/trpc/root.ts";
import { Dialog } from "./dialog.tsx";
import { PagedFooter, nextCursor, usePagedQuery } from "./paging.tsx";
import { useTRPC } from "./trpc.tsx";
import { QueryView, ShortId, StateBadge, When, formatBytes } from "./query-view.tsx";
import { useCan } from "./viewer.tsx";

type CollectResult = inferRouterOutputs<AppRouter>["dashboard"]["runCollection"];
type Finished = Extract<CollectResult, { status: "finished" | "failed" }>;
type Tally = Finished["tally"];

/** What a run deletes and frees, kind by kind, as the preview, the dialog and the result name it. */
const FIGURES: { key: keyof Tally; label: string; bytes?: keyof Tally }[] = [
  { key: "pinsExpired", label: "Expired pins closed" },
  { key: "snapshotsReleased", label: "Retired snapshots released" },
  { key: "headsReleased", label: "Heads released" },
  { key: "layersDeleted", label: "Layers deleted", bytes: "layerBytes" },
  { key: "blobsDeleted", label: "Blobs deleted", bytes: "bytesFreed" },
  { key: "uploadsAbandoned", label: "Abandoned uploads reclaimed" },
];

const sameFigures = (a: Tally, b: Tally) =>
  FIGURES.every((f) => a[f.key] === b[f.key] && (!f.bytes || a[f.bytes] === b[f.bytes]));

function Figure({ tally, figure }: { tally: Tally; figure: (typeof FIGURES)[number] }) {
  return (
    <>
      {tally[figure.key]}
      {figure.bytes ? ` (${formatBytes(tally[figure.bytes])})` : ""}
    </>
  );
}

/** The figures of a dry run, and of the real run beside them once it ran. */
function FiguresTable({ preview, run }: { preview: Finished; run: Finished | null }) {
  return (
    <table className="figures" data-testid="gc-figures">
      <thead>
        <tr>
          <th>What</th>
          <th>Dry run (preview)</th>
          {run ? <th>Real run</th> : null}
        </tr>
      </thead>
      <tbody>
        {FIGURES.map((f) => (
          <tr key={f.key}>
            <th scope="row">{f.label}</th>
            <td>
              <Figure tally={preview.tally} figure={f} />
            </td>
            {run ? (
              <td>
                <Figure tally={run.tally} figure={f} />
              </td>
            ) : null}
          </tr>
        ))}
        <tr>
          <th scope="row">Space freed</th>
          <td>
            <b>{formatBytes(preview.tally.bytesFreed)}</b>
          </td>
          {run ? (
            <td>
              <b>{formatBytes(run.tally.bytesFreed)}</b>
            </td>
          ) : null}
        </tr>
      </tbody>
    </table>
  );
}

function summary(t: Tally): string {
  const n = (count: number, one: string) => `${count} ${one}${count === 1 ? "" : "s"}`;
  return (
    `${n(t.snapshotsReleased, "retired snapshot")} released, ${n(t.layersDeleted, "layer")} ` +
    `(${formatBytes(t.layerBytes)}) and ${n(t.blobsDeleted, "blob")} deleted, ${formatBytes(t.bytesFreed)} freed`
  );
}

function duration(ms: number | null): string {
  if (ms === null) return "—";
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function every(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

function Schedule({ schedule }: { schedule: Overview["schedule"] }) {
  return (
    <div className="panel schedule" data-testid="gc-schedule">
      <h2>Schedule</h2>
      {schedule.intervalSeconds === 0 || !schedule.nextRunAt ? (
        <p>Scheduled collection is off (STRATA_GC_INTERVAL_SECONDS=0): collections run only when someone starts one.</p>
      ) : (
        <dl className="facts">
          <dt>Every</dt>
          <dd>
            {every(schedule.intervalSeconds)}{" "}
            <span className="muted">
              (
              {schedule.source === "worker"
                ? "as the workers schedule it"
                : "this server's setting; no worker has scheduled a run yet"}
              )
            </span>
          </dd>
          <dt>Next run</dt>
          <dd>
            <When at={schedule.nextRunAt} /> <span className="muted">(by whichever worker is running then)</span>
          </dd>
          <dt>Last scheduled</dt>
          <dd>
            {schedule.lastScheduled ? (
              <>
                <When at={schedule.lastScheduled.offeredAt} /> · job {schedule.lastScheduled.state}
                {schedule.lastScheduled.worker ? ` · worker ${schedule.lastScheduled.worker}` : ""}
              </>
            ) : (
              "never"
            )}
          </dd>
        </dl>
      )}
    </div>
  );
}

type Overview = inferRouterOutputs<AppRouter>["dashboard"]["collection"];

export function CollectionView() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const query = useQuery(trpc.dashboard.collection.queryOptions());
  const canCollect = useCan("collect");
  const run = useMutation(trpc.dashboard.runCollection.mutationOptions());
  const [preview, setPreview] = useState<Finished | null>(null);
  const [result, setResult] = useState<Finished | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [message, setMessage] = useState<string | null>(null);

  async function dryRun(): Promise<Finished | null> {
    setMessage(null);
    setResult(null);
    const out = await run.mutateAsync({ dryRun: true });
    await queryClient.invalidateQueries();
    if (out.status === "skipped") {
      setMessage("A collection is running now; preview again once it has finished.");
      return null;
    }
    setPreview(out);
    if (out.status === "failed") setMessage(`The dry run failed (${out.errorCode}).`);
    return out.status === "finished" ? out : null;
  }

  async function openConfirmation() {
    const fresh = preview ?? (await dryRun());
    if (fresh) setConfirming(true);
  }

  async function collect() {
    setConfirming(false);
    setMessage(null);
    const out = await run.mutateAsync({ dryRun: false });
    await queryClient.invalidateQueries();
    if (out.status === "skipped") {
      setMessage("A collection is already running; nothing was started.");
      return;
    }
    setResult(out);
    if (out.status === "failed") setMessage(`The collection failed (${out.errorCode}).`);
  }

  return (
    <QueryView query={query} isEmpty={() => false} empty={{ title: "", body: null }}>
      {(data) => (
        <>
          <Schedule schedule={data.schedule} />
          {canCollect ? (
            <div className="actions">
              <button type="button" disabled={run.isPending} onClick={() => void dryRun().catch(() => undefined)}>
                {run.isPending && !confirming ? "Working…" : "Preview a collection (dry run)"}
              </button>
              <button
                type="button"
                className="primary"
                disabled={run.isPending}
                onClick={() => void openConfirmation().catch(() => undefined)}
              >
                Run collection…
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
          {preview ? (
            <section className="panel" aria-labelledby="gc-preview-title" data-testid="gc-preview">
              <h2 id="gc-preview-title">{result ? "Run and preview" : "What a collection would do now"}</h2>
              <p className="muted">
                Dry run <When at={preview.startedAt} />: computed like a real run and rolled back, so nothing changed.
              </p>
              <FiguresTable preview={preview} run={result} />
              {result ? (
                <p className="notice" role="status" data-testid="gc-agreement">
                  {result.status !== "finished"
                    ? "The run did not finish; what it did is in the run log."
                    : sameFigures(preview.tally, result.tally)
                      ? `The run did what the preview said: ${summary(result.tally)}.`
                      : `The run differs from the preview (the catalog changed in between): ${summary(result.tally)}.`}
                </p>
              ) : null}
            </section>
          ) : null}
          <Dialog
            open={confirming && preview !== null}
            title="Run garbage collection?"
            onClose={() => setConfirming(false)}
            description="Collection deletes what no ready snapshot, active pin or recent upload can reach. It cannot be undone."
          >
            {preview ? (
              <>
                <p data-testid="gc-confirm-figures">
                  The dry run <When at={preview.startedAt} /> says what this run will do: {summary(preview.tally)}.
                </p>
                <FiguresTable preview={preview} run={null} />
                <div className="actions">
                  <button type="button" onClick={() => setConfirming(false)}>
                    Cancel
                  </button>
                  <button
                    type="button"
                    className="danger"
                    disabled={run.isPending}
                    onClick={() => void collect().catch(() => undefined)}
                  >
                    Delete and free {formatBytes(preview.tally.bytesFreed)}
                  </button>
                </div>
              </>
            ) : null}
          </Dialog>
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
          <RunLog />
        </>
      )}
    </QueryView>
  );
}

function RunLog() {
  const trpc = useTRPC();
  const paged = usePagedQuery(
    25,
    (limit) => trpc.dashboard.collectionRuns.infiniteQueryOptions({ limit }, { getNextPageParam: nextCursor }),
    (p) => p.runs,
  );
  return (
    <>
      <h2>Run log</h2>
      <QueryView
        query={paged.list}
        isEmpty={(r) => r.length === 0}
        empty={{
          title: "No collection runs yet",
          body: (
            <p>
              Collection frees layers and blobs that no ready snapshot, active pin or recent upload can reach. Every
              run, dry or real, is listed here with who started it, what it deleted and what it freed.
            </p>
          ),
        }}
      >
        {(runs) => (
          <div className="panel" data-testid="gc-run-log">
            <div className="table-scroll">
              <table>
                <thead>
                  <tr>
                    <th>Started</th>
                    <th>Run</th>
                    <th>By</th>
                    <th>Status</th>
                    <th>Duration</th>
                    <th>Snapshots released</th>
                    <th>Layers deleted</th>
                    <th>Blobs deleted</th>
                    <th>Freed</th>
                    <th>Error</th>
                  </tr>
                </thead>
                <tbody>
                  {runs.map((r) => (
                    <tr key={r.id} data-run-id={r.id}>
                      <td>
                        <When at={r.startedAt} />
                      </td>
                      <td>{r.dryRun ? "dry run" : "real"}</td>
                      <td>
                        {r.startedBy}
                        <div className="muted">{r.trigger}</div>
                      </td>
                      <td>
                        <StateBadge state={r.status} />
                      </td>
                      <td>{duration(r.durationMs)}</td>
                      <td>{r.snapshotsReleased}</td>
                      <td>
                        {r.layersDeleted} ({formatBytes(r.layerBytes)})
                      </td>
                      <td>{r.blobsDeleted}</td>
                      <td>{formatBytes(r.bytesFreed)}</td>
                      <td>{r.errorCode ?? "—"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <PagedFooter paged={paged} shown={runs.length} />
          </div>
        )}
      </QueryView>
    </>
  );
}
