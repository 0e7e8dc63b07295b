// Workspace acquisition (the restore decision) and restore outcomes (the ladder walk).
// Every acquire records which snapshot seeded which workspace and pins that snapshot until
// the worker reports how the restore went.
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { inTransaction, retryConflicts, type Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import { isRetryableConflict, RetryTransaction } from "../db/errors.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { isStrataError, StrataError } from "../domain/errors.ts";
import {
  chooseRestore,
  nextRungAfterFailure,
  type CandidateFacts,
  type RestoreChoice,
  type Rung,
} from "../domain/restore-ladder.ts";
import { restoreResultSchema } from "../domain/restore-result.ts";
import type { AgentScope } from "../domain/scope.ts";
import {
  backendScopeSchema,
  canonicalRefSchema,
  entityIdSchema,
  objectIdSchema,
  repositoryDisplayName,
  repositoryRefSchema,
  sourceSchema,
  workContextIdSchema,
} from "../domain/snapshot-keys.ts";
import {
  lineageRetireReasonSchema,
  restoreOutcomeSchema,
  rungSchema,
  type ReportRestoreResult,
  type RestorePlan,
  type RestoreView,
  type SnapshotRef,
} from "../domain/views.ts";
import { acquireOnPool, createRepositoryPg } from "./acquire-batch-postgres.ts";
import { findReadyBaseline } from "../lineage/baselines.ts";
import { isHeldDegradedOriginal, releaseDegradedHolds } from "../lineage/degraded-targets.ts";
import { createLineage } from "../lineage/lineages.ts";
import { pinSnapshot, releasePin, type PinnableState } from "../content/pins.ts";
import { findOrCreateRepository } from "../lineage/repositories.ts";
import { snapshotRefSelect, toSnapshotRef, type SnapshotRefRow } from "../lineage/snapshots.ts";
import { clientFields } from "../domain/client-fields.ts";

/** A partly restored worktree keeps its pin at most this long (support may discard it sooner). */
const RESTORE_PIN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export const acquireWorkspaceInput = z.strictObject({
  repository: repositoryRefSchema,
  ...backendScopeSchema.shape,
  canonicalRef: canonicalRefSchema,
  /** The durable work identity; omit it for new work and the server mints one. */
  workContextId: workContextIdSchema.optional(),
  ...sourceSchema.shape,
});
export type AcquireWorkspaceInput = z.input<typeof acquireWorkspaceInput>;

const lineageFactsSelect = {
  id: true,
  state: true,
  workContextId: true,
  originSnapshotId: true,
  retiredReason: true,
} satisfies Prisma.LineageSelect;
type LineageFactsRow = Prisma.LineageGetPayload<{ select: typeof lineageFactsSelect }>;

/** Pins the chosen snapshot, provided it is still in one of `states` (else the decision is redone). */
async function pinChosen(
  tx: Db,
  opts: { snapshotId: string; restoreId: string; agentId: string; now: Date; states: readonly PinnableState[] },
): Promise<string> {
  const pinId = `restore:${opts.restoreId}`;
  try {
    // pinSnapshot holds the row FOR SHARE while it checks the state, so retirement cannot pass.
    await pinSnapshot(tx, {
      snapshotId: opts.snapshotId,
      pinId,
      holder: `agent:${opts.agentId}`,
      purpose: "restore",
      expiresAt: new Date(opts.now.getTime() + RESTORE_PIN_TTL_MS),
      agentId: opts.agentId,
      states: opts.states,
    });
  } catch (error) {
    // The chosen snapshot moved on since the decision (nothing was written): decide again.
    if (isStrataError(error, "PIN_REFUSED")) throw new RetryTransaction("chosen snapshot changed state");
    throw error;
  }
  return pinId;
}

async function hasOwnCheckpoints(tx: Db, lineageId: string): Promise<boolean> {
  const one = await tx.snapshot.findFirst({
    where: { lineageId, class: "checkpoint", failedAt: null },
    select: { id: true },
  });
  return one !== null;
}

function noticeFor(rung: Rung, lineage: LineageFactsRow, mustInspect: boolean): string | null {
  if (lineage.state === "retired") {
    return (
      `This work context's lineage was retired (${lineage.retiredReason ?? "retired"}): its checkpoints are not ` +
      `restorable and it takes no new ones. Restoring the ${rung} rung. Use a new work context id for new work.`
    );
  }
  if (mustInspect) {
    return (
      `This work context's own checkpoint is not available; restoring the ${rung} rung instead. Inspect durable ` +
      `external state before repeating writes: a snapshot proves nothing about effects.`
    );
  }
  return null;
}

function buildPlan(opts: {
  restoreId: string;
  choice: RestoreChoice;
  snapshot: SnapshotRef | null;
  pinId: string | null;
  workContextId: string;
  canonicalRef: string;
  lineage: LineageFactsRow;
  previousRestoreId: string | null;
}): RestorePlan {
  const { lineage, choice } = opts;
  return {
    restoreId: opts.restoreId,
    rung: choice.rung,
    snapshot: opts.snapshot,
    pinId: opts.pinId,
    workContextId: opts.workContextId,
    canonicalRef: opts.canonicalRef,
    lineage: {
      id: lineage.id,
      state: lineage.state === "retired" ? "retired" : "active",
      retiredReason: lineage.retiredReason ? lineageRetireReasonSchema.parse(lineage.retiredReason) : null,
      originSnapshotId: lineage.originSnapshotId,
    },
    previousRestoreId: opts.previousRestoreId,
    mustInspectExternalState: choice.mustInspectExternalState,
    notice: noticeFor(choice.rung, lineage, choice.mustInspectExternalState),
  };
}

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
      ? { state: lineage.state, workContextId: lineage.workContextId, hasCheckpoints: facts.hasCheckpoints }
      : null,
    lineageHead: head,
    baseline: facts.baseline,
  });
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
  return {
    repositoryId: repository.id,
    lineage,
    head,
    baseline,
    hasCheckpoints: lineage && !head ? await hasOwnCheckpoints(tx, lineage.id) : Boolean(head),
    heldOriginal: head ? await heldOriginalOf(tx, head.id, key.agentId, now) : null,
  };
}

