// Live holds in the catalog, on both databases, with real git captures: a hold lasts 14 days on
// an idle-persistent provider and one hour otherwise, pins the pause's checkpoint with the same
// expiry, and refuses (storing nothing) another agent's snapshot, a checkpoint that is not the
// head and a bad path; while it lasts the sweeper and collection keep its checkpoint, which
// still restores; once it expired they take it. Clocks are explicit `now` arguments.
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import superjson from "superjson";
import { afterAll, beforeAll, expect, it } from "vitest";
import { HANDOFF_HOLD_MS, IDLE_PERSISTENT_HOLD_MS, type ProviderSettings } from "../backends/providers.ts";
import { collectGarbage } from "../gc/collect-garbage.ts";
import { isStrataError } from "../domain/errors.ts";
import { isOneWayStateViolation, isUniqueViolation } from "../db/errors.ts";
import { localRestorePort, restoreSnapshot } from "../restore/restore-snapshot.ts";
import { captureInto } from "../testing/checkouts.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { addOrigin, initRepository, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { publishCheckpointCapture } from "../testing/restore.ts";
import { createContextInner } from "../trpc/init.ts";
import { appRouter, type AppRouter } from "../trpc/root.ts";
import { holdWorkspace } from "./hold-workspace.ts";
import { retireLineage } from "./lineages.ts";
import { listLiveHolds } from "./list-live-holds.ts";
import { releaseLiveHold } from "./release-live-hold.ts";
import { sweepSnapshots } from "./sweeper.ts";

afterAll(removeTemporaryDirectories);

const DAY = 24 * 60 * 60 * 1000;
const HOUR = 60 * 60 * 1000;
const at = (from: Date, ms: number) => new Date(from.getTime() + ms);
const PROVIDERS: ProviderSettings = { fly: { idlePersistentHolds: true, snapshots: false } };

