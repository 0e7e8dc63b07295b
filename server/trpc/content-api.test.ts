// The content API through tRPC callers: agent tokens and scoping for pin.*, blob.missing,
// snapshot.publish and snapshot.delete; the admin role for gc.*.
import { randomUUID } from "node:crypto";
import { TRPCError } from "@trpc/server";
import { beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError, type StrataError } from "../domain/errors.ts";
import { trustUser, type UserRole } from "../domain/scope.ts";
import { createAgent } from "../auth/agents.ts";
import { createCapturingSnapshot, storeBytes, storedLayer } from "../testing/content.ts";
import { createContextInner } from "./init.ts";
import { createCaller } from "./root.ts";
import { failureCode } from "../testing/calls.ts";

type Caller = ReturnType<typeof createCaller>;

/** The Strata error a call fails with. */
async function refusal(call: Promise<unknown>): Promise<StrataError> {
  try {
    await call;
  } catch (error) {
    const cause = error instanceof TRPCError ? error.cause : error;
    if (isStrataError(cause)) return cause;
    throw error;
  }
  throw new Error("expected the call to fail");
}

describeEachDatabase("content API", (catalog) => {
  const callerFor = (authorization: string | null, role?: UserRole): Caller =>
    createCaller(
      createContextInner({
        db: catalog().db,
        authorization,
        user: role ? trustUser(`user-${role}`, `${role}@example.test`, role) : null,
      }),
    );
  const world = { alice: "", bob: "", aliceAgentId: "", bobAgentId: "", manifest: "" };
  let alice: Caller;
  let bob: Caller;

  beforeAll(async () => {
    const db = catalog().db;
    const a = await createAgent(db, { name: `alice-${randomUUID().slice(0, 8)}` });
    const b = await createAgent(db, { name: `bob-${randomUUID().slice(0, 8)}` });
    Object.assign(world, { alice: a.token, bob: b.token, aliceAgentId: a.agentId, bobAgentId: b.agentId });
    world.manifest = (await storeBytes(db, "api manifest", a)).digest;
    alice = callerFor(`Bearer ${a.token}`);
    bob = callerFor(`Bearer ${b.token}`);
  });

  async function aliceSnapshot(): Promise<{ id: string; head: string }> {
    const db = catalog().db;
    const repository = await db.repository.create({ data: { identity: `example.test/${randomUUID()}`, name: "r" } });
    const id = await createCapturingSnapshot(db, { agentId: world.aliceAgentId, repositoryId: repository.id });
    const layer = await storedLayer(db, { owner: { agentId: world.aliceAgentId } });
    const published = await alice.snapshot.publish({
      snapshotId: id,
      manifestDigest: world.manifest,
      layers: [layer],
      heads: [layer.uuid],
    });
    expect(published).toMatchObject({ state: "ready", layersWritten: 1, headsWritten: 1 });
    return { id, head: layer.uuid };
  }

  it("refuses every content procedure without a valid agent token", async () => {
    const anonymous = callerFor(null);
    const forged = callerFor("Bearer strata_nope");
    for (const caller of [anonymous, forged]) {
      const calls = [
        caller.pin.pin({ snapshotId: "s", pinId: "p" }),
        caller.pin.release({ snapshotId: "s", pinId: "p" }),
        caller.pin.inspect({ pinId: "p" }),
        caller.pin.list({}),
        caller.blob.missing({ digests: [] }),
        caller.snapshot.publish({ snapshotId: "s", layers: [], heads: [] }),
        caller.snapshot.delete({ snapshotId: "s" }),
      ];
      for (const call of calls) expect(await failureCode(call)).toBe("UNAUTHORIZED");
    }
  });

  it("publishes, pins, inspects, lists, releases and deletes an agent's own snapshot", async () => {
    const { id } = await aliceSnapshot();
    const pinId = randomUUID();
    const pin = await alice.pin.pin({ snapshotId: id, pinId, purpose: "restore", expiresInSeconds: 3600 });
    expect(pin).toMatchObject({ pinId, snapshotId: id, released: false, active: true, purpose: "restore" });
    expect(pin.holder).toBe(`agent:${world.aliceAgentId}`);
    expect((await alice.pin.inspect({ pinId })).active).toBe(true);
    expect((await alice.pin.list({ snapshotId: id })).map((p) => p.pinId)).toEqual([pinId]);

    const deleted = await alice.snapshot.delete({ snapshotId: id });
    expect(deleted).toMatchObject({ state: "retired", alreadyRetired: false, activePins: 1 });
    expect(await alice.snapshot.delete({ snapshotId: id })).toMatchObject({ alreadyRetired: true });
    expect(await failureCode(alice.pin.pin({ snapshotId: id, pinId: randomUUID() }))).toBe("PIN_REFUSED");
    expect((await alice.snapshot.list({})).items.map((s) => s.id)).not.toContain(id);

    const released = await alice.pin.release({ snapshotId: id, pinId });
    expect(released).toMatchObject({ released: true, active: false });
    expect(await failureCode(alice.pin.pin({ snapshotId: id, pinId }))).toBe("PIN_CLOSED");
    const audit = await catalog().db.auditEvent.findMany({ where: { subjectId: id, action: "snapshot.retire" } });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actorType: "agent", actorId: world.aliceAgentId });
  });

  it("answers NOT_FOUND to another agent for every content procedure on a snapshot it does not own", async () => {
    const { id, head } = await aliceSnapshot();
    const pinId = randomUUID();
    await alice.pin.pin({ snapshotId: id, pinId });
    expect(await failureCode(bob.pin.pin({ snapshotId: id, pinId: randomUUID() }))).toBe("NOT_FOUND");
    expect(await failureCode(bob.pin.pin({ snapshotId: id, pinId }))).toBe("NOT_FOUND");
    expect(await failureCode(bob.pin.inspect({ pinId }))).toBe("NOT_FOUND");
    // A release naming her snapshot (and her pin id) answers as one naming no snapshot: it closes
    // an id of Bob's own, which protects nothing.
    const released = await bob.pin.release({ snapshotId: id, pinId });
    const { snapshotId: _s, pinId: _p, createdAt: _c, releasedAt: _r, ...shape } = released;
    const elsewhere = await bob.pin.release({ snapshotId: randomUUID(), pinId: randomUUID() });
    const { snapshotId: _s2, pinId: _p2, createdAt: _c2, releasedAt: _r2, ...shapeElsewhere } = elsewhere;
    expect(shape).toEqual(shapeElsewhere);
    expect(released).toMatchObject({ active: false, released: true, purpose: "released-before-pin" });
    expect(await bob.pin.list({ snapshotId: id })).toEqual([]);
    expect(await failureCode(bob.snapshot.delete({ snapshotId: id }))).toBe("NOT_FOUND");
    expect(await failureCode(bob.snapshot.publish({ snapshotId: id, layers: [], heads: [head] }))).toBe("NOT_FOUND");
    // Alice's things are untouched.
    expect((await alice.pin.inspect({ pinId })).active).toBe(true);
    expect((await catalog().db.snapshot.findUniqueOrThrow({ where: { id } })).state).toBe("ready");
  });

  it("tells an agent which blobs to upload", async () => {
    const have = (await storeBytes(catalog().db, `have ${randomUUID()}`, { agentId: world.aliceAgentId })).digest;
    const lack = "9".repeat(64);
    expect(await alice.blob.missing({ digests: [have, lack] })).toEqual({ missing: [lack] });
    expect(await failureCode(alice.blob.missing({ digests: ["not hex"] }))).toBe("BAD_REQUEST");
  });

  it("counts another agent's upload as missing: blob.missing and snapshot.publish need the caller's own", async () => {
    const db = catalog().db;
    const content = { layer: `alice's patch ${randomUUID()}`, manifest: `alice's manifest ${randomUUID()}` };
    const layerBytes = await storeBytes(db, content.layer, { agentId: world.aliceAgentId });
    const manifestBytes = await storeBytes(db, content.manifest, { agentId: world.aliceAgentId });
    const digests = [layerBytes.digest, manifestBytes.digest];
    expect(await alice.blob.missing({ digests })).toEqual({ missing: [] });
    expect(await bob.blob.missing({ digests })).toEqual({ missing: digests });

    const repository = await db.repository.create({ data: { identity: `example.test/${randomUUID()}`, name: "r" } });
    const id = await createCapturingSnapshot(db, { agentId: world.bobAgentId, repositoryId: repository.id });
    const bobsManifest = (await storeBytes(db, `bob's manifest ${randomUUID()}`, { agentId: world.bobAgentId })).digest;
    const layer = { uuid: randomUUID(), parentUuid: null, ...layerBytes, kind: "patch" };
    const ghost = { ...layer, uuid: randomUUID(), digest: "6".repeat(64) };
    const publish = (manifestDigest: string, layers: (typeof layer)[]) =>
      bob.snapshot.publish({ snapshotId: id, manifestDigest, layers, heads: layers.map((l) => l.uuid) });

    // Alice's bytes are refused exactly as bytes nobody stored: code, message and data.
    const named = await refusal(publish(bobsManifest, [layer]));
    const absent = await refusal(publish(bobsManifest, [ghost]));
    expect([named.code, named.message, named.data]).toEqual([
      "BLOB_MISSING",
      absent.message,
      { digests: [layer.digest] },
    ]);
    const manifest = await refusal(publish(manifestBytes.digest, []));
    expect([manifest.code, manifest.data]).toEqual(["BLOB_MISSING", { digests: [manifestBytes.digest] }]);
    // Nothing was written.
    expect(await db.layer.count({ where: { agentUuid: { in: [layer.uuid, ghost.uuid] } } })).toBe(0);
    expect(await db.snapshotHead.count({ where: { snapshotId: id } })).toBe(0);
    expect((await db.snapshot.findUniqueOrThrow({ where: { id } })).state).toBe("capturing");

    // Once Bob uploads the same bytes himself, they are his to publish.
    await storeBytes(db, content.layer, { agentId: world.bobAgentId });
    await storeBytes(db, content.manifest, { agentId: world.bobAgentId });
    expect(await bob.blob.missing({ digests })).toEqual({ missing: [] });
    expect(await publish(manifestBytes.digest, [layer])).toMatchObject({ state: "ready", layersWritten: 1 });
  });

  it("maps content errors to their codes", async () => {
    const db = catalog().db;
    const repository = await db.repository.create({ data: { identity: `example.test/${randomUUID()}`, name: "r" } });
    const id = await createCapturingSnapshot(db, { agentId: world.aliceAgentId, repositoryId: repository.id });
    const ghost = { uuid: randomUUID(), parentUuid: null, digest: "7".repeat(64), sizeBytes: 1, kind: "patch" };
    expect(
      await failureCode(
        alice.snapshot.publish({
          snapshotId: id,
          manifestDigest: world.manifest,
          layers: [ghost],
          heads: [ghost.uuid],
        }),
      ),
    ).toBe("BLOB_MISSING");
    const real = await storedLayer(db, { owner: { agentId: world.aliceAgentId } });
    await alice.snapshot.publish({
      snapshotId: id,
      manifestDigest: world.manifest,
      layers: [real],
      heads: [real.uuid],
    });
    const s2 = await createCapturingSnapshot(db, { agentId: world.aliceAgentId, repositoryId: repository.id });
    expect(
      await failureCode(
        alice.snapshot.publish({
          snapshotId: s2,
          manifestDigest: world.manifest,
          layers: [{ ...real, kind: "bundle" }],
          heads: [real.uuid],
        }),
      ),
    ).toBe("LAYER_CONFLICT");
  });

  it("keeps gc.* for admins: agents and other roles are refused", async () => {
    const agentOnly = callerFor(`Bearer ${world.alice}`);
    const operator = callerFor(null, "operator");
    const support = callerFor(null, "support");
    for (const caller of [agentOnly, operator, support]) {
      const expected = caller === agentOnly ? "UNAUTHORIZED" : "FORBIDDEN";
      expect(await failureCode(caller.gc.collect({}))).toBe(expected);
      expect(await failureCode(caller.gc.releaseRetiredHeads())).toBe(expected);
      expect(await failureCode(caller.gc.runs({}))).toBe(expected);
    }
  });

  it("lets an admin release retired heads, collect and read the runs", async () => {
    const admin = callerFor(null, "admin");
    const { id } = await aliceSnapshot();
    await alice.snapshot.delete({ snapshotId: id });
    const released = await admin.gc.releaseRetiredHeads();
    expect(released.headsReleased).toBeGreaterThanOrEqual(1);
    const run = await admin.gc.collect({ graceSeconds: 0 });
    expect(run.status).toBe("finished");
    const skipped = await admin.gc.collect({ force: false });
    expect(skipped).toMatchObject({ status: "skipped", reason: "not-due" });
    const runs = await admin.gc.runs({ limit: 5 });
    expect(runs[0]).toMatchObject({ status: "finished", host: "admin:user-admin" });
    expect(runs[0]!.layersDeleted).toBeGreaterThanOrEqual(1);
    // Both asked-for runs are in the audit log with the admin who asked, the skipped one too.
    const audited = await catalog().db.auditEvent.findMany({ where: { action: "gc.collect", actorId: "user-admin" } });
    expect(audited.map((a) => [a.subjectId, a.reason]).sort()).toEqual(
      [
        [run.status === "finished" ? run.runId : "?", "run through the API (gc.collect)"],
        ["skipped", "run through the API (gc.collect)"],
      ].sort(),
    );
  });
});
