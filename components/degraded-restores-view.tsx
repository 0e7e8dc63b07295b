"use client";
// The queue of restores that came back degraded or unrestored: what each restored, what is
// missing, the next step; support (and admins) discard one with a reason.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import Link from "next/link";
import { useState, type FormEvent } from "react";
import type { AppRouter } from "~/server/trpc/root.ts";
import { Dialog } from "./dialog.tsx";
import { QueryView, ShortId, StateBadge, When } from "./query-view.tsx";
import { PagedFooter, usePagedQuery } from "./paging.tsx";
import { useTRPC } from "./trpc.tsx";
import { useCan } from "./viewer.tsx";

type Item = inferRouterOutputs<AppRouter>["restore"]["degraded"][number];

const SHOWN = 12;

function Listed({ title, items }: { title: string; items: string[] }) {
  if (items.length === 0) return null;
  return (
    <div>
      <h4>
        {title} ({items.length})
      </h4>
      <ul className="compact mono">
        {items.slice(0, SHOWN).map((i) => (
          <li key={i}>{i}</li>
        ))}
        {items.length > SHOWN ? <li className="muted">and {items.length - SHOWN} more</li> : null}
      </ul>
    </div>
  );
}

function NoticeCard({ item, onDiscard }: { item: Item; onDiscard?: (item: Item) => void }) {
  const n = item.notice;
  const missingNothing =
    n.missing.commits.length + n.missing.changeSets.length + n.missing.paths.length + n.missing.other.length === 0;
  return (
    <article className="panel notice-card" aria-labelledby={`restore-${item.id}`} data-testid="degraded-restore">
      <header>
        <h3 id={`restore-${item.id}`}>
          {item.repository.name} · {item.workContextId ?? "no work context"} <StateBadge state={item.outcome} />
        </h3>
        <p className="muted">
          Restore <ShortId id={item.id} /> by {item.agent.name} into <span className="mono">{item.workspace}</span> on{" "}
          {item.host}, <When at={item.reportedAt ?? item.createdAt} />. Rung {item.rung}
          {item.snapshot ? (
            <>
              {" "}
              from{" "}
              <Link href={`/snapshots/${item.snapshot.id}`}>
                {item.snapshot.class === "checkpoint" ? `checkpoint #${item.snapshot.sequence}` : "baseline"}
              </Link>
            </>
          ) : null}
          .
        </p>
      </header>
      <p className="summary">{n.summary}</p>
      <div className="notice-columns">
        <section>
          <h4>What was restored</h4>
          {item.outcome === "unrestored" ? (
            <p>Nothing: the worktree was not written.</p>
          ) : (
            <dl className="facts">
              <dt>Stage</dt>
              <dd>{n.holds.stage ?? "partial"}</dd>
              <dt>HEAD</dt>
              <dd className="mono">{n.holds.head?.slice(0, 12) ?? "—"}</dd>
              <dt>Tree</dt>
              <dd className="mono">{n.holds.tree?.slice(0, 12) ?? "—"}</dd>
              <dt>Basis</dt>
              <dd>{n.holds.basis ?? "—"}</dd>
            </dl>
          )}
        </section>
        <section>
          <h4>What is missing</h4>
          {missingNothing ? <p>The worker did not say.</p> : null}
          <Listed title="Commits" items={n.missing.commits} />
          <Listed title="Change sets" items={n.missing.changeSets} />
          <Listed title="Paths" items={n.missing.paths} />
          <Listed title="Other" items={n.missing.other} />
          {n.cause ? (
            <p>
              Cause: <span className="mono">{n.cause}</span>
              {n.causeMessage ? ` — ${n.causeMessage}` : ""}
            </p>
          ) : null}
        </section>
      </div>
      <p className="next-step">
        <strong>Next step:</strong> {n.nextStep}
      </p>
      {n.warnings.length > 0 ? (
        <ul className="compact">
          {n.warnings.map((w) => (
            <li key={`${w.kind}-${w.message}`}>
              {w.kind}: {w.message}
            </li>
          ))}
        </ul>
      ) : null}
      <footer>
        {item.discardedAt ? (
          <span>
            Discarded <When at={item.discardedAt} /> by {item.discardedByEmail}: {item.discardReason}
            {item.restoreTarget?.snapshotId ? (
              <>
                {" "}
                · restore target now{" "}
                <Link href={`/snapshots/${item.restoreTarget.snapshotId}`}>
                  <ShortId id={item.restoreTarget.snapshotId} />
                </Link>
              </>
            ) : null}
          </span>
        ) : (
          <span className="muted">
            {item.pin?.active ? (
              <>
                The original snapshot is kept until <When at={item.pin.expiresAt} /> (pin{" "}
                <span className="mono">{item.pin.pinId}</span>).
              </>
            ) : (
              "No active pin keeps the original snapshot."
            )}
          </span>
        )}
        {onDiscard && !item.discardedAt ? (
          <button type="button" className="danger" onClick={() => onDiscard(item)}>
            Discard…
          </button>
        ) : null}
      </footer>
    </article>
  );
}

