// Retirement from the dashboard, read before it is done: what retiring a snapshot or a lineage
// will do (which snapshots leave restore eligibility, which stay protected by active pins, what
// collection may then reclaim). The retirements themselves, by a signed-in user with a reason,
// are lineage/'s (retire-snapshot-by-user.ts, retire-lineage-by-user.ts).
import { z } from "zod";
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { StrataError } from "../domain/errors.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";
import { dbNow } from "../db/sql.ts";
import { HEAD_RELEASE_STATES } from "../lineage/retirement.ts";
import { withHolderNames } from "../audit/holder-names.ts";

export const retirementSubjectInput = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("snapshot"), id: entityIdSchema }),
  z.strictObject({ kind: z.literal("lineage"), id: entityIdSchema }),
]);
export type RetirementSubjectInput = z.input<typeof retirementSubjectInput>;

const LAYER_WALK_LIMIT = 5_000;
const RETIRED = new Set<string>(HEAD_RELEASE_STATES);

const snapshotBrief = {
  id: true,
  class: true,
  state: true,
  sequence: true,
  workContextId: true,
  canonicalRef: true,
  sizeBytes: true,
  createdAt: true,
} satisfies Prisma.SnapshotSelect;

export interface ReclaimEstimate {
  /** Available layers that only the released snapshots reach. */
  layers: number;
  bytes: number;
  /** Layers beneath them that other snapshots still reach (they stay). */
  sharedLayers: number;
  /** The walk stopped at its limit: the figures are a lower bound. */
  partial: boolean;
}

/**
 * What collection could reclaim once these snapshots' heads are released: the layers beneath
 * them that no other snapshot's head reaches. Walks up from their heads and down to find
 * other heads in the same trees; bounded, so huge shared forests give a lower bound.
 */
async function reclaimEstimate(db: Db, snapshotIds: string[]): Promise<ReclaimEstimate> {
  const empty = { layers: 0, bytes: 0, sharedLayers: 0, partial: false };
  if (snapshotIds.length === 0) return empty;
  const heads = await db.snapshotHead.findMany({
    where: { snapshotId: { in: snapshotIds } },
    select: { layerUuid: true },
  });
  if (heads.length === 0) return empty;
  type Row = { uuid: string; parentUuid: string | null; sizeBytes: bigint; state: string };
  const select = { uuid: true, parentUuid: true, sizeBytes: true, state: true } as const;
  const layers = new Map<string, Row>();
  let partial = false;
  // Up: the forest beneath the heads.
  let frontier = [...new Set(heads.map((h) => h.layerUuid))];
  const beneath = new Set<string>();
  while (frontier.length > 0) {
    if (layers.size >= LAYER_WALK_LIMIT) {
      partial = true;
      break;
    }
    const rows = await db.layer.findMany({ where: { uuid: { in: frontier } }, select });
    for (const r of rows) {
      layers.set(r.uuid, r);
      beneath.add(r.uuid);
    }
    frontier = [...new Set(rows.map((r) => r.parentUuid).filter((p): p is string => p !== null && !layers.has(p)))];
  }
  // Down: other branches growing from that forest, where other snapshots' heads may sit.
  frontier = [...beneath];
  while (frontier.length > 0) {
    if (layers.size >= LAYER_WALK_LIMIT) {
      partial = true;
      break;
    }
    const rows = await db.layer.findMany({ where: { parentUuid: { in: frontier } }, select });
    const fresh = rows.filter((r) => !layers.has(r.uuid));
    for (const r of fresh) layers.set(r.uuid, r);
    frontier = fresh.map((r) => r.uuid);
  }
  const others = await db.snapshotHead.findMany({
    where: { layerUuid: { in: [...layers.keys()] }, snapshotId: { notIn: snapshotIds } },
    select: { layerUuid: true },
  });
  const shared = new Set<string>();
  for (const head of others) {
    for (let at: string | null = head.layerUuid; at && !shared.has(at); at = layers.get(at)?.parentUuid ?? null) {
      shared.add(at);
    }
  }
  let count = 0;
  let bytes = 0;
  let sharedLayers = 0;
  for (const uuid of beneath) {
    const layer = layers.get(uuid)!;
    if (shared.has(uuid)) sharedLayers += 1;
    else if (layer.state === "available") {
      count += 1;
      bytes += Number(layer.sizeBytes);
    }
  }
  return { layers: count, bytes, sharedLayers, partial };
}

