"use client";
import Link from "next/link";
import { useState } from "react";
import { PagedFooter, nextCursor, usePagedQuery } from "./paging.tsx";
import { useTRPC } from "./trpc.tsx";
import { QueryView, ShortId, When } from "./query-view.tsx";

type Context = { repositoryId: string; repositoryName: string; workContextId: string | null } | null;

function Subject({ type, id, context }: { type: string; id: string; context: Context }) {
  if (type === "snapshot") {
    return (
      <>
        snapshot{" "}
        <Link href={`/snapshots/${id}`}>
          <ShortId id={id} />
        </Link>
      </>
    );
  }
  return (
    <>
      {type} <ShortId id={id} />
      {context ? (
        <div className="muted">
          {context.workContextId ? (
            <Link
              href={`/repositories/${context.repositoryId}?workContext=${encodeURIComponent(context.workContextId)}`}
            >
              {context.workContextId}
            </Link>
          ) : null}{" "}
          in {context.repositoryName}
        </div>
      ) : null}
    </>
  );
}

/** The details worth a person's eye: the snapshots a retirement took, a released pin (the note is the why). */
function detailText(details: unknown): string | null {
  if (!details || typeof details !== "object") return null;
  const d = details as Record<string, unknown>;
  const parts: string[] = [];
  if (Array.isArray(d.retiredSnapshotIds)) parts.push(`${d.retiredSnapshotIds.length} snapshot(s) retired`);
  if (typeof d.releasedPinId === "string") parts.push("pin released");
  if (typeof d.activePins === "number" && d.activePins > 0) parts.push(`${d.activePins} active pin(s) keep it`);
  if (typeof d.from === "string") parts.push(`was ${d.from}`);
  if (typeof d.status === "string") parts.push(`run ${d.status}`);
  return parts.length > 0 ? parts.join("; ") : null;
}

export function AuditLogView() {
  const trpc = useTRPC();
  const [action, setAction] = useState("");
  const [actorType, setActorType] = useState<"" | "user" | "agent" | "system">("");
  const paged = usePagedQuery(
    50,
    (limit) =>
      trpc.dashboard.audit.infiniteQueryOptions(
        { limit, action: action || undefined, actorType: actorType || undefined },
        { getNextPageParam: nextCursor },
      ),
    (p) => p.items,
  );
  const actions = paged.firstPage?.actions ?? [];
  return (
    <>
      <form className="filters" aria-label="Audit log filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Action
          <select value={action} onChange={(e) => setAction(e.target.value)}>
            <option value="">All actions</option>
            {actions.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        <label>
          Who
          <select value={actorType} onChange={(e) => setActorType(e.target.value as typeof actorType)}>
            <option value="">Everyone</option>
            <option value="user">Dashboard users</option>
            <option value="agent">Agents</option>
            <option value="system">The system</option>
          </select>
        </label>
      </form>
      <QueryView
        query={paged.list}
        isEmpty={(r) => r.length === 0}
        empty={{
          title: "Nothing in the audit log yet",
          body: (
            <p>
              Every retirement, discarded restore and collection started from the dashboard is recorded here with who
              did it, when and why.
            </p>
          ),
        }}
      >
        {(items) => (
          <div className="panel">
            <table>
              <thead>
                <tr>
                  <th>When</th>
                  <th>Who</th>
                  <th>What</th>
                  <th>Subject</th>
                  <th>Why</th>
                  <th>Details</th>
                </tr>
              </thead>
              <tbody>
                {items.map((e) => (
                  <tr key={e.id}>
                    <td>
                      <When at={e.at} />
                    </td>
                    <td>{e.actor}</td>
                    <td>
                      <span className="mono">{e.action}</span>
                      {e.kind ? <div className="muted">{e.kind}</div> : null}
                    </td>
                    <td>
                      <Subject type={e.subjectType} id={e.subjectId} context={e.context} />
                    </td>
                    <td data-testid="audit-why">{e.why ?? "—"}</td>
                    <td>{detailText(e.details) ?? "—"}</td>
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
