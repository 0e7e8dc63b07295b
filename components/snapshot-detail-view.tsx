"use client";
// One snapshot: key, state history, manifest, validation evidence, heads and the layer forest
// beneath them, pins, the restores it seeded, the work contexts forked from it, and retirement
// and forking for operators.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState, type ReactNode } from "react";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "~/server/trpc/root.ts";
import { QueryView, ShortId, StateBadge, When, formatBytes } from "./query-view.tsx";
import { ForkDialog } from "./fork-dialog.tsx";
import { RetireDialog } from "./retire-dialog.tsx";
import { PinHoldCells } from "./pin-cells.tsx";
import { useTRPC } from "./trpc.tsx";
import { useCan } from "./viewer.tsx";

type Detail = inferRouterOutputs<AppRouter>["dashboard"]["snapshot"];
type ForestLayer = Detail["forest"][number];

const RETIRED = new Set(["retired", "deleting", "deleted"]);

function Section({ title, children, id }: { title: string; children: ReactNode; id: string }) {
  return (
    <section className="panel section" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children ?? "—"}</dd>
    </>
  );
}

/** Only a ready checkpoint of an active lineage is forked (the server refuses anything else). */
function forkable(s: Detail): boolean {
  return s.class === "checkpoint" && s.state === "ready" && s.lineage?.state === "active";
}

function NeighbourLink({ s }: { s: { id: string; class: string; sequence: number | null; state: string } | null }) {
  if (!s) return <>—</>;
  return (
    <>
      <Link href={`/snapshots/${s.id}`}>{s.class === "checkpoint" ? `#${s.sequence}` : <ShortId id={s.id} />}</Link>{" "}
      <StateBadge state={s.state} />
    </>
  );
}