/** A lineage this acquire creates begins from the chosen snapshot. */
function newLineageFacts(id: string, workContextId: string, chosen: SnapshotRefRow | null): LineageFactsRow {
  return { id, state: "active", workContextId, originSnapshotId: chosen?.id ?? null, retiredReason: null };
}

/** How many times the pg hot path decides again before giving up on a catalog that keeps moving. */
const ACQUIRE_ATTEMPTS = 20;

/**
 * Decides where a workspace starts: this work context's own lineage head, else the ready
 * baseline of the key, else cold. Records the restore and pins the chosen snapshot.
 *
 * On a PostgreSQL catalog client this is one statement on the pg pool, shared with concurrent
 * acquires (acquire-postgres.ts), whose rung is checked against the ladder here; on SQLite, or
 * inside a caller's transaction, it runs through Prisma in one transaction. Both read the same
 * facts and the ladder is decideAcquire's.
 */
export async function acquireWorkspace(
  db: Db,
  opts: AcquireWorkspaceInput & { agent: AgentScope; now?: Date },
): Promise<RestorePlan> {
  const input = acquireWorkspaceInput.parse(clientFields(opts, "agent", "now"));
  const agentId = opts.agent.agentId;
  const workContextId = input.workContextId ?? `wc_${randomUUID()}`;
  const key = { agentId, workContextId, backendKind: input.backendKind, baseImage: input.baseImage };
  const pool = dialectOf(db).hotPathPool(db);
  const plan = (
    restoreId: string,
    choice: RestoreChoice,
    chosen: SnapshotRefRow | null,
    pinId: string | null,
    lineage: LineageFactsRow,
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
    });
  if (pool) {
    const restoreId = randomUUID();
    const pinId = `restore:${restoreId}`;
    const newLineageId = randomUUID();
    const attempt = async (): Promise<RestorePlan> => {
      const now = opts.now ?? new Date();
      // Written out, not spread from `key`: on this path a spread copy made V8 promote short-lived
      // objects (a sixth of what the acquire allocated survived scavenges: longer GC pauses).
      const outcome = await acquireOnPool(pool, {
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
      });
      if (!outcome.facts) {
        const repository = { identity: input.repository.identity, name: repositoryDisplayName(input.repository) };
        await createRepositoryPg(pool, { id: randomUUID(), ...repository });
        throw new RetryTransaction("repository created");
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
      return plan(restoreId, ladder.choice, chosen, chosen ? pinId : null, lineage);
    };
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
    const facts = await readAcquireFacts(tx, input, key, now);
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
    return plan(restoreId, decision.choice, chosen, pinId, lineage);
  });
}

