// Layer uuids and pin ids are per agent (issue 13): for every use agent B can make of agent A's
// ids, B's answer is the answer for an id never used anywhere (same code, same message with the
// id named, same success shape), and A's work is unaffected afterwards.
import { randomUUID } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import type { Db } from "../db/client.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { isStrataError } from "../domain/errors.ts";
import { collectGarbage } from "../gc/collect-garbage.ts";
import { listHeads, publishSnapshot, type PublishSnapshotOptions } from "./layers.ts";
import { describePin, hasActivePin, pinSnapshot, releasePin } from "./pins.ts";
import { releaseRetiredHeads, retireSnapshot } from "../lineage/retirement.ts";
import {
  consistencyViolations,
  createCapturingSnapshot,
  createOwner,
  storeBytes,
  storedLayer,
  type Owner,
} from "../testing/content.ts";

/** What a caller sees of a call: its error (code and message) or its result. */
type Answer = { error: { code: string; message: string } } | { ok: unknown };

async function answer(call: Promise<unknown>): Promise<Answer> {
  try {
    return { ok: await call };
  } catch (error) {
    if (!isStrataError(error)) throw error;
    return { error: { code: error.code, message: error.message } };
  }
}

/** The answer with `id` written as `<id>` (and volatile fields left out), to compare two answers. */
function shape(a: Answer, ids: Record<string, string>): unknown {
  let text = JSON.stringify(a, (key, value: unknown) =>
    ["createdAt", "releasedAt", "snapshotId", "manifestDigest"].includes(key) ? "…" : value,
  );
  for (const [name, id] of Object.entries(ids)) text = text.split(id).join(`<${name}>`);
  return JSON.parse(text);
}