export function SnapshotDetailView({ snapshotId }: { snapshotId: string }) {
  const trpc = useTRPC();
  const query = useQuery(trpc.dashboard.snapshot.queryOptions({ snapshotId }));
  const canRetire = useCan("retire");
  const canFork = useCan("fork");
  const [retiring, setRetiring] = useState<{ kind: "snapshot" | "lineage"; id: string; label: string } | null>(null);
  const [forking, setForking] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  return (
    <QueryView query={query} isEmpty={() => false} empty={{ title: "", body: null }}>
      {(s) => (
        <>
          <h1>
            {s.class === "baseline" ? "Baseline" : "Checkpoint"} {s.alias ?? <ShortId id={s.id} />}{" "}
            <StateBadge state={s.state} />
          </h1>
          <p className="lede">
            <Link href={`/repositories/${s.repository.id}`}>{s.repository.name}</Link> ·{" "}
            {s.class === "baseline"
              ? `${s.canonicalRef} at ${s.canonicalCommit?.slice(0, 12) ?? "?"}`
              : `work context ${s.workContextId}, checkpoint #${s.sequence}`}{" "}
            · agent {s.agent.name}
          </p>
          {message ? (
            <p className="notice" role="status">
              {message}
            </p>
          ) : null}
          {canFork || canRetire ? (
            <div className="actions">
              {canFork && forkable(s) ? (
                <button type="button" onClick={() => setForking(true)}>
                  Fork…
                </button>
              ) : null}
              {canRetire ? (
                <button
                  type="button"
                  className="danger"
                  disabled={RETIRED.has(s.state)}
                  onClick={() => setRetiring({ kind: "snapshot", id: s.id, label: `snapshot ${s.id.slice(0, 8)}` })}
                >
                  Retire snapshot…
                </button>
              ) : null}
              {canRetire && s.lineage && s.lineage.state === "active" ? (
                <button
                  type="button"
                  className="danger"
                  onClick={() =>
                    setRetiring({
                      kind: "lineage",
                      id: s.lineage!.id,
                      label: `work context ${s.lineage!.workContextId}`,
                    })
                  }
                >
                  Retire lineage…
                </button>
              ) : null}
            </div>
          ) : null}

          <div className="detail-grid">
            <Section title="Key" id="key">
              <dl className="facts">
                <Fact label="Class">{s.class}</Fact>
                <Fact label="Snapshot id">
                  <span className="mono">{s.id}</span>
                </Fact>
                <Fact label="Backend">{s.backendKind}</Fact>
                <Fact label="Base image">
                  <span className="mono">{s.baseImage}</span>
                </Fact>
                {s.class === "baseline" ? (
                  <>
                    <Fact label="Canonical ref">
                      <span className="mono">{s.canonicalRef}</span>
                    </Fact>
                    <Fact label="Canonical commit">
                      <span className="mono">{s.canonicalCommit}</span>
                    </Fact>
                  </>
                ) : (
                  <>
                    <Fact label="Work context">
                      <span className="mono">{s.workContextId}</span>
                    </Fact>
                    <Fact label="Lineage">
                      {s.lineage ? (
                        <>
                          <ShortId id={s.lineage.id} /> <StateBadge state={s.lineage.state} />
                          {s.lineage.retiredReason ? ` (${s.lineage.retiredReason})` : ""} · {s.lineage.checkpointCount}{" "}
                          checkpoints
                        </>
                      ) : null}
                    </Fact>
                    <Fact label="Began from">
                      {s.lineage?.originSnapshotId ? (
                        <Link href={`/snapshots/${s.lineage.originSnapshotId}`}>
                          <ShortId id={s.lineage.originSnapshotId} />
                        </Link>
                      ) : (
                        "a cold start"
                      )}
                    </Fact>
                    {s.lineage?.forkedFromId ? (
                      <Fact label="Forked from">
                        <Link href={`/snapshots/${s.lineage.forkedFromId}`}>
                          <ShortId id={s.lineage.forkedFromId} />
                        </Link>
                        {s.lineage.forkReason ? ` — ${s.lineage.forkReason}` : ""}
                      </Fact>
                    ) : null}
                    <Fact label="Sequence">{s.sequence}</Fact>
                    <Fact label="Predecessor">
                      <NeighbourLink s={s.predecessor} />
                      {s.predecessor || s.lineage?.originSnapshotId ? (
                        <>
                          {" · "}
                          <Link href={`/diff?from=${s.predecessor?.id ?? s.lineage?.originSnapshotId}&to=${s.id}`}>
                            Compare with predecessor
                          </Link>
                        </>
                      ) : null}
                    </Fact>
                    <Fact label="Successors">
                      {s.successors.length === 0
                        ? "none"
                        : s.successors.map((n) => (
                            <span key={n.id}>
                              <NeighbourLink s={n} />{" "}
                            </span>
                          ))}
                    </Fact>
                  </>
                )}
                <Fact label="Degraded from">
                  <NeighbourLink s={s.degradedFrom} />
                </Fact>
                <Fact label="Captured in">
                  {s.sourceWorkspace ? (
                    <span className="mono">
                      {s.sourceWorkspace} on {s.sourceHost}
                    </span>
                  ) : null}
                </Fact>
                <Fact label="Size">{formatBytes(s.sizeBytes)}</Fact>
              </dl>
            </Section>

            <Section title="Artifact" id="artifact">
              <dl className="facts">
                <Fact label="Minted by">
                  <span className="mono">{s.artifact.kind}</span>
                </Fact>
                <Fact label="Reference">
                  {s.artifact.ref ? <ShortId id={s.artifact.ref} /> : "recorded before artifacts"}
                </Fact>
                <Fact label="Backend says">
                  {s.artifact.deletedAt ? (
                    <>
                      deleted <When at={s.artifact.deletedAt} />
                    </>
                  ) : s.artifact.described ? (
                    s.artifact.described.exists ? (
                      s.artifact.described.summary
                    ) : (
                      "gone from the store"
                    )
                  ) : (
                    ("problem" in s.artifact && s.artifact.problem) || "—"
                  )}
                </Fact>
                {s.artifact.reclaimError ? (
                  <Fact label="Reclaim">
                    {s.artifact.reclaimAttempts} failed attempt(s), retried by the next sweep: {s.artifact.reclaimError}
                  </Fact>
                ) : null}
                <Fact label="Dependency cache">
                  {s.dependencyCache ? (
                    <>
                      {s.dependencyCache.paths.join(", ")} ({formatBytes(s.dependencyCache.sizeBytes)}), added to
                      restores of this envHash
                    </>
                  ) : (
                    "none for this envHash: a restored task installs its dependencies"
                  )}
                </Fact>
              </dl>
            </Section>

            <Section title="State history" id="history">
              <ol className="timeline">
                {s.history.map((e) => (
                  <li key={`${e.state}-${new Date(e.at).getTime()}`}>
                    <When at={e.at} /> <StateBadge state={e.state} />
                    {e.note ? <span className="muted"> — {e.note}</span> : null}
                  </li>
                ))}
              </ol>
              {RETIRED.has(s.state) && s.retiredReason ? <p>Retired because: {s.retiredReason}</p> : null}
            </Section>
          </div>

          <ManifestSection s={s} />

          {s.class === "baseline" ? (
            <Section title="Baseline validation evidence" id="evidence">
              <Evidence value={s.validation} />
            </Section>
          ) : null}

          <Section title="Heads and the layer forest beneath them" id="forest">
            <LayerForest layers={s.forest} truncated={s.forestTruncated} />
          </Section>

          <Section title="Pins" id="pins">
            {s.pins.length === 0 ? (
              <p>No pin has ever held this snapshot.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th>Pin</th>
                    <th>Status</th>
                    <th>Holder</th>
                    <th>Purpose</th>
                    <th>Since</th>
                    <th>Expires</th>
                    <th>Released</th>
                  </tr>
                </thead>
                <tbody>
                  {s.pins.map((p) => (
                    <tr key={`${p.agentId}/${p.pinId}`}>
                      <td className="mono">{p.pinId}</td>
                      <td>
                        <StateBadge state={p.active ? "active" : p.released ? "released" : "expired"} />
                      </td>
                      <PinHoldCells pin={p} />
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>

          <Section title="Restores it seeded" id="restores">
            {s.restores.length === 0 ? (
              <p>No workspace was restored from this snapshot.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th>Restore</th>
                    <th>Agent</th>
                    <th>Rung</th>
                    <th>Outcome</th>
                    <th>Work context</th>
                    <th>Workspace</th>
                    <th>Started</th>
                  </tr>
                </thead>
                <tbody>
                  {s.restores.map((r) => (
                    <tr key={r.id}>
                      <td>
                        <ShortId id={r.id} />
                      </td>
                      <td>{r.agent.name}</td>
                      <td>{r.rung}</td>
                      <td>
                        <StateBadge state={r.outcome} />
                        {r.discardedAt ? " (discarded)" : ""}
                      </td>
                      <td className="mono">{r.workContextId}</td>
                      <td className="mono">
                        {r.workspace} on {r.host}
                      </td>
                      <td>
                        <When at={r.createdAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {s.originOf.length > 0 ? (
              <p>
                Lineages that began from it:{" "}
                {s.originOf.map((l) => (
                  <span key={l.id} className="mono">
                    {l.workContextId} ({l.state}){" "}
                  </span>
                ))}
              </p>
            ) : null}
            {s.degradedWork.length > 0 ? (
              <p>
                Captures of worktrees it restored only partly:{" "}
                {s.degradedWork.map((d) => (
                  <span key={d.id}>
                    <NeighbourLink s={d} />{" "}
                  </span>
                ))}
              </p>
            ) : null}
          </Section>

          {s.forks.length > 0 ? (
            <Section title="Work contexts forked from it" id="forks">
              <table>
                <thead>
                  <tr>
                    <th>Work context</th>
                    <th>Lineage</th>
                    <th>Checkpoints</th>
                    <th>Reason</th>
                    <th>Forked by</th>
                    <th>Forked</th>
                  </tr>
                </thead>
                <tbody>
                  {s.forks.map((f) => (
                    <tr key={f.id}>
                      <td className="mono">{f.workContextId}</td>
                      <td>
                        <ShortId id={f.id} /> <StateBadge state={f.state} />
                      </td>
                      <td>{f.checkpointCount}</td>
                      <td>{f.forkReason}</td>
                      <td className="mono">{f.forkedBy}</td>
                      <td>
                        <When at={f.createdAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </Section>
          ) : null}

          {s.audit.length > 0 ? (
            <Section title="Audit events" id="audit">
              <ul className="compact">
                {s.audit.map((e) => (
                  <li key={e.id}>
                    <When at={e.at} /> {e.action} by {e.actorType} {e.reason ? `— ${e.reason}` : ""}
                  </li>
                ))}
              </ul>
            </Section>
          ) : null}

          {retiring ? (
            <RetireDialog
              kind={retiring.kind}
              id={retiring.id}
              label={retiring.label}
              onClose={() => setRetiring(null)}
              onRetired={setMessage}
            />
          ) : null}
          {forking ? (
            <ForkDialog
              snapshotId={s.id}
              label={`checkpoint #${s.sequence} of ${s.workContextId}`}
              onClose={() => setForking(false)}
              onForked={setMessage}
            />
          ) : null}
        </>
      )}
    </QueryView>
  );
}

function ManifestSection({ s }: { s: Detail }) {
  const m = s.manifest;
  const full = m.full;
  return (
    <Section title="Manifest" id="manifest">
      <dl className="facts">
        <Fact label="Branch">{m.branch ?? "detached HEAD"}</Fact>
        <Fact label="HEAD">
          <span className="mono">{m.head}</span>
        </Fact>
        <Fact label="Tree">
          <span className="mono">{m.tree}</span>
        </Fact>
        <Fact label="Record">
          {full ? (
            <span className="mono" title={m.digest ?? ""}>
              sha256 {m.digest?.slice(0, 16)}… ({m.source === "manifest-layer" ? "manifest layer" : "stored blob"})
            </span>
          ) : (
            "The full capture record is not stored in this catalog; the fields above are the catalog's columns."
          )}
        </Fact>
        {full ? (
          <>
            <Fact label="Root">
              <span className="mono">{full.root}</span>
            </Fact>
            <Fact label="Remotes">
              {full.remotes.length === 0
                ? "none"
                : full.remotes.map((r) => (
                    <div key={r.name} className="mono">
                      {r.name} {r.url}
                    </div>
                  ))}
            </Fact>
            <Fact label="envHash">
              <span className="mono">{full.envHash ?? "none"}</span>
              {full.envFiles.length > 0 ? ` (${full.envFiles.join(", ")})` : ""}
            </Fact>
            <Fact label="Filters">
              autocrlf {full.filters.autocrlf ?? "unset"}, eol {full.filters.eol ?? "unset"}
              {full.filters.drivers.length > 0
                ? `; drivers ${full.filters.drivers.map((d) => `${d.name}${d.configured ? "" : " (not configured)"}`).join(", ")}`
                : ""}
            </Fact>
            <Fact label="Degraded from">{full.degradedFrom ? <ShortId id={full.degradedFrom} /> : "—"}</Fact>
            <Fact label="Captured at">
              <When at={full.capturedAt} />
            </Fact>
          </>
        ) : null}
      </dl>
      {full ? (
        <>
          <h3>Patch chain</h3>
          {full.patches.length === 0 ? (
            <p>No patches: the tree is HEAD&apos;s.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>#</th>
                  <th>Layer</th>
                  <th>Kind</th>
                  <th>Applies to</th>
                  <th>Produces tree</th>
                  <th>Size</th>
                </tr>
              </thead>
              <tbody>
                {full.patches.map((p, i) => (
                  <tr key={p.uuid}>
                    <td>{i + 1}</td>
                    <td>
                      <ShortId id={p.uuid} />
                    </td>
                    <td>{p.kind}</td>
                    <td>
                      <ShortId id={p.base} />
                    </td>
                    <td>
                      <ShortId id={p.tree} />
                    </td>
                    <td>{formatBytes(p.size)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h3>Bundle of unpushed commits</h3>
          {full.bundle ? (
            <p>
              {full.bundle.commits.length} commit{full.bundle.commits.length === 1 ? "" : "s"} (
              {formatBytes(full.bundle.size)}), newest <ShortId id={full.bundle.commits[0]} />
            </p>
          ) : full.bundleLeftOut.length > 0 ? (
            <BundleLeftOut head={full.head} entries={full.bundleLeftOut} />
          ) : (
            <p>None: every commit was pushed.</p>
          )}
          <h3>Omitted</h3>
          {full.omittedTotal === 0 ? (
            <p>Nothing was left out.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Path</th>
                  <th>Reason</th>
                  <th>Detail</th>
                </tr>
              </thead>
              <tbody>
                {full.omitted.map((o) => (
                  <tr key={`${o.path}-${o.reason}`}>
                    <td className="mono">{o.path}</td>
                    <td>{o.reason}</td>
                    <td>{o.detail ?? "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {full.omittedTotal > full.omitted.length ? (
            <p className="muted">and {full.omittedTotal - full.omitted.length} more</p>
          ) : null}
        </>
      ) : null}
    </Section>
  );
}

const BUNDLE_REASONS: Record<string, string> = {
  "unpushed-denied": "an unpushed commit touches a path on the secret deny-list",
  "bundle-too-large": "the unpushed history is larger than the snapshot size limit",
};

/**
 * The bundle capture left out, and why. The bundle carries every unpushed commit up to HEAD, so
 * all of them are missing from a restore; each entry names the commits that caused it.
 */
function BundleLeftOut({
  head,
  entries,
}: {
  head: string | null;
  entries: { path: string; reason: string; detail?: string; commits?: string[] }[];
}) {
  return (
    <div data-testid="bundle-left-out">
      <p>
        <b>Left out:</b> the bundle of unpushed commits (every commit up to HEAD <ShortId id={head} /> that no remote
        has), so a restore of this snapshot lacks them until they are pushed.
      </p>
      <ul>
        {entries.map((e) => (
          <li key={`${e.reason}-${e.path}`}>
            Because {BUNDLE_REASONS[e.reason] ?? e.reason}
            {e.reason === "bundle-too-large" ? null : (
              <>
                : <span className="mono">{e.path}</span>
              </>
            )}
            {e.detail ? <span className="muted"> ({e.detail})</span> : null}
            {e.commits && e.commits.length > 0 ? (
              <>
                {e.reason === "bundle-too-large" ? `; ${e.commits.length} commits: ` : ", in commit "}
                {e.commits.map((c, k) => (
                  <span key={c}>
                    {k > 0 ? ", " : ""}
                    <ShortId id={c} />
                  </span>
                ))}
              </>
            ) : null}
            .
          </li>
        ))}
      </ul>
    </div>
  );
}

function Evidence({ value }: { value: unknown }) {
  if (!value || typeof value !== "object") return <p>No evidence recorded.</p>;
  const entries = Object.entries(value as Record<string, unknown>);
  return (
    <dl className="facts">
      {entries.map(([key, v]) => (
        <Fact key={key} label={key}>
          <span className="mono">{typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)}</span>
        </Fact>
      ))}
    </dl>
  );
}

function LayerForest({ layers, truncated }: { layers: ForestLayer[]; truncated: boolean }) {
  if (layers.length === 0) {
    return <p>No heads: this snapshot&apos;s content is not registered as layers, or was released.</p>;
  }
  const children = new Map<string | null, ForestLayer[]>();
  const known = new Set(layers.map((l) => l.uuid));
  for (const layer of layers) {
    const parent = layer.parentUuid && known.has(layer.parentUuid) ? layer.parentUuid : null;
    children.set(parent, [...(children.get(parent) ?? []), layer]);
  }
  const render = (parent: string | null): ReactNode => (
    <ul className="forest">
      {(children.get(parent) ?? []).map((l) => (
        <li key={l.uuid}>
          <span className="mono">{l.uuid.slice(0, 8)}</span> {l.kind} · {formatBytes(l.sizeBytes)}{" "}
          <StateBadge state={l.state} />
          {l.isHead ? <span className="badge head">head</span> : null}
          {l.sharedWith > 0 ? (
            <span className="muted">
              {" "}
              · head of {l.sharedWith} other snapshot{l.sharedWith === 1 ? "" : "s"}
            </span>
          ) : null}
          {children.has(l.uuid) ? render(l.uuid) : null}
        </li>
      ))}
    </ul>
  );
  return (
    <>
      <p className="muted">Roots first; each layer&apos;s children below it. A head protects everything above it.</p>
      {render(null)}
      {truncated ? <p className="muted">The forest is larger than shown.</p> : null}
    </>
  );
}
