// Usage holds (pins). A pin protects a snapshot, and everything beneath its heads, while
// something uses it. Release is idempotent, and a release that arrives before its pin closes
// that pin id for ever. Retirement refuses new pins but never breaks established ones.
//
// Pin ids are per agent (the key is agent + pin id): every call names the agent, and sees only
// that agent's ids. A pin is taken only on the agent's own snapshot; another agent's snapshot
// is read exactly like a missing one (the same single statement finds neither), and a release
// never looks at the snapshot at all, so no answer or query count tells another agent's ids
// or snapshots from unused ones.
//
// A pin may carry an expiry (a partly restored worktree is kept 30 days). An expired pin no
// longer protects anything, on the database's clock, even before collection records it as
// released; its id is closed like a released one (pinning it again is PIN_CLOSED).
//
// Arbitration: a new pin holds the snapshot row FOR SHARE while it checks the state and
// inserts; retirement and head release hold it FOR UPDATE. So either the pin commits first
// (and retirement keeps the heads), or retirement does (and the pin is refused).
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { StrataError } from "../domain/errors.ts";
import { identifierText } from "../domain/text.ts";
import type { Pin } from "../db/generated/postgres/client.ts";
import { dbNow } from "../db/sql.ts";
import { agentPinIds, shareOwnSnapshot } from "../db/statements/content.ts";

/** Snapshot states a new pin may be taken on. */
const PINNABLE_STATES = ["ready", "superseded"] as const;
export type PinnableState = (typeof PINNABLE_STATES)[number];

export const pinIdSchema = identifierText({ max: 200 });

/** The longest expiry a pin may ask for through the API. */
export const MAX_PIN_SECONDS = 90 * 24 * 60 * 60;

export interface PinOptions {
  snapshotId: string;
  pinId: string;
  holder?: string;
  purpose?: string;
  /** When the pin stops protecting (absolute). */
  expiresAt?: Date;
  /** When the pin stops protecting, counted from now on the database's clock. */
  expiresInSeconds?: number;
  /** The agent the pin belongs to; the snapshot must be its own (otherwise NOT_FOUND). */
  agentId: string;
  /** The states the pin may be taken in (default: every pinnable state); others are PIN_REFUSED. */
  states?: readonly PinnableState[];
}

export interface ReleaseOptions {
  snapshotId: string;
  pinId: string;
  holder?: string;
  /**
   * The agent whose pin id this is. A release of an id the agent never used records it closed
   * in the agent's own namespace, whoever's snapshot it names (or none): it protects nothing.
   */
  agentId: string;
}

/** Whether a pin protects its snapshot at `now` (database clock). */
export function isPinActive(pin: Pick<Pin, "released" | "expiresAt">, now: Date): boolean {
  return !pin.released && (pin.expiresAt === null || pin.expiresAt.getTime() > now.getTime());
}

function notFound(snapshotId: string): StrataError {
  return new StrataError("NOT_FOUND", `Snapshot ${snapshotId} was not found.`);
}

function pinNotFound(pinId: string): StrataError {
  return new StrataError("NOT_FOUND", `Pin ${pinId} was not found.`);
}

function pinKey(agentId: string, pinId: string) {
  return { agentId_pinId: { agentId, pinId } };
}

async function checkExisting(db: Db, existing: Pin, opts: PinOptions): Promise<Pin> {
  if (existing.snapshotId !== opts.snapshotId) {
    throw new StrataError("CONFLICT", `Pin ${existing.pinId} protects another snapshot.`, {
      hint: "A pin id is bound to one snapshot for ever: use a new pin id.",
    });
  }
  if (existing.released) {
    throw new StrataError("PIN_CLOSED", `Pin ${existing.pinId} was released and cannot be used again.`, {
      hint: "Use a new pin id.",
    });
  }
  if (!isPinActive(existing, await dbNow(db))) {
    throw new StrataError("PIN_CLOSED", `Pin ${existing.pinId} expired and cannot be used again.`, {
      hint: "Use a new pin id.",
      data: { expiresAt: existing.expiresAt?.toISOString() ?? null },
    });
  }
  return existing;
}

/** Takes (or confirms) a pin. Idempotent for the same (snapshot, pin id). */
export async function pinSnapshot(db: Db, opts: PinOptions): Promise<Pin> {
  if (opts.expiresInSeconds !== undefined && !(opts.expiresInSeconds > 0)) {
    throw new StrataError("INVALID_INPUT", "expiresInSeconds must be positive.");
  }
  return inTransaction(db, async (tx) => {
    const existing = await tx.pin.findUnique({ where: pinKey(opts.agentId, opts.pinId) });
    if (existing) return checkExisting(tx, existing, opts);

    // Held FOR SHARE, so retirement and head release cannot pass the new pin; another agent's
    // snapshot is not found, exactly like a missing one.
    const snapshot = await shareOwnSnapshot(tx, opts.snapshotId, opts.agentId);
    if (!snapshot) throw notFound(opts.snapshotId);
    if (!((opts.states ?? PINNABLE_STATES) as readonly string[]).includes(snapshot.state)) {
      throw new StrataError("PIN_REFUSED", `Snapshot ${opts.snapshotId} is ${snapshot.state} and takes no new pins.`, {
        hint: "Established pins keep protecting it; choose a ready snapshot for new work.",
        data: { state: snapshot.state },
      });
    }
    const now = await dbNow(tx);
    const expiresAt =
      opts.expiresInSeconds !== undefined
        ? new Date(now.getTime() + opts.expiresInSeconds * 1000)
        : (opts.expiresAt ?? null);
    try {
      return await tx.pin.create({
        data: {
          agentId: opts.agentId,
          pinId: opts.pinId,
          snapshotId: opts.snapshotId,
          holder: opts.holder ?? null,
          purpose: opts.purpose ?? null,
          createdAt: now,
          expiresAt,
        },
      });
    } catch (error) {
      // A concurrent pin or release with this id won: the retry judges against what it wrote.
      if (isUniqueViolation(error)) throw new RetryTransaction("pin id taken concurrently");
      throw error;
    }
  });
}

