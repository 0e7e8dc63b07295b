// The restore decision. New work starts from the clean baseline of its key; continuing work
// resumes only from its own lineage's head; anything else starts cold. One exception to "only
// its own": a lineage an authorized fork created (lineage.fork) starts from the checkpoint it was
// forked from, on the checkpoint rung, until it has a checkpoint of its own. A failed rung walks
// down: checkpoint -> the lineage's recorded baseline or the current one -> cold. One step
// comes first: when the checkpoint that failed was the original of a held partial restore (tried
// before the head that names it), the next try is that head, the partly restored worktree's own
// latest capture, before any baseline: it holds the task's later work, a baseline none of it.

export type Rung = "checkpoint" | "baseline" | "cold";

/** What the decision needs to know about a candidate snapshot. */
export interface CandidateFacts {
  id: string;
  class: string;
  state: string;
  workContextId: string | null;
}

export interface LineageFacts {
  state: string;
  workContextId: string;
  /** Whether the lineage ever recorded a checkpoint (its work has state of its own). */
  hasCheckpoints: boolean;
  /** The checkpoint an authorized fork began this lineage from (absent or null: not a fork). */
  forkedFromId?: string | null;
}

export interface RestoreChoice {
  rung: Rung;
  snapshotId: string | null;
  /**
   * The work context had state of its own but is not resuming from it: its agent must inspect
   * durable external state before repeating writes (a snapshot proves nothing about effects).
   */
  mustInspectExternalState: boolean;
}

/** States a restore may start from when first chosen. */
const RESTORABLE = "ready";
/** A lineage's recorded baseline stays usable after a newer one superseded it. */
const FALLBACK_RESTORABLE = new Set(["ready", "superseded"]);
/**
 * A fork's checkpoint was ready when the fork was decided; its own lineage moving on (superseded)
 * does not withdraw it, retirement does.
 */
export const FORK_RESTORABLE: readonly ["ready", "superseded"] = ["ready", "superseded"];

/**
 * Whether the work context carries state of its own that a baseline or cold start would lose:
 * checkpoints it recorded, or the checkpoint it was forked from.
 */
export function carriesState(lineage: LineageFacts | null): boolean {
  return Boolean(lineage && (lineage.hasCheckpoints || lineage.forkedFromId));
}

function eligibleHead(lineage: LineageFacts | null, head: CandidateFacts | null): CandidateFacts | null {
  if (!lineage || lineage.state !== "active" || !head) return null;
  if (head.class !== "checkpoint" || head.state !== RESTORABLE) return null;
  // Never another work context's checkpoint, whatever the caller passed in.
  if (head.workContextId !== lineage.workContextId) return null;
  return head;
}

/** The checkpoint a fork began from, while the fork has none of its own and it is still restorable. */
function eligibleForkSource(lineage: LineageFacts | null, source: CandidateFacts | null): CandidateFacts | null {
  if (!lineage || lineage.state !== "active" || lineage.hasCheckpoints || !lineage.forkedFromId || !source) return null;
  // Exactly the recorded checkpoint: the fork is the authorization, nothing else is.
  if (source.id !== lineage.forkedFromId || source.class !== "checkpoint") return null;
  return (FORK_RESTORABLE as readonly string[]).includes(source.state) ? source : null;
}

function eligibleBaseline(candidate: CandidateFacts | null, states: ReadonlySet<string>): CandidateFacts | null {
  // A checkpoint never satisfies a baseline lookup, even when its tree is clean.
  if (!candidate || candidate.class !== "baseline" || !states.has(candidate.state)) return null;
  return candidate;
}

/** The first rung of an acquire. */
export function chooseRestore(facts: {
  lineage: LineageFacts | null;
  lineageHead: CandidateFacts | null;
  baseline: CandidateFacts | null;
  /** The checkpoint the lineage was forked from (looked up when it has no head). */
  forkSource?: CandidateFacts | null;
}): RestoreChoice {
  const resumed = carriesState(facts.lineage);
  const head = eligibleHead(facts.lineage, facts.lineageHead);
  if (head) return { rung: "checkpoint", snapshotId: head.id, mustInspectExternalState: false };
  const forked = eligibleForkSource(facts.lineage, facts.forkSource ?? null);
  if (forked) return { rung: "checkpoint", snapshotId: forked.id, mustInspectExternalState: false };
  const baseline = eligibleBaseline(facts.baseline, new Set([RESTORABLE]));
  if (baseline) return { rung: "baseline", snapshotId: baseline.id, mustInspectExternalState: resumed };
  return { rung: "cold", snapshotId: null, mustInspectExternalState: resumed };
}

/** The next rung after `failed` could not be restored; null when the ladder is exhausted. */
export function nextRungAfterFailure(facts: {
  failed: Rung;
  failedSnapshotId: string | null;
  lineage: LineageFacts | null;
  /** The lineage's head when it was captured in a partial restore of the failed snapshot. */
  partialHead?: CandidateFacts | null;
  /** The snapshot the lineage recorded it began from. */
  recordedOrigin: CandidateFacts | null;
  /** The ready baseline of the restore's baseline key now. */
  currentBaseline: CandidateFacts | null;
}): RestoreChoice | null {
  const resumed = carriesState(facts.lineage);
  if (facts.failed === "cold") return null;
  if (facts.failed === "checkpoint") {
    const head = eligibleHead(facts.lineage, facts.partialHead ?? null);
    if (head && head.id !== facts.failedSnapshotId) {
      return { rung: "checkpoint", snapshotId: head.id, mustInspectExternalState: false };
    }
    const usable = (c: CandidateFacts | null, states: ReadonlySet<string>) => {
      const b = eligibleBaseline(c, states);
      return b && b.id !== facts.failedSnapshotId ? b : null;
    };
    const baseline =
      usable(facts.recordedOrigin, FALLBACK_RESTORABLE) ?? usable(facts.currentBaseline, new Set([RESTORABLE]));
    if (baseline) return { rung: "baseline", snapshotId: baseline.id, mustInspectExternalState: resumed };
  }
  return { rung: "cold", snapshotId: null, mustInspectExternalState: resumed };
}