describeEachDatabase("live holds", (catalog) => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "pauser");
  });

  /** A real checkout with an edit, captured and appended as a new work context's first checkpoint. */
  async function pausedTask(provider = "local") {
    const root = realpathSync(initRepository({ "a.txt": "a\n", ".id": `${uniqueName("repo")}\n` }));
    addOrigin(root);
    const coordinates = {
      repository: { identity: `example.test/acme/${uniqueName("app")}` },
      backendKind: provider,
      baseImage: "none",
    };
    const workContextId = uniqueName("wc");
    let head: string | null = null;
    /** Edits the checkout and appends its capture as the next checkpoint. */
    const checkpoint = async (text: string) => {
      write(root, "a.txt", text);
      const blobs = new Map<string, Buffer>();
      const manifest = await captureInto(root, blobs);
      const at = { ...coordinates, workContextId, observedHeadId: head };
      head = await publishCheckpointCapture(catalog().db, agent.scope, at, manifest, blobs);
      return { id: head, manifest };
    };
    const paused = await checkpoint(`paused work ${uniqueName("edit")}\n`);
    return { root, workContextId, paused, checkpoint };
  }

  const hold = (task: { root: string; workContextId: string; paused: { id: string } }, now: Date, host = "host-1") =>
    holdWorkspace(catalog().db, {
      agent: agent.scope,
      workContextId: task.workContextId,
      snapshotId: task.paused.id,
      workspace: task.root,
      host,
      providers: PROVIDERS,
      now,
    });

  /** What a refused call might have stored, whoever's: holds and pins (this file's tests run one at a time). */
  const stored = async () => ({
    holds: await catalog().db.liveHold.count(),
    pins: await catalog().db.pin.count(),
  });

  it("lasts 14 days on an idle-persistent provider and one hour otherwise, pinning the checkpoint as long", async () => {
    const now = new Date();
    const fly = await hold(await pausedTask("fly"), now);
    const local = await hold(await pausedTask("local"), now);
    expect(fly).toMatchObject({ provider: "fly", idlePersistent: true, status: "active", endedAt: null });
    expect(fly.expiresAt.getTime() - now.getTime()).toBe(IDLE_PERSISTENT_HOLD_MS);
    expect(IDLE_PERSISTENT_HOLD_MS).toBe(14 * DAY);
    expect(local).toMatchObject({ provider: "local", idlePersistent: false, status: "active" });
    expect(local.expiresAt.getTime() - now.getTime()).toBe(HANDOFF_HOLD_MS);
    expect(HANDOFF_HOLD_MS).toBe(HOUR);
    for (const h of [fly, local]) {
      const pin = await catalog().db.pin.findFirstOrThrow({ where: { agentId: agent.scope.agentId, pinId: h.pinId } });
      expect(pin).toMatchObject({
        snapshotId: h.snapshotId,
        released: false,
        purpose: "live-hold",
        expiresAt: h.expiresAt,
      });
    }
    // The dashboard lists both with their expiry.
    const listed = await listLiveHolds(catalog().db, { status: "active" });
    expect(listed.holds.filter((h) => h.id === fly.id || h.id === local.id)).toHaveLength(2);
    expect(listed.holds.find((h) => h.id === fly.id)).toMatchObject({
      expiresAt: fly.expiresAt,
      agentName: agent.name,
      snapshotState: "ready",
    });
    // A page at a time, newest first: every hold once.
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listLiveHolds(catalog().db, { status: "all", limit: 1, ...(cursor ? { cursor } : {}) });
      expect(page.holds.length).toBeLessThanOrEqual(1);
      ids.push(...page.holds.map((h) => h.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining([fly.id, local.id]));
    expect(ids).toHaveLength(await catalog().db.liveHold.count());
  });

  it("answers the same hold when asked again, replaces it with a new one, and releases idempotently", async () => {
    const now = new Date();
    const task = await pausedTask();
    const first = await hold(task, now);
    expect((await hold(task, at(now, 1000))).id).toBe(first.id);
    // Held again from another directory: the first hold is replaced and its pin released.
    const second = await holdWorkspace(catalog().db, {
      agent: agent.scope,
      workContextId: task.workContextId,
      snapshotId: task.paused.id,
      workspace: join(task.root, "elsewhere"),
      host: "host-1",
      providers: PROVIDERS,
      now,
    });
    expect(second.id).not.toBe(first.id);
    const replaced = await catalog().db.liveHold.findUniqueOrThrow({ where: { id: first.id } });
    expect(replaced).toMatchObject({ endReason: "replaced", endedAt: now });
    const firstPin = await catalog().db.pin.findFirstOrThrow({
      where: { agentId: agent.scope.agentId, pinId: first.pinId },
    });
    expect(firstPin.released).toBe(true);

    const released = await releaseLiveHold(catalog().db, { agent: agent.scope, holdId: second.id, now });
    expect(released).toMatchObject({ status: "ended", endReason: "released" });
    expect(await releaseLiveHold(catalog().db, { agent: agent.scope, holdId: second.id, now: at(now, DAY) })).toEqual(
      released,
    );
    // A hold whose time ran out is recorded as expired, at its expiry.
    const third = await hold(task, now);
    const late = await releaseLiveHold(catalog().db, { agent: agent.scope, holdId: third.id, now: at(now, 2 * HOUR) });
    expect(late).toMatchObject({ status: "ended", endReason: "expired", endedAt: third.expiresAt });
    expect((await listLiveHolds(catalog().db, { status: "all", snapshotId: task.paused.id })).holds).toHaveLength(3);
  });

  it("refuses another agent's snapshot, a checkpoint that is not the head, and a bad path, storing nothing", async () => {
    const db = catalog().db;
    const now = new Date();
    const task = await pausedTask();
    const other = await makeAgent(db, "other");
    const before = await stored();

    const foreign = await holdWorkspace(db, {
      agent: other.scope,
      workContextId: task.workContextId,
      snapshotId: task.paused.id,
      workspace: task.root,
      host: "host-1",
      providers: PROVIDERS,
      now,
    }).catch((e: unknown) => e);
    expect(isStrataError(foreign, "NOT_FOUND")).toBe(true);

    const later = await task.checkpoint("went on\n");
    const notHead = await hold(task, now).catch((e: unknown) => e);
    expect(isStrataError(notHead, "HOLD_REFUSED")).toBe(true);
    const wrongContext = await holdWorkspace(db, {
      agent: agent.scope,
      workContextId: uniqueName("another-wc"),
      snapshotId: later.id,
      workspace: task.root,
      host: "host-1",
      providers: PROVIDERS,
      now,
    }).catch((e: unknown) => e);
    expect(isStrataError(wrongContext, "INVALID_INPUT")).toBe(true);

    // Over the API, as an agent's client sees it: the typed error on the wire.
    const client = createTRPCClient<AppRouter>({
      links: [
        httpBatchLink({
          url: "http://strata.test/api/trpc",
          transformer: superjson,
          headers: { authorization: `Bearer ${agent.token}` },
          fetch: (url, init) =>
            fetchRequestHandler({
              endpoint: "/api/trpc",
              req: new Request(url, init as RequestInit),
              router: appRouter,
              createContext: ({ req }) =>
                createContextInner({ db, authorization: req.headers.get("authorization"), user: null }),
            }),
        }),
      ],
    });
    const codeOf = async (call: Promise<unknown>) => {
      const error = await call.then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TRPCClientError);
      return ((error as TRPCClientError<AppRouter>).data as { strata: { code: string } | null }).strata?.code;
    };
    const input = { workContextId: task.workContextId, snapshotId: later.id, host: "host-1" };
    for (const workspace of ["relative/dir", "/srv/../etc", "/srv/./w", "/srv/w\nx", ""]) {
      expect(await codeOf(client.workspace.hold.mutate({ ...input, workspace }))).toBe("INVALID_INPUT");
    }
    expect(
      await codeOf(client.workspace.hold.mutate({ ...input, snapshotId: task.paused.id, workspace: task.root })),
    ).toBe("HOLD_REFUSED");
    expect(await codeOf(client.workspace.releaseHold.mutate({ holdId: "no-such-hold" }))).toBe("NOT_FOUND");
    expect(await stored()).toEqual(before);

    // The head itself is held, over the API too.
    const held = await client.workspace.hold.mutate({ ...input, workspace: task.root });
    expect(held).toMatchObject({ snapshotId: later.id, status: "active", workspace: task.root });
  });

  it("is held by the database too: one unended hold per lineage, and an ended hold stays ended", async () => {
    const db = catalog().db;
    const now = new Date();
    const task = await pausedTask();
    const first = await hold(task, now);
    const row = await db.liveHold.findUniqueOrThrow({ where: { id: first.id } });
    const { id: _id, ...copy } = row;
    const second = await db.liveHold.create({ data: { ...copy, pinId: "hold:copy" } }).catch((e: unknown) => e);
    expect(isUniqueViolation(second)).toBe(true);
    const halfEnded = await db.liveHold
      .update({ where: { id: first.id }, data: { endedAt: now } })
      .catch((e: unknown) => e);
    expect(halfEnded).toBeInstanceOf(Error);
    await releaseLiveHold(db, { agent: agent.scope, holdId: first.id, now });
    const reopened = await db.liveHold
      .update({ where: { id: first.id }, data: { endedAt: null, endReason: null } })
      .catch((e: unknown) => e);
    expect(isOneWayStateViolation(reopened)).toBe(true);
    const moved = await db.liveHold
      .update({ where: { id: first.id }, data: { workspace: "/elsewhere" } })
      .catch((e: unknown) => e);
    expect(isOneWayStateViolation(moved)).toBe(true);
  });

  it("keeps the held checkpoint from the sweeper and collection while it lasts; it restores afterwards", async () => {
    const db = catalog().db;
    const t0 = new Date();
    const task = await pausedTask("fly");
    const held = await hold(task, t0);
    // The task went on, then completed: the held checkpoint is superseded, the next one retired.
    const later = await task.checkpoint("finished\n");
    const lineage = (await db.snapshot.findUniqueOrThrow({ where: { id: later.id } })).lineageId ?? "";
    await retireLineage(db, { lineageId: lineage, reason: "completed", actor: { kind: "agent", agent: agent.scope } });

    const swept = await sweepSnapshots(db, { now: at(t0, 10 * DAY) });
    expect(swept.keptForPins).toBeGreaterThanOrEqual(1);
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: held.snapshotId } })).state).toBe("superseded");
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: later.id } })).state).toBe("deleting");
    expect((await collectGarbage(db, { force: true, graceSeconds: 0 })).status).toBe("finished");
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: later.id } })).state).toBe("deleted");

    const machine = temporaryDirectory("strata-restore-");
    const report = await restoreSnapshot(localRestorePort(db, agent.scope), {
      snapshotId: held.snapshotId,
      into: join(machine, "checkout"),
      stateDir: join(machine, "state"),
    });
    expect(report.result.status).toBe("restored");
    expect(report.result.holds.tree).toBe(task.paused.manifest.tree);
  });

  it("lets the sweeper and collection take the checkpoint once the hold expired", async () => {
    const db = catalog().db;
    const t0 = new Date();
    const task = await pausedTask("local");
    // Collection judges pins on the database's clock: a hold taken two hours ago has expired there.
    const held = await hold(task, at(t0, -2 * HOUR));
    expect(held.expiresAt.getTime()).toBeLessThan(t0.getTime());
    await task.checkpoint("went on\n");

    const swept = await sweepSnapshots(db, { now: at(t0, 10 * DAY) });
    expect(swept.movedToDeleting.superseded).toBeGreaterThanOrEqual(1);
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: held.snapshotId } })).state).toBe("deleting");
    expect((await collectGarbage(db, { force: true, graceSeconds: 0 })).status).toBe("finished");
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: held.snapshotId } })).state).toBe("deleted");
    const pin = await db.pin.findFirstOrThrow({ where: { agentId: agent.scope.agentId, pinId: held.pinId } });
    expect(pin.released).toBe(true);
  });
});
