// The seed's worked example (the snapshot catalog, section 4): S0, S1 and S2 sharing the
// prefix A→B and the memory layer M, a pin H0, delete-as-retire, head release and collection,
// with every content table checked row by row after each step.
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { isStrataError } from "../domain/errors.ts";
import { listSnapshots } from "./snapshot-list.ts";
import { collectGarbage, listCollectionRuns } from "../gc/collect-garbage.ts";
import { publishSnapshot } from "../content/layers.ts";
import { pinSnapshot, releasePin } from "../content/pins.ts";
import { releaseRetiredHeads, retireSnapshot } from "./retirement.ts";
import { contentRows, createCapturingSnapshot, createOwner, storeBytes } from "../testing/content.ts";

describeEachDatabase("seed 004 worked example", (catalog) => {
  it("reproduces S0/S1/S2 step by step, and collects C alone", async () => {
    const db = catalog().db;
    const owner = await createOwner(db);
    const names: Record<string, string> = {};
    const name = (id: string, label: string) => {
      names[id] = label;
      return id;
    };

    // Bytes first (a publish only references stored blobs): five artifacts, three manifests.
    const blob: Record<string, { digest: string; sizeBytes: number }> = {};
    for (const label of ["A", "B", "C", "D", "M", "mf0", "mf1", "mf2"]) {
      blob[label] = await storeBytes(db, `${label}: bytes of ${label} (${randomUUID()})`, owner);
      name(blob[label]!.digest, label.startsWith("mf") ? label : `d${label}`);
    }
    const uuid: Record<string, string> = {};
    for (const label of ["A", "B", "C", "D", "M"]) uuid[label] = name(randomUUID(), label);
    const layer = (label: string, parent: string | null, kind = "patch"): LayerDescriptor => ({
      uuid: uuid[label]!,
      parentUuid: parent ? uuid[parent]! : null,
      ...blob[label]!,
      kind,
    });
    const A = layer("A", null);
    const B = layer("B", "A");
    const C = layer("C", "B");
    const D = layer("D", "B");
    const M = layer("M", null, "memory");
    const blobs = [
      "dA:stored",
      "dB:stored",
      "dC:stored",
      "dD:stored",
      "dM:stored",
      "mf0:stored",
      "mf1:stored",
      "mf2:stored",
    ];
    const rows = () => contentRows(db, names);

    // Publish S0: rootfs = [A, B], memory = [M].
    const S0 = name(await createCapturingSnapshot(db, owner, { alias: `python-base-${randomUUID()}` }), "S0");
    const alias = (await db.snapshot.findUniqueOrThrow({ where: { id: S0 } })).alias!;
    await publishSnapshot(db, {
      snapshotId: S0,
      manifestDigest: blob.mf0!.digest,
      layers: [A, B, M],
      heads: [B.uuid, M.uuid],
    });
    type Row = readonly (string | boolean | null)[];
    let expected: {
      snapshots: Row[];
      layers: Row[];
      heads: string[];
      pins: Row[];
      blobs: string[];
      chunkRows: number;
    } = {
      snapshots: [["S0", alias, "ready", "mf0"]],
      layers: [
        ["A", null, "dA", "available"],
        ["B", "A", "dB", "available"],
        ["M", null, "dM", "available"],
      ],
      heads: ["S0->B", "S0->M"],
      pins: [],
      blobs,
      chunkRows: 8,
    };
    expect(await rows()).toEqual(expected);

    // Cold-open S0: a pin before reading anything.
    const H0 = name(`pin-${randomUUID()}`, "H0");
    await pinSnapshot(db, { agentId: owner.agentId, snapshotId: S0, pinId: H0, purpose: "cold-open" });
    expected = { ...expected, pins: [["H0", "S0", false]] };
    expect(await rows()).toEqual(expected);

    // Publish S1: inserts C only, and the heads (S1,C), (S1,M).
    const S1 = name(await createCapturingSnapshot(db, owner), "S1");
    const s1 = await publishSnapshot(db, {
      snapshotId: S1,
      manifestDigest: blob.mf1!.digest,
      layers: [B, C],
      heads: [C.uuid, M.uuid],
    });
    expect(s1).toMatchObject({ layersWritten: 1, layersReused: 1, headsWritten: 2 });
    expected = {
      ...expected,
      snapshots: [...expected.snapshots, ["S1", null, "ready", "mf1"]],
      layers: [...expected.layers.slice(0, 2), ["C", "B", "dC", "available"], ...expected.layers.slice(2)],
      heads: ["S0->B", "S0->M", "S1->C", "S1->M"],
    };
    expect(await rows()).toEqual(expected);

    // Fork a child from S0: no row changes at all.
    expect(await rows()).toEqual(expected);

    // Publish the child as S2: inserts D only, and (S2,D), (S2,M).
    const S2 = name(await createCapturingSnapshot(db, owner), "S2");
    const s2 = await publishSnapshot(db, {
      snapshotId: S2,
      manifestDigest: blob.mf2!.digest,
      layers: [B, D],
      heads: [D.uuid, M.uuid],
    });
    expect(s2).toMatchObject({ layersWritten: 1, headsWritten: 2 });
    expected = {
      ...expected,
      snapshots: [...expected.snapshots, ["S2", null, "ready", "mf2"]],
      layers: [...expected.layers.slice(0, 3), ["D", "B", "dD", "available"], ...expected.layers.slice(3)],
      heads: ["S0->B", "S0->M", "S1->C", "S1->M", "S2->D", "S2->M"],
    };
    expect(await rows()).toEqual(expected);

    // Delete S0 while H0 is active: retired, heads kept, H0 still active.
    await retireSnapshot(db, { snapshotId: S0, actor: { type: "agent", id: owner.agentId } });
    expected = { ...expected, snapshots: [["S0", alias, "retired", "mf0"], ...expected.snapshots.slice(1)] };
    expect(await rows()).toEqual(expected);
    // Head release and collection both respect H0.
    expect(await releaseRetiredHeads(db)).toMatchObject({ headsReleased: 0, snapshotsKept: 1 });
    expect((await collectGarbage(db, { force: true, graceSeconds: 0 })).status).toBe("finished");
    expect(await rows()).toEqual(expected);
    // Hidden from listing, alias still reserved, no new pins, established pin still good.
    const listed = await listSnapshots(db, {}, { agentId: owner.agentId });
    expect(listed.items.map((s) => s.id).sort()).toEqual([S1, S2].sort());
    await expect(createCapturingSnapshot(db, owner, { alias })).rejects.toThrow();
    const refused = await pinSnapshot(db, {
      agentId: owner.agentId,
      snapshotId: S0,
      pinId: `late-${randomUUID()}`,
    }).catch((e: unknown) => e);
    expect(isStrataError(refused, "PIN_REFUSED")).toBe(true);
    expect((await pinSnapshot(db, { agentId: owner.agentId, snapshotId: S0, pinId: H0 })).released).toBe(false);
    expect(await rows()).toEqual(expected);

    // The last responsibility of H0 ends.
    await releasePin(db, { agentId: owner.agentId, snapshotId: S0, pinId: H0 });
    expected = { ...expected, pins: [["H0", "S0", true]] };
    expect(await rows()).toEqual(expected);

    // GC releases S0's heads; every layer stays; S0 keeps its row and alias.
    expect(await releaseRetiredHeads(db)).toMatchObject({ snapshotsReleased: 1, headsReleased: 2 });
    expected = { ...expected, heads: ["S1->C", "S1->M", "S2->D", "S2->M"] };
    expect(await rows()).toEqual(expected);
    expect(await releaseRetiredHeads(db)).toMatchObject({ snapshotsReleased: 0, headsReleased: 0 });

    // S1 retires with no pin; its heads are released; C is now reachable from no head.
    await retireSnapshot(db, { snapshotId: S1, actor: { type: "agent", id: owner.agentId } });
    expect(await releaseRetiredHeads(db)).toMatchObject({ snapshotsReleased: 1, headsReleased: 2 });
    expected = {
      ...expected,
      snapshots: [expected.snapshots[0]!, ["S1", null, "retired", "mf1"], expected.snapshots[2]!],
      heads: ["S2->D", "S2->M"],
    };
    expect(await rows()).toEqual(expected);

    // Collection: C is the only layer collected, with its bytes; B/A stay under S2, M too.
    const runsBefore = (await listCollectionRuns(db)).length;
    const run = await collectGarbage(db, { force: true, graceSeconds: 0 });
    expect(run.status === "finished" && run.tally).toMatchObject({ layersDeleted: 1, blobsDeleted: 1 });
    expected = {
      ...expected,
      layers: expected.layers.map((l) => (l[0] === "C" ? ["C", "B", "dC", "deleted"] : l)),
      blobs: blobs.filter((b) => b !== "dC:stored"),
      chunkRows: 7,
    };
    expect(await rows()).toEqual(expected);
    const runs = await listCollectionRuns(db);
    expect(runs).toHaveLength(runsBefore + 1);
    expect(runs[0]).toMatchObject({
      status: "finished",
      layersDeleted: 1,
      blobsDeleted: 1,
      headsReleased: 0,
      errorCode: null,
    });
    expect(runs[0]!.bytesFreed).toBe(blob.C!.sizeBytes);

    // A second collection finds nothing more.
    const again = await collectGarbage(db, { force: true, graceSeconds: 0 });
    expect(again.status === "finished" && again.tally).toMatchObject({ layersDeleted: 0, blobsDeleted: 0 });
    expect(await rows()).toEqual(expected);
  });
});