export function DegradedRestoresView() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [status, setStatus] = useState<"open" | "discarded">("open");
  const paged = usePagedQuery(
    50,
    (limit) =>
      trpc.degradedRestore.list.infiniteQueryOptions(
        { status, limit },
        {
          // The list is plain: a full page may have more after its last item.
          getNextPageParam: (page) => {
            const last = page.at(-1);
            const at = last ? (status === "open" ? last.createdAt : last.discardedAt) : null;
            return page.length === limit && last && at ? { at, id: last.id } : undefined;
          },
        },
      ),
    (page) => page,
  );
  const canDiscard = useCan("discard");
  const [discarding, setDiscarding] = useState<Item | null>(null);
  const [reason, setReason] = useState("");
  const [message, setMessage] = useState<string | null>(null);
  const discard = useMutation(trpc.degradedRestore.discard.mutationOptions());

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (!discarding) return;
    await discard.mutateAsync({ restoreId: discarding.id, reason });
    setMessage(
      `Discarded the degraded restore of ${discarding.workContextId ?? discarding.workspace}; its pin was released.`,
    );
    setDiscarding(null);
    setReason("");
    await queryClient.invalidateQueries();
  }

  return (
    <>
      <div className="tabs" role="group" aria-label="Which notices">
        <button type="button" aria-pressed={status === "open"} onClick={() => setStatus("open")}>
          Open
        </button>
        <button type="button" aria-pressed={status === "discarded"} onClick={() => setStatus("discarded")}>
          Discarded
        </button>
      </div>
      {message ? (
        <p className="notice" role="status">
          {message}
        </p>
      ) : null}
      <QueryView
        query={paged.list}
        isEmpty={(rows) => rows.length === 0}
        empty={{
          title: status === "open" ? "No degraded restores waiting" : "Nothing discarded yet",
          body: (
            <p>
              When a restore cannot rebuild a snapshot exactly, the worker restores what it can and the restore is
              listed here with what is missing and what to do; its snapshot is kept for 30 days or until support
              discards it.
            </p>
          ),
        }}
      >
        {(rows) => (
          <>
            <div className="notices">
              {rows.map((item) => (
                <NoticeCard key={item.id} item={item} onDiscard={canDiscard ? setDiscarding : undefined} />
              ))}
            </div>
            <PagedFooter paged={paged} shown={rows.length} />
          </>
        )}
      </QueryView>
      <Dialog
        open={discarding !== null}
        title="Discard this degraded restore"
        onClose={() => {
          setDiscarding(null);
          discard.reset();
        }}
        description={
          <p>
            The partly restored worktree, as it is now, becomes its checkout&apos;s restore target; the pin that keeps
            the original snapshot for collection is released, so its content may be reclaimed. This is recorded in the
            audit log.
          </p>
        }
      >
        <form className="form" onSubmit={(e) => void submit(e).catch(() => undefined)}>
          <label>
            Reason (recorded in the audit log)
            <textarea
              name="reason"
              required
              minLength={3}
              maxLength={1000}
              rows={3}
              autoFocus
              value={reason}
              onChange={(e) => setReason(e.target.value)}
            />
          </label>
          {discard.error ? (
            <p className="form-error" role="alert">
              {discard.error.message}
            </p>
          ) : null}
          <div className="dialog-actions">
            <button
              type="button"
              onClick={() => {
                setDiscarding(null);
                discard.reset();
              }}
            >
              Cancel
            </button>
            <button type="submit" className="danger" disabled={discard.isPending}>
              {discard.isPending ? "Discarding…" : "Discard restore"}
            </button>
          </div>
        </form>
      </Dialog>
    </>
  );
}
