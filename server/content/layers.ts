// Layers and snapshot heads: the prefix-chain catalog.
//
// A layer is one sealed artifact with at most one parent; its bytes are the stored blob whose
// sha256 is the layer's digest. A snapshot keeps only the tops of its chains (snapshot_heads);
// everything beneath a head is protected by reachability. Publishing therefore writes only
// the new layers and the heads: O(delta + h) rows, whatever the length of the reused prefix.
//
// Layer uuids are per agent. The catalog keys a layer by a uuid of its own (`layers.uuid`, what
// heads, parents and collection use); the uuid an agent declared is `agent_uuid`, unique within
// that agent. A publish resolves every uuid it names (declared, parent, head) only among the
// snapshot owner's layers, with one query whatever the answer, so another agent's uuid is
// exactly an unused one: declaring it makes a new layer of the publisher's own, naming it as a
// parent or head is "not in the catalog", and no conflict ever compares with another's fields.
//
// Arbitration with collection: every existing layer a publish makes a new reference to (the
// parent of a new layer, or a reused head) is locked FOR SHARE and must be `available`;
// collection locks a layer FOR UPDATE (skipping locked rows) before it moves it to `deleting`,
// and re-checks heads and available children after taking the lock. Together with "a layer
// is marked only when it has no head and no available child", an available layer's parent is
// always available, so a reused prefix is intact below the row that was checked.
import { randomUUID } from "node:crypto";
import type { Db } from "../db/client.ts";
import { inTransaction } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import {
  layerDifferences,
  newLayersOutsideHeads,
  orderNewLayers,
  publishLayersInput,
  blobDigestSchema,
  type LayerDescriptor,
  type PublishLayersInput,
} from "../domain/content.ts";
import { StrataError } from "../domain/errors.ts";
import { dbNow } from "../db/sql.ts";
import {
  lockGrantedStoredBlobs,
  lockLayerStates,
  lockSnapshotForPublish,
  selectLayersOfAgent,
  type AgentLayerRow,
} from "../db/statements/content.ts";

/**
 * Snapshot states that may still gain heads: a capture being published, or a snapshot made
 * ready (and perhaps superseded since) whose layers are registered after the fact.
 */
const PUBLISHABLE_STATES = ["capturing", "ready", "superseded"];
const RETIRED_STATES = ["retired", "deleting", "deleted"];

export interface PublishLayersResult {
  /** New layer rows written. */
  layersWritten: number;
  /** Declared layers that were already in the catalog (checked, not written). */
  layersReused: number;
  /** New snapshot_heads rows written. */
  headsWritten: number;
  /** The snapshot's heads asked for, deduplicated, in the order given. */
  heads: string[];
}

function duplicates(values: readonly string[]): string[] {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const v of values) (seen.has(v) ? dup : seen).add(v);
  return [...dup];
}

/** The agent's layers among `agentUuids`, by agent uuid. Another agent's are simply not found. */
async function selectAgentLayers(
  tx: Db,
  agentId: string,
  agentUuids: readonly string[],
): Promise<Map<string, AgentLayerRow>> {
  const found = new Map<string, AgentLayerRow>();
  if (agentUuids.length === 0) return found;
  const sorted = [...new Set(agentUuids)].sort();
  for (let i = 0; i < sorted.length; i += 1000) {
    const slice = sorted.slice(i, i + 1000);
    for (const row of await selectLayersOfAgent(tx, agentId, slice)) found.set(row.agentUuid, row);
  }
  return found;
}

/** Locks layer rows (by row key) FOR SHARE and reads their states now. */
async function lockLayers(tx: Db, uuids: readonly string[]): Promise<Map<string, string>> {
  const states = new Map<string, string>();
  if (uuids.length === 0) return states;
  const sorted = [...new Set(uuids)].sort();
  for (let i = 0; i < sorted.length; i += 1000) {
    const slice = sorted.slice(i, i + 1000);
    // Locks are taken in uuid order, the same order collection takes them in.
    for (const row of await lockLayerStates(tx, slice)) states.set(row.uuid, row.state);
  }
  return states;
}