const restoreIdField = { restoreId: entityIdSchema };

export const reportRestoreInput = z.discriminatedUnion("outcome", [
  z.strictObject({
    ...restoreIdField,
    outcome: z.literal("restored"),
    /** The git tree id the worker verified; must equal the snapshot's recorded tree. */
    treeId: objectIdSchema.optional(),
  }),
  z.strictObject({
    ...restoreIdField,
    outcome: z.literal("degraded"),
    /** What the worktree lacks (paths, layers, "bundle"…); at least one entry. */
    missing: z.array(z.string().trim().min(1).max(1000)).min(1).max(10_000),
    treeId: objectIdSchema.optional(),
    /** The restore's full result (what the worktree holds, what is missing, the next step). */
    detail: restoreResultSchema.optional(),
  }),
  z.strictObject({
    ...restoreIdField,
    outcome: z.literal("failed"),
    error: z.strictObject({
      code: z.string().trim().min(1).max(100),
      message: z.string().trim().max(2000).default(""),
    }),
    /** The restore's full result, when it got as far as deciding that nothing could be restored. */
    detail: restoreResultSchema.optional(),
  }),
]);
export type ReportRestoreInput = z.input<typeof reportRestoreInput>;

const restoreSelect = {
  id: true,
  agentId: true,
  repositoryId: true,
  lineageId: true,
  snapshotId: true,
  backendKind: true,
  baseImage: true,
  canonicalRef: true,
  workContextId: true,
  workspace: true,
  host: true,
  rung: true,
  outcome: true,
  pinId: true,
  previousRestoreId: true,
  result: true,
  createdAt: true,
  reportedAt: true,
  snapshot: { select: { treeId: true } },
  nextRestore: { select: { id: true } },
} satisfies Prisma.RestoreSelect;
type RestoreRow = Prisma.RestoreGetPayload<{ select: typeof restoreSelect }>;

function toRestoreView(row: RestoreRow): RestoreView {
  return {
    id: row.id,
    rung: rungSchema.parse(row.rung),
    outcome: restoreOutcomeSchema.parse(row.outcome),
    snapshotId: row.snapshotId,
    lineageId: row.lineageId,
    workContextId: row.workContextId,
    workspace: row.workspace,
    host: row.host,
    pinId: row.pinId,
    previousRestoreId: row.previousRestoreId,
    result: row.result,
    createdAt: row.createdAt,
    reportedAt: row.reportedAt,
  };
}

