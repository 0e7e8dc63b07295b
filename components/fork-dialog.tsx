"use client";
// Forking new work contexts from a ready checkpoint, behind a dialog that says what happens: how
// many work contexts, that each starts from this checkpoint, and that the reason is recorded.
// The server checks the role again (dashboard.forkCheckpoint: operators and admins).
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Dialog } from "./dialog.tsx";
import { useTRPC } from "./trpc.tsx";

const MAX_FORKS = 100;

export function ForkDialog({
  snapshotId,
  label,
  onClose,
  onForked,
}: {
  snapshotId: string;
  label: string;
  onClose: () => void;
  onForked?: (message: string) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const fork = useMutation(trpc.dashboard.forkCheckpoint.mutationOptions());
  const [count, setCount] = useState("1");
  const [reason, setReason] = useState("");
  const [forked, setForked] = useState<string[] | null>(null);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const result = await fork.mutateAsync({ fromCheckpoint: snapshotId, count: Number(count), reason });
    // The detail page, the graph and the audit log all show the new work contexts.
    await queryClient.invalidateQueries();
    const ids = result.forks.map((f) => f.workContextId);
    setForked(ids);
    onForked?.(`Forked ${ids.length} work context${ids.length === 1 ? "" : "s"} from ${label}.`);
  }

  return (
    <Dialog
      open
      title={`Fork work contexts from ${label}`}
      onClose={onClose}
      description="Each new work context gets a lineage of its own whose first acquire restores this checkpoint. This checkpoint and its lineage do not change; the reason and your name are recorded on the new lineages and in the audit log."
    >
      {forked ? (
        <div data-testid="fork-result">
          <p>
            Forked {forked.length} work context{forked.length === 1 ? "" : "s"}. Give an agent one of these ids to
            acquire:
          </p>
          <ul className="compact mono">
            {forked.map((id) => (
              <li key={id}>{id}</li>
            ))}
          </ul>
          <div className="dialog-actions">
            <button type="button" className="primary" onClick={onClose}>
              Done
            </button>
          </div>
        </div>
      ) : (
        <form className="form" onSubmit={(e) => void submit(e).catch(() => undefined)}>
          <label>
            How many work contexts (1–{MAX_FORKS})
            <input
              name="count"
              type="number"
              required
              min={1}
              max={MAX_FORKS}
              step={1}
              autoFocus
              value={count}
              onChange={(e) => setCount(e.target.value)}
            />
          </label>
          <label>
            Reason (recorded on each new lineage and in the audit log)
            <textarea
              name="reason"
              required
              minLength={3}
              maxLength={500}
              rows={3}
              value={reason}
              onChange={(e) => setReason(e.target.value)}
            />
          </label>
          {fork.error ? (
            <p className="form-error" role="alert">
              {fork.error.message}
            </p>
          ) : null}
          <div className="dialog-actions">
            <button type="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={fork.isPending}>
              {fork.isPending ? "Forking…" : "Fork"}
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
