// Workspace acquisition: the restore decision. Every acquire records which snapshot seeded which
// workspace and pins that snapshot until the worker reports how the restore went
// (restore/report-restore.ts).
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { inTransaction, retryConflicts, type Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import { isRetryableConflict, RetryTransaction } from "../db/errors.ts";
import { insertRepositoryIfAbsent } from "../db/statements/acquire.ts";
import { StrataError } from "../domain/errors.ts";
import { chooseRestore, FORK_RESTORABLE, type CandidateFacts, type RestoreChoice } from "../domain/restore-ladder.ts";
import type { AgentScope } from "../domain/scope.ts";
import {
  backendScopeSchema,
  canonicalRefSchema,
  repositoryDisplayName,
  repositoryRefSchema,
  sourceSchema,
  workContextIdSchema,
} from "../domain/snapshot-keys.ts";
import type { RestorePlan } from "../domain/views.ts";
import type { LiveWorkspace } from "../domain/live-holds.ts";
import { clientFields } from "../domain/client-fields.ts";
import type { PinnableState } from "../content/pins.ts";
import { findReadyBaseline } from "../lineage/baselines.ts";
import { isHeldDegradedOriginal } from "../lineage/degraded-targets.ts";
import { createLineage, mintWorkContextId } from "../lineage/lineages.ts";
import { findOrCreateRepository } from "../lineage/repositories.ts";
import { snapshotRefSelect, toSnapshotRef, type SnapshotRefRow } from "../lineage/snapshots.ts";
import { acquireByStatement } from "./acquire-statement.ts";
import { claimLiveHold } from "./claim-live-hold.ts";
import { providerCapabilities, type ProviderSettings } from "../backends/providers.ts";
import {
  buildPlan,
  hasOwnCheckpoints,
  lineageFactsSelect,
  pinChosen,
  RESTORE_PIN_TTL_MS,
  type LineageFactsRow,
} from "./restore-plan.ts";

export const acquireWorkspaceInput = z.strictObject({
  repository: repositoryRefSchema,
  ...backendScopeSchema.shape,
  canonicalRef: canonicalRefSchema,
  /** The durable work identity; omit it for new work and the server mints one. */
  workContextId: workContextIdSchema.optional(),
  ...sourceSchema.shape,
});
export type AcquireWorkspaceInput = z.input<typeof acquireWorkspaceInput>;
/** The original a head names in degradedFrom, when that partial restore is still held. */
async function heldOriginalOf(tx: Db, headId: string, agentId: string, now: Date): Promise<SnapshotRefRow | null> {
  const head = await tx.snapshot.findUnique({ where: { id: headId }, select: { degradedFromId: true } });
  if (!head?.degradedFromId || !(await isHeldDegradedOriginal(tx, agentId, head.degradedFromId, now))) return null;
  return tx.snapshot.findFirst({
    where: { id: head.degradedFromId, agentId, state: { in: ["ready", "superseded"] } },
    select: snapshotRefSelect,
  });
}

/** What the restore decision reads: the same facts on both paths (Prisma and the pg hot path). */
interface AcquireFacts<C extends CandidateFacts = SnapshotRefRow> {
  repositoryId: string;
  /** This work context's lineage, when the caller named an existing one. */
  lineage: LineageFactsRow | null;
  /** Its ready checkpoint head, when the lineage is active. */
  head: C | null;
  /** The ready baseline of the key, when there is no head. */
  baseline: C | null;
  hasCheckpoints: boolean;
  /**
   * The checkpoint an authorized fork began the lineage from, while the lineage is active, has no
   * checkpoint of its own and the checkpoint is still ready or superseded.
   */
  forkSource: C | null;
  /** The original the head names in degradedFrom, while a partial restore of it is held. */
  heldOriginal: C | null;
}

interface AcquireDecision<C extends CandidateFacts = SnapshotRefRow> {
  choice: RestoreChoice;
  chosen: C | null;
  /** States the chosen snapshot may still be in when it is pinned (else the decision is redone). */
  states: readonly PinnableState[];
}

function decideAcquire<C extends CandidateFacts>(facts: AcquireFacts<C>): AcquireDecision<C> {
  const { lineage, head } = facts;
  const choice = chooseRestore({
    lineage: lineage
      ? {
          state: lineage.state,
          workContextId: lineage.workContextId,
          hasCheckpoints: facts.hasCheckpoints,
          forkedFromId: lineage.forkedFromId,
        }
      : null,
    lineageHead: head,
    baseline: facts.baseline,
    forkSource: facts.forkSource,
  });
  // A fork without a checkpoint of its own restores the one it was forked from.
  const fork = facts.forkSource;
  if (choice.rung === "checkpoint" && fork && choice.snapshotId === fork.id) {
    return { choice, chosen: fork, states: FORK_RESTORABLE };
  }
  // A head captured in a partly restored worktree does not replace the original it names
  // while that partial restore is held: the original is tried first.
  const original = choice.rung === "checkpoint" ? facts.heldOriginal : null;
  if (original) return { choice, chosen: original, states: ["ready", "superseded"] };
  const chosen = choice.rung === "checkpoint" ? head : choice.rung === "baseline" ? facts.baseline : null;
  return { choice, chosen, states: ["ready"] };
}

/** The lineage key of an acquire, less the repository (found or created first). */
interface AcquireKeyColumns {
  agentId: string;
  workContextId: string;
  backendKind: string;
  baseImage: string;
}

async function readAcquireFacts(
  tx: Db,
  input: z.output<typeof acquireWorkspaceInput>,
  key: AcquireKeyColumns,
  now: Date,
): Promise<AcquireFacts> {
  const repository = await findOrCreateRepository(tx, input.repository);
  const lineageKey = { ...key, repositoryId: repository.id };
  const lineage = input.workContextId
    ? await tx.lineage.findUnique({
        where: { agentId_workContextId_repositoryId_backendKind_baseImage: lineageKey },
        select: lineageFactsSelect,
      })
    : null;
  const head =
    lineage?.state === "active"
      ? await tx.snapshot.findFirst({
          // The key columns let PostgreSQL answer from the one-ready-checkpoint index.
          where: { ...lineageKey, lineageId: lineage.id, class: "checkpoint", state: "ready" },
          select: snapshotRefSelect,
        })
      : null;
  const baseline = head
    ? null
    : await findReadyBaseline(tx, { ...key, repositoryId: repository.id, canonicalRef: input.canonicalRef });
  const hasCheckpoints = lineage && !head ? await hasOwnCheckpoints(tx, lineage.id) : Boolean(head);
  const forkSource =
    lineage?.state === "active" && lineage.forkedFromId && !hasCheckpoints
      ? await tx.snapshot.findFirst({
          where: {
            id: lineage.forkedFromId,
            agentId: key.agentId,
            class: "checkpoint",
            state: { in: [...FORK_RESTORABLE] },
          },
          select: snapshotRefSelect,
        })
      : null;
  return {
    repositoryId: repository.id,
    lineage,
    head,
    baseline,
    hasCheckpoints,
    forkSource,
    heldOriginal: head ? await heldOriginalOf(tx, head.id, key.agentId, now) : null,
  };
}

/** A lineage this acquire creates begins from the chosen snapshot. */
function newLineageFacts(id: string, workContextId: string, chosen: SnapshotRefRow | null): LineageFactsRow {
  return {
    id,
    state: "active",
    workContextId,
    originSnapshotId: chosen?.id ?? null,
    retiredReason: null,
    forkedFromId: null,
  };
}

/** How many times the statement decides again before giving up on a catalog that keeps moving. */
const ACQUIRE_ATTEMPTS = 20;

/**
 * Decides where a workspace starts: the live workspace this work context holds on the requesting
 * host, while the hold lasts and holds the lineage's head (the live rung: nothing to restore;
 * the hold ends, resumed), else this work context's own lineage head, else (for a forked
 * work context without a checkpoint of its own) the checkpoint it was forked from, else the
 * ready baseline of the key, else cold. Records the restore and pins the chosen snapshot.
 *
 * On PostgreSQL this is one set-based statement (acquire-statement.ts), on the pool shared with
 * concurrent acquires or, inside a caller's transaction, on that transaction; its rung is
 * checked against the ladder here. On SQLite it runs through Prisma in one transaction. The
 * dialect decides which, never the caller; both read the same facts, the ladder is
 * decideAcquire's, and acquire-contract.test.ts runs the same suite on all three.
 */
/**
 * The facts of a provider without snapshots: no baseline, no fork source, and the lineage's head
 * only while the work context holds its workspace on this host (the live rung), else cold. The
 * work context's own checkpoints still count as state it had (mustInspectExternalState).
 */
async function withoutSnapshots(
  tx: Db,
  facts: AcquireFacts,
  opts: { agentId: string; host: string; now: Date },
): Promise<AcquireFacts> {
  const head = facts.head;
  const held =
    head && facts.lineage
      ? await tx.liveHold.count({
          where: {
            agentId: opts.agentId,
            lineageId: facts.lineage.id,
            snapshotId: head.id,
            host: opts.host,
            endedAt: null,
            expiresAt: { gt: opts.now },
          },
        })
      : 0;
  return {
    ...facts,
    head: held > 0 ? head : null,
    hasCheckpoints: facts.hasCheckpoints || head !== null,
    baseline: null,
    forkSource: null,
    heldOriginal: null,
  };
}

export async function acquireWorkspace(
  db: Db,
  opts: AcquireWorkspaceInput & { agent: AgentScope; now?: Date; providers?: ProviderSettings },
): Promise<RestorePlan> {
  const input = acquireWorkspaceInput.parse(clientFields(opts, "agent", "now", "providers"));
  const agentId = opts.agent.agentId;
  const workContextId = input.workContextId ?? mintWorkContextId();
  const key = { agentId, workContextId, backendKind: input.backendKind, baseImage: input.baseImage };
  // A provider without snapshots (STRATA_PROVIDERS) restores nothing: its work contexts continue
  // in a workspace they hold on the host, else start cold. Decided by the transaction below on
  // both databases (the set-based statement knows only the snapshot ladder).
  const snapshots = !opts.providers || providerCapabilities(opts.providers, input.backendKind).snapshots;
  const runner = snapshots ? dialectOf(db).statementRunner(db) : null;
  const plan = (
    restoreId: string,
    choice: RestoreChoice,
    chosen: SnapshotRefRow | null,
    pinId: string | null,
    lineage: LineageFactsRow,
    live: LiveWorkspace | null,
  ) =>
    buildPlan({
      restoreId,
      choice,
      snapshot: chosen ? toSnapshotRef(chosen) : null,
      pinId,
      workContextId,
      canonicalRef: input.canonicalRef,
      lineage,
      previousRestoreId: null,
      live,
    });
  // The live rung (claim-live-hold.ts), the same on both paths: only a requested work context's
  // own head, chosen on the checkpoint rung, can be held.
  const liveOf = (
    tx: Db,
    choice: RestoreChoice,
    head: { id: string } | null,
    chosen: { id: string } | null,
    lineage: LineageFactsRow,
    now: Date,
  ) =>
    input.workContextId && choice.rung === "checkpoint" && head && chosen?.id === head.id
      ? claimLiveHold(tx, { agentId, lineageId: lineage.id, snapshotId: head.id, host: input.host, now })
      : null;
  if (runner) {
    const restoreId = randomUUID();
    const pinId = `restore:${restoreId}`;
    const newLineageId = randomUUID();
    const attempt = async (): Promise<RestorePlan> => {
      const now = opts.now ?? new Date();
      // Written out, not spread from `key`: on this path a spread copy made V8 promote short-lived
      // objects (a sixth of what the acquire allocated survived scavenges: longer GC pauses).
      const request = {
        agentId,
        workContextId,
        backendKind: input.backendKind,
        baseImage: input.baseImage,
        repositoryIdentity: input.repository.identity,
        canonicalRef: input.canonicalRef,
        requestedWorkContextId: input.workContextId ?? null,
        workspace: input.workspace,
        host: input.host,
        now,
        restoreId,
        newLineageId,
        pinId,
        holder: `agent:${agentId}`,
        pinExpiresAt: new Date(now.getTime() + RESTORE_PIN_TTL_MS),
      };
      let outcome = await acquireByStatement(runner, request);
      if (!outcome.facts) {
        // A new repository: created (or found created by a concurrent caller), then decided again.
        const repository = { identity: input.repository.identity, name: repositoryDisplayName(input.repository) };
        await insertRepositoryIfAbsent(runner, { id: randomUUID(), ...repository });
        outcome = await acquireByStatement(runner, request);
        if (!outcome.facts) throw new RetryTransaction("repository not visible yet");
      }
      const ladder = decideAcquire(outcome.facts);
      if (ladder.choice.rung !== outcome.rung || (ladder.chosen?.id ?? null) !== (outcome.chosen?.id ?? null)) {
        // The statement's rung must be the ladder's; a difference is a defect, never a plan.
        throw new StrataError("INTERNAL", "The catalog's restore decision differs from the ladder's.", {
          retryable: false,
          data: { ladder: ladder.choice.rung, catalog: outcome.rung },
        });
      }
      // Nothing was written: the chosen snapshot moved on, or the lineage appeared meanwhile.
      if (!outcome.recorded) throw new RetryTransaction("the catalog changed under the decision");
      const { chosen } = outcome;
      const lineage = outcome.facts.lineage ?? newLineageFacts(newLineageId, workContextId, chosen);
      // The statement says whether the lineage has an unended hold, and where: only then is it claimed.
      const held = outcome.facts.lineage?.heldOn === input.host;
      const live = held ? await liveOf(db, ladder.choice, outcome.facts.head, chosen, lineage, now) : null;
      return plan(restoreId, ladder.choice, chosen, chosen ? pinId : null, lineage, live);
    };
    // Inside a caller's transaction a conflict goes up to the transaction's owner, which
    // retries everything it wrote; on the pool each decision is its own transaction.
    if (runner.on === "transaction") return attempt();
    try {
      return await retryConflicts(attempt, ACQUIRE_ATTEMPTS);
    } catch (error) {
      if (!isRetryableConflict(error)) throw error;
      throw new StrataError("UNAVAILABLE", "The catalog kept changing under this acquire.", {
        hint: "Acquire again; nothing was recorded.",
        cause: error,
      });
    }
  }
  return inTransaction(db, async (tx) => {
    const now = opts.now ?? new Date();
    const read = await readAcquireFacts(tx, input, key, now);
    const facts = snapshots ? read : await withoutSnapshots(tx, read, { agentId, host: input.host, now });
    const decision = decideAcquire(facts);
    const { chosen } = decision;
    const lineage =
      facts.lineage ??
      newLineageFacts(
        (await createLineage(tx, { ...key, repositoryId: facts.repositoryId }, chosen?.id ?? null)).id,
        workContextId,
        chosen,
      );
    const restoreId = randomUUID();
    const pinId = chosen
      ? await pinChosen(tx, { snapshotId: chosen.id, restoreId, agentId, now, states: decision.states })
      : null;
    await tx.restore.create({
      data: {
        id: restoreId,
        agentId,
        repositoryId: facts.repositoryId,
        lineageId: lineage.id,
        snapshotId: chosen?.id ?? null,
        backendKind: input.backendKind,
        baseImage: input.baseImage,
        canonicalRef: input.canonicalRef,
        workContextId,
        workspace: input.workspace,
        host: input.host,
        rung: decision.choice.rung,
        pinId,
        createdAt: now,
      },
      select: { id: true },
    });
    const live = await liveOf(tx, decision.choice, facts.head, chosen, lineage, now);
    return plan(restoreId, decision.choice, chosen, pinId, lineage, live);
  });
}