/**
 * Locks the stored blobs granted to `agentId` FOR SHARE, so collection cannot delete them under
 * this transaction. A digest stored but not granted is left out, exactly like one not stored:
 * an agent publishes only bytes it uploaded (or the server stored for it).
 */
async function lockStoredBlobs(
  tx: Db,
  agentId: string,
  digests: readonly string[],
): Promise<Map<string, { sizeBytes: number }>> {
  const found = new Map<string, { sizeBytes: number }>();
  if (digests.length === 0) return found;
  const sorted = [...new Set(digests)].sort();
  for (let i = 0; i < sorted.length; i += 1000) {
    const slice = sorted.slice(i, i + 1000);
    for (const row of await lockGrantedStoredBlobs(tx, agentId, slice)) {
      found.set(row.digest, { sizeBytes: row.sizeBytes });
    }
  }
  return found;
}

function unavailable(uuids: string[], states: string[]): StrataError {
  return new StrataError(
    "LAYER_UNAVAILABLE",
    `Layer ${uuids.join(", ")} is ${states.join(", ")} and cannot be reused: collection is reclaiming it.`,
    {
      hint: "Publish the content as a new chain (new layer uuids, uploaded again) instead of reusing this prefix.",
      data: { uuids, states },
    },
  );
}

/** LAYER_CONFLICT when a declared layer of the agent's exists with another parent, digest, size or kind. */
function refuseRebinds(declared: readonly LayerDescriptor[], existing: Map<string, AgentLayerRow>): void {
  const conflicts: { uuid: string; fields: string[] }[] = [];
  for (const layer of declared) {
    const row = existing.get(layer.uuid);
    if (!row) continue;
    const fields = layerDifferences(layer, {
      parentUuid: row.parentAgentUuid,
      digest: row.digest,
      sizeBytes: row.sizeBytes,
      kind: row.kind,
    });
    if (fields.length > 0) conflicts.push({ uuid: layer.uuid, fields });
  }
  if (conflicts.length > 0) {
    throw new StrataError(
      "LAYER_CONFLICT",
      `Layer ${conflicts.map((c) => c.uuid).join(", ")} already exists with another ` +
        `${[...new Set(conflicts.flatMap((c) => c.fields))].join(", ")}.`,
      {
        hint: "A layer uuid names one sealed artifact for ever: new bytes or a new parent need a new uuid.",
        data: { conflicts },
      },
    );
  }
}

/**
 * Adds layers and heads to a snapshot, inside the caller's transaction if there is one.
 * Writes only layers that are new and heads the snapshot does not have yet; a retry of the
 * same publish writes nothing. Refuses (and writes nothing) when:
 * - a declared layer exists with another parent, digest, size or kind (LAYER_CONFLICT);
 * - a reused layer is being collected (LAYER_UNAVAILABLE);
 * - a parent or head is neither declared nor in the catalog, new layers form a cycle, or a
 *   new layer is under no head (INVALID_INPUT);
 * - a new layer's bytes are not stored, or not granted to the snapshot's agent (BLOB_MISSING),
 *   or have another size (INVALID_INPUT);
 * - the snapshot is retired (SNAPSHOT_RETIRED) or otherwise past publishing (CONFLICT).
 */
export async function publishLayers(
  db: Db,
  opts: PublishLayersInput & { snapshotId: string },
): Promise<PublishLayersResult> {
  const input = publishLayersInput.parse({ layers: opts.layers, heads: opts.heads });
  const declared = input.layers;
  const heads = [...new Set(input.heads)];

  return inTransaction(db, async (tx) => {
    const snapshot = await lockPublishableSnapshot(tx, opts.snapshotId);
    return (await writeLayers(tx, snapshot, declared, heads)).result;
  });
}

/**
 * The body of a publish, inside a transaction that holds the snapshot row: checks, locks and
 * writes. New layers' blobs must be granted to the snapshot's agent. `alsoLock` are further
 * stored blobs to hold FOR SHARE in the same statement (the manifest); the caller checks their
 * presence in the returned map.
 */
