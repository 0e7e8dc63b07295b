// Usage holds (pins). A pin protects a snapshot, and everything beneath its heads, while
// something uses it. Release is idempotent, and a release that arrives before its pin closes
// that pin id for ever. Retirement refuses new pins but never breaks established ones.
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { isUniqueViolation, lockSnapshotRow, RetryTransaction } from "../db/errors.ts";
import { StrataError } from "../domain/errors.ts";
import type { Pin } from "../db/generated/postgres/client.ts";

/** Snapshot states a new pin may be taken on. */
export const PINNABLE_STATES = ["ready", "superseded"] as const;

export const pinIdSchema = z.string().trim().min(1).max(200);

export interface PinOptions {
  snapshotId: string;
  pinId: string;
  holder?: string;
  purpose?: string;
  expiresAt?: Date;
  /** When set, the snapshot must belong to this agent (otherwise NOT_FOUND). */
  agentId?: string;
}

function notFound(snapshotId: string): StrataError {
  return new StrataError("NOT_FOUND", `Snapshot ${snapshotId} was not found.`);
}

function checkExisting(existing: Pin, snapshotId: string): Pin {
  if (existing.snapshotId !== snapshotId) {
    throw new StrataError("CONFLICT", `Pin ${existing.pinId} protects another snapshot.`, {
      hint: "A pin id is bound to one snapshot for ever: use a new pin id.",
    });
  }
  if (existing.released) {
    throw new StrataError("PIN_CLOSED", `Pin ${existing.pinId} was released and cannot be used again.`, {
      hint: "Use a new pin id.",
    });
  }
  return existing;
}

/** Takes (or confirms) a pin. Idempotent for the same (snapshot, pin id). */
export async function pinSnapshot(db: Db, opts: PinOptions): Promise<Pin> {
  return inTransaction(db, async (tx) => {
    const existing = await tx.pin.findUnique({ where: { pinId: opts.pinId } });
    if (existing) return checkExisting(existing, opts.snapshotId);

    // Hold the snapshot row so retirement and head release cannot pass this pin.
    if (!(await lockSnapshotRow(tx, opts.snapshotId, "share"))) throw notFound(opts.snapshotId);
    const snapshot = await tx.snapshot.findUnique({
      where: { id: opts.snapshotId },
      select: { state: true, agentId: true },
    });
    if (!snapshot || (opts.agentId && snapshot.agentId !== opts.agentId)) throw notFound(opts.snapshotId);
    if (!(PINNABLE_STATES as readonly string[]).includes(snapshot.state)) {
      throw new StrataError("PIN_REFUSED", `Snapshot ${opts.snapshotId} is ${snapshot.state} and takes no new pins.`, {
        hint: "Established pins keep protecting it; choose a ready snapshot for new work.",
        data: { state: snapshot.state },
      });
    }
    try {
      return await tx.pin.create({
        data: {
          pinId: opts.pinId,
          snapshotId: opts.snapshotId,
          holder: opts.holder ?? null,
          purpose: opts.purpose ?? null,
          expiresAt: opts.expiresAt ?? null,
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
export async function releasePin(db: Db, opts: { snapshotId: string; pinId: string; holder?: string }): Promise<Pin> {
  return inTransaction(db, async (tx) => {
    const existing = await tx.pin.findUnique({ where: { pinId: opts.pinId } });
    if (existing) {
      if (existing.snapshotId !== opts.snapshotId) {
        throw new StrataError("CONFLICT", `Pin ${opts.pinId} protects another snapshot.`);
      }
      if (existing.released) return existing;
      await tx.pin.updateMany({
        where: { pinId: opts.pinId, released: false },
        data: { released: true, releasedAt: new Date() },
      });
      return tx.pin.findUniqueOrThrow({ where: { pinId: opts.pinId } });
    }
    try {
      return await tx.pin.create({
        data: {
          pinId: opts.pinId,
          snapshotId: opts.snapshotId,
          released: true,
          releasedAt: new Date(),
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

/** Reads a pin's state without changing it. */
export async function inspectPin(db: Db, pinId: string): Promise<Pin> {
  const pin = await db.pin.findUnique({ where: { pinId } });
  if (!pin) throw new StrataError("NOT_FOUND", `Pin ${pinId} was not found.`);
  return pin;
}

/** Whether any active pin protects the snapshot. */
export async function hasActivePin(db: Db, snapshotId: string): Promise<boolean> {
  return (await db.pin.count({ where: { snapshotId, released: false } })) > 0;
}