/** Releases a pin. Idempotent; a release before the pin records the pin id as closed. */
export async function releasePin(db: Db, opts: ReleaseOptions): Promise<Pin> {
  return inTransaction(db, async (tx) => {
    const key = pinKey(opts.agentId, opts.pinId);
    const existing = await tx.pin.findUnique({ where: key });
    const now = await dbNow(tx);
    if (existing) {
      if (existing.snapshotId !== opts.snapshotId) {
        throw new StrataError("CONFLICT", `Pin ${opts.pinId} protects another snapshot.`);
      }
      if (existing.released) return existing;
      await tx.pin.updateMany({
        where: { agentId: opts.agentId, pinId: opts.pinId, released: false },
        data: { released: true, releasedAt: now },
      });
      return tx.pin.findUniqueOrThrow({ where: key });
    }
    try {
      return await tx.pin.create({
        data: {
          agentId: opts.agentId,
          pinId: opts.pinId,
          snapshotId: opts.snapshotId,
          released: true,
          releasedAt: now,
          createdAt: now,
          holder: opts.holder ?? null,
          purpose: "released-before-pin",
        },
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new RetryTransaction("pin id taken concurrently");
      throw error;
    }
  });
}

/** Reads one of the agent's pins without changing it. */
export async function inspectPin(db: Db, pinId: string, opts: { agentId: string }): Promise<Pin> {
  const pin = await db.pin.findUnique({ where: pinKey(opts.agentId, pinId) });
  if (!pin) throw pinNotFound(pinId);
  return pin;
}

export interface PinView extends Pin {
  /** Whether the pin protects its snapshot now (not released, not expired). */
  active: boolean;
}

/** A pin with whether it protects its snapshot now (database clock). */
export async function describePin(db: Db, pinId: string, opts: { agentId: string }): Promise<PinView> {
  const pin = await inspectPin(db, pinId, opts);
  return { ...pin, active: isPinActive(pin, await dbNow(db)) };
}

/** Whether any active (unreleased, unexpired) pin protects the snapshot. */
export async function hasActivePin(db: Db, snapshotId: string, now?: Date): Promise<boolean> {
  const at = now ?? (await dbNow(db));
  const pin = await db.pin.findFirst({
    where: { snapshotId, released: false, OR: [{ expiresAt: null }, { expiresAt: { gt: at } }] },
    select: { pinId: true },
  });
  return pin !== null;
}

export const listPinsInput = z.strictObject({
  snapshotId: z.string().trim().min(1).max(200).optional(),
  /** true: only pins that protect now; false: only released or expired ones. */
  active: z.boolean().optional(),
  limit: z.number().int().min(1).max(500).default(100),
});
export type ListPinsInput = z.input<typeof listPinsInput>;

/** The agent's pins on its own snapshots, newest first. */
export async function listAgentPins(db: Db, opts: ListPinsInput & { agentId: string }): Promise<PinView[]> {
  const { agentId: _agentId, ...fields } = opts;
  const input = listPinsInput.parse(fields);
  const now = await dbNow(db);
  const ids = await agentPinIds(db, {
    agentId: opts.agentId,
    snapshotId: input.snapshotId,
    active: input.active === undefined ? undefined : { protecting: input.active, at: now },
    limit: input.limit,
  });
  if (ids.length === 0) return [];
  const pins = await db.pin.findMany({
    where: { agentId: opts.agentId, pinId: { in: ids } },
    orderBy: [{ createdAt: "desc" }, { pinId: "asc" }],
  });
  return pins.map((pin) => ({ ...pin, active: isPinActive(pin, now) }));
}

/**
 * Records expired pins as released (collection does this on each run). An expired pin has
 * already stopped protecting; this makes the catalog say so. Returns how many were closed.
 */
export async function releaseExpiredPins(db: Db, opts: { limit?: number; now?: Date } = {}): Promise<number> {
  return inTransaction(db, async (tx) => {
    const now = opts.now ?? (await dbNow(tx));
    const due = await tx.pin.findMany({
      where: { released: false, expiresAt: { lte: now } },
      select: { agentId: true, pinId: true },
      take: opts.limit ?? 500,
    });
    if (due.length === 0) return 0;
    const closed = await tx.pin.updateMany({
      where: { OR: due.map((p) => ({ agentId: p.agentId, pinId: p.pinId })), released: false },
      data: { released: true, releasedAt: now },
    });
    return closed.count;
  });
}
