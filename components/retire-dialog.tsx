"use client";
// Retiring a snapshot or a lineage, behind a dialog that first says what will happen: which
// snapshots leave restore eligibility, which stay protected by pins, what collection may then
// reclaim. The reason goes to the audit log.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Dialog } from "./dialog.tsx";
import { PinHoldCells, PinId } from "./pin-cells.tsx";
import { ShortId, StateBadge, formatBytes } from "./query-view.tsx";
import { useTRPC } from "./trpc.tsx";

export function RetireDialog({
  kind,
  id,
  label,
  onClose,
  onRetired,
}: {
  kind: "snapshot" | "lineage";
  id: string;
  label: string;
  onClose: () => void;
  onRetired?: (message: string) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const preview = useQuery(trpc.dashboard.retirementPreview.queryOptions({ kind, id }));
  const [reason, setReason] = useState("");
  const retireLineage = useMutation(trpc.dashboard.retireLineage.mutationOptions());
  const retireSnapshot = useMutation(trpc.dashboard.retireSnapshot.mutationOptions());
  const pending = retireLineage.isPending || retireSnapshot.isPending;
  const error = retireLineage.error ?? retireSnapshot.error;
  const noun = kind === "lineage" ? "lineage" : "snapshot";

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (kind === "lineage") await retireLineage.mutateAsync({ lineageId: id, reason });
    else await retireSnapshot.mutateAsync({ snapshotId: id, reason });
    // Everything shown may have changed: graph, detail, pins, audit log, collection.
    await queryClient.invalidateQueries();
    onRetired?.(`Retired ${label}.`);
    onClose();
  }

  const p = preview.data;
  return (
    <Dialog
      open
      title={`Retire ${noun}: ${label}`}
      onClose={onClose}
      description={
        kind === "lineage"
          ? "Retiring a lineage ends its work context: its ready checkpoint leaves restore eligibility and it takes no more checkpoints."
          : "Retiring a snapshot takes it out of restore eligibility. Its row and alias stay; its content goes only when nothing protects it."
      }
    >
      {preview.error ? (
        <p className="form-error" role="status">
          Could not read what this would do: {preview.error.message}
        </p>
      ) : !p ? (
        <p className="status">Reading what this would do…</p>
      ) : p.alreadyRetired ? (
        <p>This {noun} is already retired. Retiring it again changes nothing.</p>
      ) : (
        <div className="preview" data-testid="retire-preview">
          <h3>What will happen</h3>
          <ul>
            <li>
              {p.retires.length === 0
                ? "No snapshot changes state (none is ready)."
                : `${p.retires.length} snapshot${p.retires.length === 1 ? "" : "s"} become${p.retires.length === 1 ? "s" : ""} retired: `}
              {p.retires.map((s, i) => (
                <span key={s.id}>
                  {i > 0 ? ", " : ""}
                  {s.class === "checkpoint" ? `#${s.sequence}` : s.canonicalRef} (<ShortId id={s.id} />)
                </span>
              ))}
            </li>
            {p.notes.map((note) => (
              <li key={note}>{note}</li>
            ))}
          </ul>
          <h3>Stays protected by pins</h3>
          {p.protectedByPins.length === 0 ? (
            <p>No active pin protects {p.retires.length === 1 ? "it" : "them"}.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Pin</th>
                  <th>Holder</th>
                  <th>Purpose</th>
                  <th>Since</th>
                  <th>Expires</th>
                </tr>
              </thead>
              <tbody>
                {p.protectedByPins.map((pin) => (
                  <tr key={`${pin.agentId}/${pin.pinId}`}>
                    <td>
                      <PinId id={pin.pinId} />
                    </td>
                    <PinHoldCells pin={pin} released={false} />
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h3>What collection may reclaim</h3>
          <p>
            {p.releasedAtNextCollection === 0
              ? "Nothing yet: every retired snapshot here is pinned. Its content is kept until the pins are released or expire."
              : `At the next collection, ${p.releasedAtNextCollection} snapshot${p.releasedAtNextCollection === 1 ? "'s" : "s'"} heads are released; ` +
                `${p.reclaim.partial ? "at least " : ""}${p.reclaim.layers} layer${p.reclaim.layers === 1 ? "" : "s"} (${formatBytes(p.reclaim.bytes)}) ` +
                `that nothing else reaches may then be deleted` +
                (p.reclaim.sharedLayers > 0
                  ? `; ${p.reclaim.sharedLayers} shared layer${p.reclaim.sharedLayers === 1 ? "" : "s"} stay for other snapshots.`
                  : ".")}
          </p>
          {p.untouched.length > 0 ? (
            <details>
              <summary>{p.untouched.length} other checkpoints of this lineage</summary>
              <ul className="compact">
                {p.untouched.map((s) => (
                  <li key={s.id}>
                    #{s.sequence} <StateBadge state={s.state} /> <ShortId id={s.id} />
                  </li>
                ))}
              </ul>
            </details>
          ) : null}
        </div>
      )}
      <form className="form" onSubmit={(e) => void submit(e).catch(() => undefined)}>
        <label>
          Reason (recorded in the audit log)
          <textarea
            name="reason"
            required
            minLength={3}
            maxLength={500}
            rows={3}
            autoFocus
            value={reason}
            onChange={(e) => setReason(e.target.value)}
          />
        </label>
        {error ? (
          <p className="form-error" role="alert">
            {error.message}
          </p>
        ) : null}
        <div className="dialog-actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="danger" disabled={pending || !p || p.alreadyRetired}>
            {pending ? "Retiring…" : `Retire ${noun}`}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