/** Rebuilds the plan a recorded restore stands for (a repeated report gets the same answer). */
async function planOfRestore(tx: Db, restoreId: string): Promise<RestorePlan> {
  const row = await tx.restore.findUniqueOrThrow({
    where: { id: restoreId },
    select: {
      ...restoreSelect,
      snapshot: { select: snapshotRefSelect },
      lineage: { select: lineageFactsSelect },
    },
  });
  const rung = rungSchema.parse(row.rung);
  const lineage = row.lineage ?? {
    id: row.lineageId ?? "",
    state: "active",
    workContextId: row.workContextId ?? "",
    originSnapshotId: null,
    retiredReason: null,
  };
  const resumed = row.lineage ? await hasOwnCheckpoints(tx, row.lineage.id) : false;
  return buildPlan({
    restoreId: row.id,
    choice: { rung, snapshotId: row.snapshotId, mustInspectExternalState: resumed && rung !== "checkpoint" },
    snapshot: row.snapshot ? toSnapshotRef(row.snapshot) : null,
    pinId: row.pinId,
    workContextId: row.workContextId ?? lineage.workContextId,
    canonicalRef: row.canonicalRef,
    lineage,
    previousRestoreId: row.previousRestoreId,
  });
}

function resultOf(input: z.output<typeof reportRestoreInput>): Prisma.InputJsonValue {
  if (input.outcome === "restored") return { treeId: input.treeId ?? null };
  if (input.outcome === "degraded") {
    return input.detail
      ? { ...input.detail, treeId: input.treeId ?? null }
      : { missing: input.missing, treeId: input.treeId ?? null };
  }
  return input.detail ? { error: input.error, detail: input.detail } : { error: input.error };
}

/**
 * Records how a restore went. `restored` and `failed` release its pin; `degraded` keeps it
 * (the partly restored worktree still depends on the snapshot). `failed` walks down the
 * ladder and returns the next plan in the same call. Repeating a report is idempotent.
 */
export async function reportRestore(
  db: Db,
  opts: ReportRestoreInput & { agent: AgentScope; now?: Date },
): Promise<ReportRestoreResult> {
  const input = reportRestoreInput.parse(clientFields(opts, "agent", "now"));
  const agentId = opts.agent.agentId;
  return inTransaction(db, async (tx) => {
    const now = opts.now ?? new Date();
    const restore = await tx.restore.findFirst({ where: { id: input.restoreId, agentId }, select: restoreSelect });
    if (!restore) throw new StrataError("NOT_FOUND", `Restore ${input.restoreId} was not found.`);

    if (restore.outcome !== "pending") {
      if (restore.outcome !== input.outcome) {
        throw new StrataError("CONFLICT", `Restore ${restore.id} was already reported ${restore.outcome}.`, {
          hint: "An outcome is reported once; acquire again for a new restore.",
          data: { outcome: restore.outcome },
        });
      }
      const next = restore.nextRestore ? await planOfRestore(tx, restore.nextRestore.id) : null;
      return { restore: toRestoreView(restore), next };
    }

    const recordedTree = restore.snapshot?.treeId ?? null;
    if (input.outcome === "restored" && input.treeId && recordedTree && input.treeId !== recordedTree) {
      throw new StrataError("INVALID_INPUT", "The restored tree differs from the recorded one.", {
        hint: "A restore is `restored` only when its tree id matches; report it `degraded` with what is missing.",
        data: { recordedTreeId: recordedTree, reportedTreeId: input.treeId },
      });
    }
    const reported = await tx.restore.updateMany({
      where: { id: restore.id, outcome: "pending" },
      data: {
        outcome: input.outcome,
        reportedAt: now,
        result: resultOf(input),
        errorCode: input.outcome === "failed" ? input.error.code : null,
      },
    });
    if (reported.count !== 1) throw new RetryTransaction("restore reported concurrently");

    if (restore.snapshotId && restore.pinId && input.outcome !== "degraded") {
      await releasePin(tx, { snapshotId: restore.snapshotId, pinId: restore.pinId, agentId });
    }
    if (restore.snapshotId && input.outcome === "restored") {
      // A full restore of a snapshot ends the holds of earlier partial restores of it.
      await releaseDegradedHolds(tx, agentId, restore.snapshotId, now);
    }
    if (restore.snapshotId && input.outcome !== "failed") {
      // The sweeper's staleness clock: a restored head is in use.
      await tx.snapshot.updateMany({ where: { id: restore.snapshotId }, data: { lastRestoredAt: now } });
    }
    let next: RestorePlan | null = null;
    if (input.outcome === "failed") next = await walkDown(tx, { restore, agentId, now });
    const row = await tx.restore.findUniqueOrThrow({ where: { id: restore.id }, select: restoreSelect });
    return { restore: toRestoreView(row), next };
  });
}