describeEachDatabase("agent-scoped layer uuids and pin ids", (catalog) => {
  const db = (): Db => catalog().db;
  let a: Owner;
  let b: Owner;

  beforeAll(async () => {
    a = await createOwner(db());
    b = await createOwner(db());
  });

  async function published(owner: Owner, chain = 2) {
    const snapshotId = await createCapturingSnapshot(db(), owner);
    const layers: LayerDescriptor[] = [];
    for (let i = 0; i < chain; i += 1) {
      layers.push(await storedLayer(db(), { owner, parentUuid: layers.at(-1)?.uuid ?? null }));
    }
    const manifest = await storeBytes(db(), `manifest ${randomUUID()}`, owner);
    await publishSnapshot(db(), {
      snapshotId,
      manifestDigest: manifest.digest,
      layers,
      heads: [layers.at(-1)!.uuid],
    });
    return { snapshotId, layers, manifest: manifest.digest };
  }

  /** A's layers as rows, to prove B's calls left them as they were. */
  const rowsOf = (owner: Owner) => db().layer.findMany({ where: { agentId: owner.agentId }, orderBy: { uuid: "asc" } });

  /** B publishes a new capturing snapshot of its own. */
  async function publishAsB(opts: Omit<PublishSnapshotOptions, "snapshotId" | "manifestDigest">) {
    const snapshotId = await createCapturingSnapshot(db(), b);
    const manifest = await storeBytes(db(), `b manifest ${randomUUID()}`, b);
    return publishSnapshot(db(), { snapshotId, manifestDigest: manifest.digest, agentId: b.agentId, ...opts });
  }

  it("B's publish naming A's layer uuids answers as for uuids never used, and A's content is unaffected", async () => {
    // One chain of A's per use, so no call of B's meets a uuid B itself declared in an earlier case.
    const chains = await Promise.all(Array.from({ length: 10 }, () => published(a)));
    const aRows = await rowsOf(a);
    const aHeads = await Promise.all(chains.map((c) => listHeads(db(), c.snapshotId)));
    const [a1, a2] = chains[0]!.layers as [(typeof chains)[0]["layers"][0], (typeof chains)[0]["layers"][0]];

    const cases: { name: string; call: (uuid: string) => Promise<unknown> }[] = [
      // The hole: a head on A's layer kept A's content from collection.
      { name: "as a head", call: (uuid) => publishAsB({ layers: [], heads: [uuid] }) },
      {
        name: "as the parent of a new layer",
        call: async (uuid) => {
          const child = await storedLayer(db(), { owner: b, parentUuid: uuid });
          return publishAsB({ layers: [child], heads: [child.uuid] });
        },
      },
      {
        name: "declared with A's fields (bytes B never uploaded)",
        call: (uuid) => publishAsB({ layers: [{ ...a1, uuid, parentUuid: null }], heads: [uuid] }),
      },
      {
        // The oracle: LAYER_CONFLICT named which of A's fields differed.
        name: "declared with other fields (B's own bytes)",
        call: async (uuid) => {
          const own = await storedLayer(db(), { owner: b, content: `b bytes ${randomUUID()}`, uuid });
          return publishAsB({ layers: [own], heads: [uuid] });
        },
      },
      {
        name: "declared with A's parent and digest, bytes B uploaded too",
        call: async (uuid) => {
          const parent = await storedLayer(db(), { owner: b });
          await storeBytes(db(), `layer ${a2.uuid}`, b);
          return publishAsB({
            layers: [parent, { ...a2, uuid, parentUuid: parent.uuid }],
            heads: [uuid],
          });
        },
      },
    ];
    for (const [i, c] of cases.entries()) {
      for (const target of chains.slice(2 * i, 2 * i + 2).map((chain, bottom) => chain.layers[bottom]!.uuid)) {
        const unused = randomUUID();
        const withTheirs = await answer(c.call(target));
        const withUnused = await answer(c.call(unused));
        expect(shape(withTheirs, { id: target }), `${c.name} (${target})`).toEqual(shape(withUnused, { id: unused }));
      }
    }

    // Nothing of A's changed: its rows, its heads, and no snapshot of B's heads on A's rows.
    expect(await rowsOf(a)).toEqual(aRows);
    expect(await Promise.all(chains.map((c) => listHeads(db(), c.snapshotId)))).toEqual(aHeads);
    const bHeadsOnA = await db().snapshotHead.count({
      where: { layer: { agentId: a.agentId }, snapshot: { agentId: b.agentId } },
    });
    expect(bHeadsOnA).toBe(0);
    // A still reuses its own uuids, and its content survives collection while its snapshots are ready.
    const theirs = chains[0]!;
    const next = await createCapturingSnapshot(db(), a);
    const reused = await publishSnapshot(db(), {
      snapshotId: next,
      manifestDigest: theirs.manifest,
      layers: [a2],
      heads: [a2.uuid],
      agentId: a.agentId,
    });
    expect(reused).toMatchObject({ layersWritten: 0, layersReused: 1, headsWritten: 1 });
    await collectGarbage(db(), { force: true, graceSeconds: 0 });
    expect((await rowsOf(a)).filter((r) => r.state === "available")).toHaveLength(aRows.length);
    expect(await consistencyViolations(db())).toEqual([]);

    // And once A retires its snapshots, nothing of B's keeps A's layers from collection.
    const retired = [...chains.map((c) => c.snapshotId), next];
    for (const snapshotId of retired) await retireSnapshot(db(), { snapshotId, actor: { type: "system" } });
    await releaseRetiredHeads(db(), { snapshotIds: retired });
    await collectGarbage(db(), { force: true, graceSeconds: 0 });
    await collectGarbage(db(), { force: true, graceSeconds: 0 });
    expect((await rowsOf(a)).map((r) => r.state)).toEqual(aRows.map(() => "deleted"));
    expect(await consistencyViolations(db())).toEqual([]);
  });

  it("B's publish into A's snapshot answers as for a snapshot id never used, whatever A's snapshot's state", async () => {
    const capturing = await createCapturingSnapshot(db(), a);
    const ready = (await published(a, 1)).snapshotId;
    const retired = (await published(a, 1)).snapshotId;
    await retireSnapshot(db(), { snapshotId: retired, actor: { type: "system" } });
    const layer = await storedLayer(db(), { owner: b });
    const manifest = await storeBytes(db(), `b manifest ${randomUUID()}`, b);
    const publishInto = (snapshotId: string) =>
      publishSnapshot(db(), {
        snapshotId,
        manifestDigest: manifest.digest,
        layers: [layer],
        heads: [layer.uuid],
        agentId: b.agentId,
      });
    for (const [state, snapshotId] of Object.entries({ capturing, ready, retired })) {
      const unused = randomUUID();
      const theirs = await answer(publishInto(snapshotId));
      expect(shape(theirs, { id: snapshotId }), state).toEqual(
        shape(await answer(publishInto(unused)), { id: unused }),
      );
      expect(theirs).toMatchObject({ error: { code: "NOT_FOUND" } });
    }
    expect(
      await db().snapshotHead.count({
        where: { snapshotId: { in: [capturing, ready, retired] }, layer: { agentId: b.agentId } },
      }),
    ).toBe(0);
  });

  it("B's pin, release and inspect with A's pin ids answer as for ids never used, and A's pins are unaffected", async () => {
    const theirs = await published(a, 1);
    const mine = await published(b, 1);
    const missing = randomUUID();
    const onSnapshots = {
      "B's own snapshot": mine.snapshotId,
      "A's snapshot": theirs.snapshotId,
      "no snapshot": missing,
    };
    const used: string[] = [];
    const useByA = async () => {
      const pinId = `team-pin-${randomUUID()}`;
      await pinSnapshot(db(), {
        agentId: a.agentId,
        snapshotId: theirs.snapshotId,
        pinId,
        holder: `agent:${a.agentId}`,
      });
      used.push(pinId);
      return pinId;
    };
    const byB = { agentId: b.agentId, holder: `agent:${b.agentId}` };

    for (const [where, snapshotId] of Object.entries(onSnapshots)) {
      for (const [op, call] of Object.entries({
        pin: (pinId: string) => pinSnapshot(db(), { ...byB, snapshotId, pinId }),
        release: (pinId: string) => releasePin(db(), { ...byB, snapshotId, pinId }),
      })) {
        const pinId = await useByA();
        const unused = `team-pin-${randomUUID()}`;
        const withTheirs = await answer(call(pinId));
        const withUnused = await answer(call(unused));
        expect(shape(withTheirs, { pin: pinId }), `${op} on ${where}`).toEqual(shape(withUnused, { pin: unused }));
      }
    }
    // A release naming another agent's snapshot answers as one naming no snapshot at all.
    const releaseOn = async (snapshotId: string) => {
      const pinId = `p${randomUUID()}`;
      return shape(await answer(releasePin(db(), { ...byB, snapshotId, pinId })), { pin: pinId });
    };
    const release = await releaseOn(theirs.snapshotId);
    expect(release).toEqual(await releaseOn(missing));
    expect(release).toMatchObject({ ok: { released: true, purpose: "released-before-pin" } });
    // Pinning another agent's snapshot is the NOT_FOUND of a missing one.
    const pinOn = async (snapshotId: string) => {
      const pinId = `p${randomUUID()}`;
      return shape(await answer(pinSnapshot(db(), { ...byB, snapshotId, pinId })), { s: snapshotId, pin: pinId });
    };
    expect(await pinOn(theirs.snapshotId)).toEqual(await pinOn(missing));
    // Inspecting A's id is the NOT_FOUND of an unused one.
    const theirPin = await useByA();
    const unused = `team-pin-${randomUUID()}`;
    expect(shape(await answer(describePin(db(), theirPin, { agentId: b.agentId })), { pin: theirPin })).toEqual(
      shape(await answer(describePin(db(), unused, { agentId: b.agentId })), { pin: unused }),
    );

    // A's pins all still protect, and pinning again is idempotent.
    for (const pinId of used) {
      const before = await describePin(db(), pinId, { agentId: a.agentId });
      expect(before).toMatchObject({ active: true, released: false, snapshotId: theirs.snapshotId });
      const again = await pinSnapshot(db(), { agentId: a.agentId, snapshotId: theirs.snapshotId, pinId });
      expect({ ...again, active: true }).toEqual(before);
    }
    expect(await hasActivePin(db(), theirs.snapshotId)).toBe(true);
  });

  it("B's release of an id first closes only B's id: A pins that id afterwards", async () => {
    const theirs = await published(a, 1);
    const pinId = `team-pin-${randomUUID()}`;
    // B releases the id first, naming A's snapshot and a random one.
    for (const snapshotId of [theirs.snapshotId, randomUUID()]) {
      await releasePin(db(), { agentId: b.agentId, snapshotId, pinId: `${pinId}` }).catch(() => undefined);
    }
    const pin = await pinSnapshot(db(), { agentId: a.agentId, snapshotId: theirs.snapshotId, pinId });
    expect(pin).toMatchObject({ agentId: a.agentId, released: false, snapshotId: theirs.snapshotId });
    // A's own early release still closes A's id for ever.
    const early = `early-${randomUUID()}`;
    await releasePin(db(), { agentId: a.agentId, snapshotId: theirs.snapshotId, pinId: early });
    const closed = await answer(pinSnapshot(db(), { agentId: a.agentId, snapshotId: theirs.snapshotId, pinId: early }));
    expect(closed).toMatchObject({ error: { code: "PIN_CLOSED" } });
  });
});
