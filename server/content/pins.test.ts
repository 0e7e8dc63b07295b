import { randomUUID } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import { inTransaction } from "../db/client.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { publishSnapshot } from "./layers.ts";
import {
  describePin,
  hasActivePin,
  inspectPin,
  listAgentPins,
  pinSnapshot,
  releaseExpiredPins,
  releasePin,
} from "./pins.ts";
import { releaseRetiredHeads, retireSnapshot } from "../lineage/retirement.ts";
import { createCapturingSnapshot, createOwner, storeBytes, storedLayer, type Owner } from "../testing/content.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A latch: `reached` resolves once `open()` is called (the held transaction did its write). */
function latch(): { reached: Promise<void>; open: () => void } {
  let open!: () => void;
  const reached = new Promise<void>((resolve) => (open = resolve));
  return { reached, open };
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

describeEachDatabase("pins", (catalog) => {
  let owner: Owner;
  let stranger: Owner;
  let manifest: string;
  const db = () => catalog().db;

  beforeAll(async () => {
    owner = await createOwner(db());
    stranger = await createOwner(db());
    manifest = (await storeBytes(db(), "pins manifest", owner)).digest;
  });

  /** A ready snapshot with one layer under its head. */
  async function ready(who: Owner = owner, id?: string): Promise<string> {
    const snapshotId = await createCapturingSnapshot(db(), who, id ? { id } : {});
    // Each owner publishes bytes it uploaded: its own layer and its own upload of the manifest.
    const layer = await storedLayer(db(), { owner: who });
    await storeBytes(db(), "pins manifest", who);
    await publishSnapshot(db(), { snapshotId, manifestDigest: manifest, layers: [layer], heads: [layer.uuid] });
    return snapshotId;
  }

  it("is idempotent for the same (snapshot, pin id) and binds a pin id to one snapshot", async () => {
    const s = await ready();
    const pinId = randomUUID();
    const first = await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId, holder: "restore-1" });
    const again = await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId, holder: "someone else" });
    expect(again).toEqual(first);
    expect(first).toMatchObject({ released: false, releasedAt: null, holder: "restore-1" });
    const other = await ready();
    expect(
      isStrataError(await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: other, pinId })), "CONFLICT"),
    ).toBe(true);
    expect(await db().pin.count({ where: { pinId } })).toBe(1);
  });

  it("takes new pins only on ready or superseded snapshots (PIN_REFUSED otherwise)", async () => {
    for (const state of ["ready", "superseded"]) {
      const s = await ready();
      await db().snapshot.update({ where: { id: s }, data: { state } });
      expect((await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId: randomUUID() })).released).toBe(
        false,
      );
    }
    for (const state of ["capturing", "retired", "failed", "deleting", "deleted"]) {
      const s = await createCapturingSnapshot(db(), owner);
      await db().snapshot.update({ where: { id: s }, data: { state } });
      const error = await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId: randomUUID() }));
      expect(isStrataError(error, "PIN_REFUSED"), state).toBe(true);
      expect(await db().pin.count({ where: { snapshotId: s } })).toBe(0);
    }
    expect(
      isStrataError(
        await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: randomUUID(), pinId: "x" })),
        "NOT_FOUND",
      ),
    ).toBe(true);
  });

  it("keeps an established pin through retirement: retries confirm it, release ends it", async () => {
    const s = await ready();
    const pinId = randomUUID();
    await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId });
    await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    expect((await pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId })).released).toBe(false);
    expect(await hasActivePin(db(), s)).toBe(true);
    const released = await releasePin(db(), { agentId: owner.agentId, snapshotId: s, pinId });
    expect(released.released).toBe(true);
    expect(released.releasedAt).not.toBeNull();
    // Release is idempotent and never reopens.
    expect(await releasePin(db(), { agentId: owner.agentId, snapshotId: s, pinId })).toEqual(released);
    expect(
      isStrataError(await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId })), "PIN_CLOSED"),
    ).toBe(true);
    expect(await hasActivePin(db(), s)).toBe(false);
  });

  it("closes a pin id for ever when its release arrives first, even before the snapshot exists", async () => {
    const s = await ready();
    const pinId = randomUUID();
    const closed = await releasePin(db(), { agentId: owner.agentId, snapshotId: s, pinId, holder: "restore-9" });
    expect(closed).toMatchObject({ released: true, purpose: "released-before-pin", snapshotId: s });
    expect(
      isStrataError(await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId })), "PIN_CLOSED"),
    ).toBe(true);
    expect((await inspectPin(db(), pinId, { agentId: owner.agentId })).released).toBe(true);

    const future = randomUUID();
    const early = randomUUID();
    await releasePin(db(), { snapshotId: future, pinId: early, agentId: owner.agentId });
    await ready(owner, future);
    expect(
      isStrataError(
        await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: future, pinId: early })),
        "PIN_CLOSED",
      ),
    ).toBe(true);
    // The database itself refuses a reopen.
    await expect(
      db().pin.update({
        where: { agentId_pinId: { agentId: owner.agentId, pinId: early } },
        data: { released: false, releasedAt: null },
      }),
    ).rejects.toThrow();
  });

  it("lets an expired pin stop protecting, on the database's clock, and closes its id", async () => {
    const s = await ready();
    const pinId = randomUUID();
    const pin = await pinSnapshot(db(), {
      agentId: owner.agentId,
      snapshotId: s,
      pinId,
      expiresInSeconds: 30 * 24 * 3600,
      purpose: "partial",
    });
    const expectedExpiry = pin.createdAt.getTime() + 30 * 24 * 3600 * 1000;
    expect(pin.expiresAt!.getTime()).toBe(expectedExpiry);
    expect((await describePin(db(), pinId, { agentId: owner.agentId })).active).toBe(true);
    expect(await hasActivePin(db(), s)).toBe(true);

    await db().pin.update({
      where: { agentId_pinId: { agentId: owner.agentId, pinId } },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect((await describePin(db(), pinId, { agentId: owner.agentId })).active).toBe(false);
    expect(await hasActivePin(db(), s)).toBe(false);
    expect(
      isStrataError(await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId })), "PIN_CLOSED"),
    ).toBe(true);
    // Retirement now releases the heads although the row still says unreleased.
    await retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } });
    expect(await releaseRetiredHeads(db(), { snapshotIds: [s] })).toMatchObject({ headsReleased: 1 });
    // Collection records it as released.
    expect(await releaseExpiredPins(db())).toBeGreaterThanOrEqual(1);
    expect((await inspectPin(db(), pinId, { agentId: owner.agentId })).released).toBe(true);
    expect(await releaseExpiredPins(db())).toBe(0);
    expect(
      isStrataError(
        await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId: "y", expiresInSeconds: 0 })),
        "INVALID_INPUT",
      ),
    ).toBe(true);
  });

  it("lists an agent's own pins, newest first, filtered by snapshot and activity", async () => {
    const lister = await createOwner(db());
    const a = await ready(lister);
    const b = await ready(lister);
    await pinSnapshot(db(), { agentId: lister.agentId, snapshotId: a, pinId: `a1-${randomUUID()}` });
    await pinSnapshot(db(), { agentId: lister.agentId, snapshotId: b, pinId: `b1-${randomUUID()}` });
    const gone = `b2-${randomUUID()}`;
    await pinSnapshot(db(), { agentId: lister.agentId, snapshotId: b, pinId: gone });
    await releasePin(db(), { agentId: lister.agentId, snapshotId: b, pinId: gone });
    const all = await listAgentPins(db(), { agentId: lister.agentId });
    expect(all).toHaveLength(3);
    expect(all.map((p) => p.createdAt.getTime())).toEqual(
      [...all.map((p) => p.createdAt.getTime())].sort((x, y) => y - x),
    );
    expect((await listAgentPins(db(), { agentId: lister.agentId, snapshotId: b })).map((p) => p.snapshotId)).toEqual([
      b,
      b,
    ]);
    expect((await listAgentPins(db(), { agentId: lister.agentId, active: true })).map((p) => p.active)).toEqual([
      true,
      true,
    ]);
    expect((await listAgentPins(db(), { agentId: lister.agentId, active: false })).map((p) => p.pinId)).toEqual([gone]);
    expect(await listAgentPins(db(), { agentId: stranger.agentId, snapshotId: a })).toEqual([]);
  });

  it("races a new pin against retirement: either the pin wins and the heads stay, or it is refused", async () => {
    const outcomes = { pinned: 0, refused: 0 };
    for (let round = 0; round < 12; round += 1) {
      const s = await ready();
      const pinId = randomUUID();
      const [pin, retire] = await Promise.allSettled([
        pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId }),
        retireSnapshot(db(), { snapshotId: s, actor: { type: "system" } }),
      ]);
      expect(retire.status).toBe("fulfilled");
      await releaseRetiredHeads(db(), { snapshotIds: [s] });
      const heads = await db().snapshotHead.count({ where: { snapshotId: s } });
      if (pin.status === "fulfilled") {
        outcomes.pinned += 1;
        expect(heads).toBe(1);
        expect(await hasActivePin(db(), s)).toBe(true);
      } else {
        outcomes.refused += 1;
        expect(isStrataError(pin.reason, "PIN_REFUSED")).toBe(true);
        expect(heads).toBe(0);
        expect(await db().pin.count({ where: { pinId } })).toBe(0);
      }
    }
    expect(outcomes.pinned + outcomes.refused).toBe(12);
  });

  it("forces both orders of pin and retirement with held-open transactions", async () => {
    // The pin commits first (its transaction is held while retirement starts): heads stay.
    const first = await ready();
    const pinned = latch();
    const holdPin = inTransaction(db(), async (tx) => {
      const pin = await pinSnapshot(tx, { agentId: owner.agentId, snapshotId: first, pinId: randomUUID() });
      pinned.open();
      await sleep(300);
      return pin;
    });
    await pinned.reached;
    const retired = await retireSnapshot(db(), { snapshotId: first, actor: { type: "system" } });
    expect((await holdPin).released).toBe(false);
    expect(retired.activePins).toBe(1);
    expect(await releaseRetiredHeads(db(), { snapshotIds: [first] })).toMatchObject({
      headsReleased: 0,
      snapshotsKept: 1,
    });

    // Retirement commits first (held open while the pin starts): the pin is refused.
    const second = await ready();
    const retiring = latch();
    const holdRetire = inTransaction(db(), async (tx) => {
      await retireSnapshot(tx, { snapshotId: second, actor: { type: "system" } });
      retiring.open();
      await sleep(300);
    });
    await retiring.reached;
    const refused = await errorOf(
      pinSnapshot(db(), { agentId: owner.agentId, snapshotId: second, pinId: randomUUID() }),
    );
    await holdRetire;
    expect(isStrataError(refused, "PIN_REFUSED")).toBe(true);
    expect(await releaseRetiredHeads(db(), { snapshotIds: [second] })).toMatchObject({ headsReleased: 1 });
  });

  it("races release against pin of the same id: the id always ends closed, never reopened", async () => {
    const results = { pinnedThenReleased: 0, closed: 0 };
    for (let round = 0; round < 12; round += 1) {
      const s = await ready();
      const pinId = randomUUID();
      const [pin, release] = await Promise.allSettled([
        pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId }),
        releasePin(db(), { agentId: owner.agentId, snapshotId: s, pinId }),
      ]);
      expect(release.status).toBe("fulfilled");
      const row = await inspectPin(db(), pinId, { agentId: owner.agentId });
      expect(row.released).toBe(true);
      if (pin.status === "fulfilled") results.pinnedThenReleased += 1;
      else {
        expect(isStrataError(pin.reason, "PIN_CLOSED")).toBe(true);
        expect(row.purpose).toBe("released-before-pin");
        results.closed += 1;
      }
      // Whatever the order, a later pin with the id is refused.
      expect(
        isStrataError(await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId })), "PIN_CLOSED"),
      ).toBe(true);
    }
    expect(results.pinnedThenReleased + results.closed).toBe(12);

    // Forced: the release is held open while the pin arrives.
    const s = await ready();
    const pinId = randomUUID();
    const releasing = latch();
    const holdRelease = inTransaction(db(), async (tx) => {
      await releasePin(tx, { agentId: owner.agentId, snapshotId: s, pinId });
      releasing.open();
      await sleep(300);
    });
    await releasing.reached;
    const late = await errorOf(pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId }));
    await holdRelease;
    expect(isStrataError(late, "PIN_CLOSED")).toBe(true);
  });

  it("lets concurrent identical pins share one row", async () => {
    const s = await ready();
    const pinId = randomUUID();
    const pins = await Promise.all(
      Array.from({ length: 6 }, () => pinSnapshot(db(), { agentId: owner.agentId, snapshotId: s, pinId })),
    );
    expect(new Set(pins.map((p) => p.pinId)).size).toBe(1);
    expect(await db().pin.count({ where: { pinId } })).toBe(1);
  });
});
