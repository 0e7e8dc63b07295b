// Publishing a repository baseline: the only writer of baselines. Evidence is re-checked on
// the server, and publication is a compare-and-swap on the head the publisher observed, so an
// older concurrent publisher can never replace a newer baseline.
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { baselineEvidenceSchema, failedEvidenceChecks } from "../domain/baseline-evidence.ts";
import { StrataError } from "../domain/errors.ts";
import { manifestDigest, manifestSchema } from "../domain/manifest.ts";
import type { AgentScope } from "../domain/scope.ts";
import {
  artifactSchema,
  baselineKeySchema,
  entityIdSchema,
  objectIdSchema,
  sourceSchema,
} from "../domain/snapshot-keys.ts";
import type { PublishBaselineResult, SnapshotRef } from "../domain/views.ts";
import { findOrCreateRepository, findRepository } from "./repositories.ts";
import {
  checkArtifact,
  manifestColumns,
  snapshotMetadata,
  snapshotRefSelect,
  toSnapshotRef,
  type SnapshotRefRow,
} from "./snapshots.ts";
import { clientFields } from "../domain/client-fields.ts";

/**
 * Which baseline of a key a new task gets: the one ready baseline (at most one exists: a partial
 * unique index keeps it so). The acquire asks findReadyBaseline (and its PostgreSQL statement
 * the same columns); the dashboard marks the current baseline of each key with isCurrentBaseline.
 */
const CURRENT_BASELINE = { class: "baseline", state: "ready" } as const;

export function isCurrentBaseline(snapshot: { class: string; state: string }): boolean {
  return snapshot.class === CURRENT_BASELINE.class && snapshot.state === CURRENT_BASELINE.state;
}

/** The ready baseline of a key (at most one exists: a partial unique index keeps it so). */
export function findReadyBaseline(
  db: Db,
  key: { agentId: string; repositoryId: string; backendKind: string; baseImage: string; canonicalRef: string },
): Promise<SnapshotRefRow | null> {
  return db.snapshot.findFirst({
    where: {
      agentId: key.agentId,
      repositoryId: key.repositoryId,
      backendKind: key.backendKind,
      baseImage: key.baseImage,
      canonicalRef: key.canonicalRef,
      ...CURRENT_BASELINE,
    },
    select: snapshotRefSelect,
  });
}

export const publishBaselineInput = z.strictObject({
  key: baselineKeySchema,
  commit: objectIdSchema,
  manifest: manifestSchema,
  evidence: baselineEvidenceSchema,
  /** The ready baseline of this key the publisher saw before capturing, or null for none. */
  observedHeadId: entityIdSchema.nullable(),
  source: sourceSchema.optional(),
  /** The artifact the capture minted (its backend kind and reference), when the client says. */
  artifact: artifactSchema.optional(),
});
export type PublishBaselineInput = z.input<typeof publishBaselineInput>;

export async function publishBaseline(
  db: Db,
  opts: PublishBaselineInput & { agent: AgentScope; now?: Date },
): Promise<PublishBaselineResult> {
  const input = publishBaselineInput.parse(clientFields(opts, "agent", "now"));
  const { key, commit, manifest, evidence } = input;
  const failed = failedEvidenceChecks({ canonicalRef: key.canonicalRef, commit, manifest, evidence });
  if (failed.length > 0) {
    throw new StrataError("EVIDENCE_INVALID", `The baseline evidence fails: ${failed.join(", ")}.`, {
      hint:
        "Only a freshly fetched, clean checkout of the canonical branch can be a baseline. " +
        "Capture task work as a checkpoint instead.",
      data: { failedChecks: failed },
    });
  }
  const agentId = opts.agent.agentId;
  const digest = manifestDigest(manifest);
  checkArtifact(input.artifact, manifest);

  return inTransaction(db, async (tx) => {
    const now = opts.now ?? new Date();
    const repository = await findOrCreateRepository(tx, key.repository);
    const current = await findReadyBaseline(tx, { ...key, agentId, repositoryId: repository.id });
    if (current && current.canonicalCommit === commit) {
      return { outcome: "unchanged", snapshot: toSnapshotRef(current), supersededId: null };
    }
    if ((current?.id ?? null) !== input.observedHeadId) {
      throw new StrataError("BASELINE_STALE", "The baseline moved since it was observed; nothing was published.", {
        hint: "Another publisher won. Acquire again to see the current baseline before publishing.",
        data: { currentHeadId: current?.id ?? null, currentCommit: current?.canonicalCommit ?? null },
      });
    }
    if (current) {
      // The compare-and-swap: only the transaction that moves this very row off `ready` wins.
      const swapped = await tx.snapshot.updateMany({
        where: { id: current.id, state: "ready" },
        data: { state: "superseded", supersededAt: now },
      });
      if (swapped.count !== 1) throw new RetryTransaction("baseline head moved during publish");
    }
    try {
      const created = await tx.snapshot.create({
        data: {
          class: "baseline",
          state: "ready",
          agentId,
          repositoryId: repository.id,
          backendKind: key.backendKind,
          baseImage: key.baseImage,
          canonicalRef: key.canonicalRef,
          canonicalCommit: commit,
          validation: { ...evidence, checkedAt: now.toISOString() },
          ...manifestColumns(manifest, digest, input.source, input.artifact),
          metadata: snapshotMetadata(manifest),
          createdAt: now,
          readyAt: now,
        },
        select: snapshotRefSelect,
      });
      return { outcome: "published", snapshot: toSnapshotRef(created), supersededId: current?.id ?? null };
    } catch (error) {
      // Another first baseline of this key committed: judge again against it.
      if (isUniqueViolation(error)) throw new RetryTransaction("a ready baseline appeared during publish");
      throw error;
    }
  });
}

export const baselineHeadInput = z.strictObject({ key: baselineKeySchema });

/** The ready baseline of the calling agent's key, or null: what a publisher observes before capturing. */
export async function findBaselineHead(
  db: Db,
  opts: z.input<typeof baselineHeadInput> & { agent: AgentScope },
): Promise<SnapshotRef | null> {
  const { key } = baselineHeadInput.parse(clientFields(opts, "agent"));
  const repository = await findRepository(db, key.repository.identity);
  if (!repository) return null;
  const row = await findReadyBaseline(db, { ...key, agentId: opts.agent.agentId, repositoryId: repository.id });
  return row ? toSnapshotRef(row) : null;
}