async function writeLayers(
  tx: Db,
  { id: snapshotId, agentId }: { id: string; agentId: string },
  declared: readonly LayerDescriptor[],
  heads: readonly string[],
  alsoLock: readonly string[] = [],
): Promise<{ result: PublishLayersResult; blobs: Map<string, { sizeBytes: number }>; now: Date }> {
  const dup = duplicates(declared.map((l) => l.uuid));
  if (dup.length > 0) {
    throw new StrataError("INVALID_INPUT", `Layer ${dup.join(", ")} is declared more than once.`, {
      data: { uuids: dup },
    });
  }
  const declaredByUuid = new Map(declared.map((l) => [l.uuid, l]));

  // What the agent already has of everything this publish names (uuids here are the agent's).
  const named = new Set<string>([...declaredByUuid.keys(), ...heads]);
  for (const l of declared) if (l.parentUuid) named.add(l.parentUuid);
  const existing = await selectAgentLayers(tx, agentId, [...named]);

  // New references go to: parents of new layers that exist, and heads that exist.
  const fresh = declared.filter((l) => !existing.has(l.uuid));
  const referenced = new Set<string>();
  for (const l of fresh) if (l.parentUuid && existing.has(l.parentUuid)) referenced.add(l.parentUuid);
  for (const h of heads) if (existing.has(h)) referenced.add(h);
  // A row that vanished or changed between the two reads cannot happen (rows are immutable
  // and never deleted), but a state can move on: judge states by the locked read.
  const locked = await lockLayers(
    tx,
    [...referenced].map((u) => existing.get(u)!.uuid),
  );
  for (const row of existing.values()) row.state = locked.get(row.uuid) ?? row.state;

  refuseRebinds(declared, existing);

  const notAvailable = [...existing.values()].filter(
    (row) => row.state !== "available" && (declaredByUuid.has(row.agentUuid) || referenced.has(row.agentUuid)),
  );
  if (notAvailable.length > 0) {
    throw unavailable(
      notAvailable.map((r) => r.agentUuid),
      notAvailable.map((r) => r.state),
    );
  }

  const unknownParents = fresh
    .filter((l) => l.parentUuid && !declaredByUuid.has(l.parentUuid) && !existing.has(l.parentUuid))
    .map((l) => l.parentUuid!);
  const unknownHeads = heads.filter((h) => !declaredByUuid.has(h) && !existing.has(h));
  if (unknownParents.length > 0 || unknownHeads.length > 0) {
    throw new StrataError(
      "INVALID_INPUT",
      `Layer ${[...new Set([...unknownParents, ...unknownHeads])].join(", ")} is neither declared nor in the catalog.`,
      {
        hint: "Declare every new layer (uuid, parentUuid, digest, sizeBytes, kind); a reused layer must already exist.",
        data: { unknownParents: [...new Set(unknownParents)], unknownHeads },
      },
    );
  }

  const ordered = orderNewLayers(fresh);
  if (!ordered.ok) {
    throw new StrataError("INVALID_INPUT", `The new layers ${ordered.cycle.join(" → ")} form a cycle.`, {
      hint: "Layers form a forest: each parent must be sealed before its child.",
      data: { cycle: ordered.cycle },
    });
  }
  const orphans = newLayersOutsideHeads(fresh, heads);
  if (orphans.length > 0) {
    throw new StrataError("INVALID_INPUT", `New layer ${orphans.join(", ")} is under no head of this snapshot.`, {
      hint: "List the top of every chain in `heads`; a layer no head reaches would be collected at once.",
      data: { uuids: orphans },
    });
  }

  // The bytes of every new layer must be stored and granted to the agent, and stay stored until
  // we commit. Reused layers are not asked: their uuids came from the agent's own snapshots.
  const blobs = await lockStoredBlobs(tx, agentId, [...fresh.map((l) => l.digest), ...alsoLock]);
  const missing = [...new Set(fresh.map((l) => l.digest).filter((d) => !blobs.has(d)))];
  if (missing.length > 0) {
    throw new StrataError("BLOB_MISSING", `The bytes of ${missing.length} new layer(s) are not stored.`, {
      hint: "Upload them first (blob.missing tells which), then publish again.",
      data: { digests: missing },
    });
  }
  const wrongSize = fresh.filter((l) => blobs.get(l.digest)!.sizeBytes !== l.sizeBytes);
  if (wrongSize.length > 0) {
    throw new StrataError("INVALID_INPUT", `Layer ${wrongSize.map((l) => l.uuid).join(", ")} has the wrong size.`, {
      hint: "sizeBytes must be the size of the stored blob the digest names.",
      data: { uuids: wrongSize.map((l) => l.uuid) },
    });
  }

  // Row keys: a new layer gets one of its own; names resolve to the agent's rows.
  const rowKey = new Map<string, string>([...existing].map(([agentUuid, row]) => [agentUuid, row.uuid]));
  for (const l of ordered.order) rowKey.set(l.uuid, randomUUID());

  const now = await dbNow(tx);
  if (ordered.order.length > 0) {
    try {
      await tx.layer.createMany({
        data: ordered.order.map((l) => ({
          uuid: rowKey.get(l.uuid)!,
          agentId,
          agentUuid: l.uuid,
          parentUuid: l.parentUuid === null ? null : rowKey.get(l.parentUuid)!,
          digest: l.digest,
          sizeBytes: BigInt(l.sizeBytes),
          kind: l.kind,
          state: "available",
          createdAt: now,
        })),
      });
    } catch (error) {
      // A concurrent publish of this agent sealed one of these uuids first: the retry compares with it.
      if (isUniqueViolation(error)) throw new RetryTransaction("layer uuid inserted concurrently");
      throw error;
    }
  }

  const headKeys = heads.map((h) => rowKey.get(h)!);
  const had = new Set(
    (
      await tx.snapshotHead.findMany({
        where: { snapshotId, layerUuid: { in: headKeys } },
        select: { layerUuid: true },
      })
    ).map((h) => h.layerUuid),
  );
  const newHeads = headKeys.filter((h) => !had.has(h));
  if (newHeads.length > 0) {
    try {
      await tx.snapshotHead.createMany({
        data: newHeads.map((layerUuid) => ({ snapshotId, layerUuid })),
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new RetryTransaction("head inserted concurrently");
      throw error;
    }
  }
  return {
    result: {
      layersWritten: ordered.order.length,
      layersReused: declared.length - fresh.length,
      headsWritten: newHeads.length,
      heads: [...heads],
    },
    blobs,
    now,
  };
}

async function lockPublishableSnapshot(
  tx: Db,
  snapshotId: string,
  /** When set, another agent's snapshot is NOT_FOUND before its state is looked at. */
  agentId?: string,
): Promise<{ id: string; state: string; agentId: string; manifestDigest: string | null }> {
  // Lock and read in one statement (FOR UPDATE: arbitrates with retirement and head release).
  const found = await lockSnapshotForPublish(tx, snapshotId);
  if (!found || (agentId !== undefined && found.agentId !== agentId)) {
    throw new StrataError("NOT_FOUND", `Snapshot ${snapshotId} was not found.`);
  }
  const row = { id: snapshotId, ...found };
  if (RETIRED_STATES.includes(row.state)) {
    throw new StrataError("SNAPSHOT_RETIRED", `Snapshot ${snapshotId} is ${row.state} and takes no new content.`);
  }
  if (!PUBLISHABLE_STATES.includes(row.state)) {
    throw new StrataError("CONFLICT", `Snapshot ${snapshotId} is ${row.state} and takes no new content.`, {
      data: { state: row.state },
    });
  }
  return row;
}

export interface PublishSnapshotOptions extends PublishLayersInput {
  snapshotId: string;
  /**
   * The sha256 of the stored manifest blob. Required to publish a capturing snapshot; for a
   * snapshot already made ready elsewhere (baseline.publish, checkpoint.append) it may be left
   * out, and when given it must be the manifest reference the snapshot already has.
   */
  manifestDigest?: string;
  /** When set, the snapshot must belong to this agent (otherwise NOT_FOUND). */
  agentId?: string;
}

export interface PublishSnapshotResult extends PublishLayersResult {
  snapshotId: string;
  state: "ready" | "superseded";
  manifestDigest: string | null;
  /** True when the snapshot already had exactly these heads (and manifest): nothing was written. */
  alreadyPublished: boolean;
}

/**
 * Publishes a snapshot in the layer form: its new layers, its heads and its manifest reference.
 * - A capturing snapshot becomes ready with them, all in one transaction.
 * - A snapshot made ready without content (by the lineage services) gets its layers and heads
 *   registered, once, also after it was superseded.
 * Publishing the same thing again is idempotent; anything else on a snapshot that already has
 * heads is a CONFLICT (a published snapshot is immutable).
 */
export async function publishSnapshot(db: Db, opts: PublishSnapshotOptions): Promise<PublishSnapshotResult> {
  const manifestDigest = opts.manifestDigest === undefined ? null : blobDigestSchema.parse(opts.manifestDigest);
  const input = publishLayersInput.parse({ layers: opts.layers, heads: opts.heads });
  const heads = [...new Set(input.heads)];
  return inTransaction(db, async (tx) => {
    const snapshot = await lockPublishableSnapshot(tx, opts.snapshotId, opts.agentId);
    const immutable = () =>
      new StrataError("CONFLICT", `Snapshot ${opts.snapshotId} is already published with other content.`, {
        hint: "A published snapshot is immutable: capture a new snapshot instead.",
      });

    if (snapshot.state === "ready" || snapshot.state === "superseded") {
      const state = snapshot.state;
      if (manifestDigest !== null && manifestDigest !== snapshot.manifestDigest) throw immutable();
      const current = await listHeads(tx, opts.snapshotId);
      if (current.length > 0) {
        refuseRebinds(
          input.layers,
          await selectAgentLayers(
            tx,
            snapshot.agentId,
            input.layers.map((l) => l.uuid),
          ),
        );
        const same = current.length === heads.length && current.every((h) => heads.includes(h));
        if (!same) throw immutable();
        return {
          snapshotId: opts.snapshotId,
          state,
          manifestDigest: snapshot.manifestDigest,
          alreadyPublished: true,
          layersWritten: 0,
          layersReused: input.layers.length,
          headsWritten: 0,
          heads,
        };
      }
      // Ready without content: register its layers and heads now.
      const { result } = await writeLayers(tx, snapshot, input.layers, heads);
      return {
        snapshotId: opts.snapshotId,
        state,
        manifestDigest: snapshot.manifestDigest,
        alreadyPublished: false,
        ...result,
      };
    }

    if (manifestDigest === null) {
      throw new StrataError("INVALID_INPUT", "Publishing a capturing snapshot needs its manifestDigest.", {
        hint: "Upload the manifest as a blob and pass its sha256.",
      });
    }
    const { result: written, blobs, now } = await writeLayers(tx, snapshot, input.layers, heads, [manifestDigest]);
    if (!blobs.has(manifestDigest)) {
      throw new StrataError("BLOB_MISSING", `The manifest blob ${manifestDigest} is not stored.`, {
        hint: "Upload the manifest (PUT /api/blobs/<sha256>) before publishing.",
        data: { digests: [manifestDigest] },
      });
    }
    try {
      const moved = await tx.snapshot.updateMany({
        where: { id: opts.snapshotId, state: "capturing" },
        data: { state: "ready", readyAt: now, manifestDigest },
      });
      if (moved.count !== 1) throw new RetryTransaction("snapshot changed state during publish");
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new StrataError("CONFLICT", `Another ready snapshot already holds this snapshot's key.`, {
          hint: "Baselines and checkpoints replace their key's head through baseline.publish / checkpoint.append.",
        });
      }
      throw error;
    }
    return { snapshotId: opts.snapshotId, state: "ready", manifestDigest, alreadyPublished: false, ...written };
  });
}

/** A snapshot's heads, as the uuids its agent declared them by, for inspection. */
export async function listHeads(db: Db, snapshotId: string): Promise<string[]> {
  const rows = await db.snapshotHead.findMany({
    where: { snapshotId },
    select: { layer: { select: { agentUuid: true } } },
  });
  return rows.map((r) => r.layer.agentUuid).sort();
}