/** Plans and records the next rung below a failed restore; null when none is left. */
async function walkDown(
  tx: Db,
  opts: { restore: RestoreRow; agentId: string; now: Date },
): Promise<RestorePlan | null> {
  const { restore, agentId, now } = opts;
  const lineage = restore.lineageId
    ? await tx.lineage.findUnique({ where: { id: restore.lineageId }, select: lineageFactsSelect })
    : null;
  const hasCheckpoints = lineage ? await hasOwnCheckpoints(tx, lineage.id) : false;
  const recordedOrigin = lineage?.originSnapshotId
    ? await tx.snapshot.findUnique({ where: { id: lineage.originSnapshotId }, select: snapshotRefSelect })
    : null;
  const currentBaseline = await findReadyBaseline(tx, { ...restore, agentId });
  // The head captured in a partial restore of the snapshot that failed: the next try after it.
  const partialHead =
    lineage?.state === "active" && restore.rung === "checkpoint" && restore.snapshotId
      ? await tx.snapshot.findFirst({
          where: { lineageId: lineage.id, class: "checkpoint", state: "ready", degradedFromId: restore.snapshotId },
          select: snapshotRefSelect,
        })
      : null;
  const choice = nextRungAfterFailure({
    failed: rungSchema.parse(restore.rung),
    failedSnapshotId: restore.snapshotId,
    lineage: lineage ? { state: lineage.state, workContextId: lineage.workContextId, hasCheckpoints } : null,
    partialHead,
    recordedOrigin,
    currentBaseline,
  });
  if (!choice || !lineage) return null;
  const chosen = [partialHead, recordedOrigin, currentBaseline].find((s) => s && s.id === choice.snapshotId) ?? null;

  // Until the lineage has a checkpoint of its own, it began from wherever the ladder landed.
  let origin = lineage.originSnapshotId;
  if (!hasCheckpoints && restore.snapshotId && origin === restore.snapshotId) {
    const moved = await tx.lineage.updateMany({
      where: { id: lineage.id, originSnapshotId: restore.snapshotId },
      data: { originSnapshotId: chosen?.id ?? null },
    });
    if (moved.count === 1) origin = chosen?.id ?? null;
  }

  const restoreId = randomUUID();
  const states: PinnableState[] = chosen?.id === recordedOrigin?.id ? ["ready", "superseded"] : ["ready"];
  const pinId = chosen ? await pinChosen(tx, { snapshotId: chosen.id, restoreId, agentId, now, states }) : null;
  await tx.restore.create({
    data: {
      id: restoreId,
      agentId,
      repositoryId: restore.repositoryId,
      lineageId: lineage.id,
      snapshotId: chosen?.id ?? null,
      backendKind: restore.backendKind,
      baseImage: restore.baseImage,
      canonicalRef: restore.canonicalRef,
      workContextId: restore.workContextId,
      workspace: restore.workspace,
      host: restore.host,
      rung: choice.rung,
      pinId,
      previousRestoreId: restore.id,
      createdAt: now,
    },
    select: { id: true },
  });
  return buildPlan({
    restoreId,
    choice,
    snapshot: chosen ? toSnapshotRef(chosen) : null,
    pinId,
    workContextId: restore.workContextId ?? lineage.workContextId,
    canonicalRef: restore.canonicalRef,
    lineage: { ...lineage, originSnapshotId: origin },
    previousRestoreId: restore.id,
  });
}