async function activePinsOf(db: Db, snapshotIds: string[], now: Date) {
  if (snapshotIds.length === 0) return [];
  return db.pin.findMany({
    where: {
      snapshotId: { in: snapshotIds },
      released: false,
      OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
    },
    orderBy: { createdAt: "asc" },
    select: {
      agentId: true,
      pinId: true,
      snapshotId: true,
      holder: true,
      purpose: true,
      createdAt: true,
      expiresAt: true,
    },
  });
}

type Brief = Prisma.SnapshotGetPayload<{ select: typeof snapshotBrief }>;

function briefView(s: Brief) {
  return { ...s, sizeBytes: Number(s.sizeBytes) };
}

/** What retiring the subject would do, read now; nothing changes. */
export async function previewRetirement(db: Db, input: RetirementSubjectInput) {
  const subject = retirementSubjectInput.parse(input);
  const now = await dbNow(db);
  const notes: string[] = [];
  let retires: Brief[];
  let title: string;
  let alreadyRetired: boolean;
  let untouched: Brief[] = [];

  if (subject.kind === "snapshot") {
    const row = await db.snapshot.findUnique({
      where: { id: subject.id },
      select: { ...snapshotBrief, lineageId: true, repository: { select: { name: true } } },
    });
    if (!row) throw new StrataError("NOT_FOUND", `Snapshot ${subject.id} was not found.`);
    alreadyRetired = RETIRED.has(row.state);
    retires = alreadyRetired ? [] : [row];
    title =
      row.class === "baseline"
        ? `baseline ${row.canonicalRef ?? ""} of ${row.repository.name}`
        : `checkpoint #${row.sequence ?? "?"} of work context ${row.workContextId ?? "?"}`;
    if (!alreadyRetired && row.state === "ready") {
      notes.push(
        row.class === "baseline"
          ? "It is the ready baseline of its key: new work for that key starts cold until a new baseline is published."
          : "It is the ready head of its work context: the next acquire of that work context falls back to the baseline (or starts cold), and is told to inspect external state first.",
      );
    }
  } else {
    const lineage = await db.lineage.findUnique({
      where: { id: subject.id },
      select: { id: true, state: true, workContextId: true, repository: { select: { name: true } } },
    });
    if (!lineage) throw new StrataError("NOT_FOUND", `Lineage ${subject.id} was not found.`);
    alreadyRetired = lineage.state === "retired";
    const checkpoints = await db.snapshot.findMany({
      where: { lineageId: lineage.id, class: "checkpoint" },
      orderBy: { sequence: "asc" },
      select: snapshotBrief,
    });
    retires = alreadyRetired ? [] : checkpoints.filter((c) => c.state === "ready" || c.state === "capturing");
    untouched = checkpoints.filter((c) => !retires.includes(c));
    title = `work context ${lineage.workContextId} of ${lineage.repository.name}`;
    if (!alreadyRetired) {
      notes.push(
        "The lineage takes no more checkpoints; an agent resuming this work context is told to use a new one.",
      );
      const superseded = untouched.filter((c) => c.state === "superseded").length;
      if (superseded > 0) {
        notes.push(
          `${superseded} earlier checkpoint${superseded === 1 ? " is" : "s are"} already superseded: not restorable, and handed to collection by the sweeper after the retention window.`,
        );
      }
    }
  }

  const ids = retires.map((s) => s.id);
  // Forks that would lose the checkpoint they were promised: those with none of their own yet.
  const waitingForks =
    ids.length === 0
      ? 0
      : await db.lineage.count({
          where: { forkedFromId: { in: ids }, state: "active", checkpoints: { none: { failedAt: null } } },
        });
  if (waitingForks > 0) {
    notes.push(
      waitingForks === 1
        ? "1 work context forked from it has no checkpoint of its own yet: it will start from the baseline instead (or cold), told to inspect external state first."
        : `${waitingForks} work contexts forked from it have no checkpoint of their own yet: they will start from the baseline instead (or cold), told to inspect external state first.`,
    );
  }
  const pins = await activePinsOf(db, ids, now);
  const pinned = new Set(pins.map((p) => p.snapshotId));
  const released = ids.filter((id) => !pinned.has(id));
  const reclaim = await reclaimEstimate(db, released);
  if (pins.length > 0) {
    notes.push(
      "Pinned snapshots keep their content until every pin on them is released or expires; established pins are never broken.",
    );
  }
  return {
    kind: subject.kind,
    id: subject.id,
    title,
    alreadyRetired,
    retires: retires.map(briefView),
    untouched: untouched.map(briefView),
    protectedByPins: await withHolderNames(db, pins),
    /** Snapshots whose heads the next collection releases (no active pin). */
    releasedAtNextCollection: released.length,
    reclaim,
    notes,
  };
}
