// Dependency caches on both databases: publish (layered on the repository's latest cache, only the
// delta's blobs recorded), find by envHash, supersede, refusals with nothing stored, concurrent
// publishes of one key, and collection keeping exactly what a live cache needs.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ZodError } from "zod";
import { catalogContentStore, readWhole, type ContentStore } from "../backends/content-store.ts";
import { dirBackend } from "../backends/dir-backend.ts";
import { collectGarbage } from "../gc/collect-garbage.ts";
import { isStrataError } from "../domain/errors.ts";
import type { AgentScope } from "../domain/scope.ts";
import { ageBlobs, createOwner, sha256, storeBytes } from "../testing/content.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { treeImage } from "../testing/backends.ts";
import { findDependencyCache, publishDependencyCache } from "./dependency-caches.ts";
import { sweepDependencyCaches } from "./sweep-dependency-caches.ts";
import { statGrantedBlob } from "../content/blobs.ts";

afterAll(removeTemporaryDirectories);

const envA = sha256("package-lock.json A");
const envB = sha256("package-lock.json B");

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isStrataError(error)) return error.code;
    // A schema's refusal, which the API answers as INVALID_INPUT.
    if (error instanceof ZodError) return "INVALID_INPUT";
    throw error;
  }
  throw new Error("expected a StrataError");
}

describeEachDatabase("dependency caches", (catalog) => {
  let agent: AgentScope;
  let store: ContentStore;
  let cacheDir: string;
  let repository: { identity: string };
  let source: string;
  beforeAll(async () => {
    const owner = await createOwner(catalog().db);
    agent = { agentId: owner.agentId } as AgentScope;
    store = catalogContentStore(catalog().db, owner.agentId);
    cacheDir = temporaryDirectory("strata-cache-");
    repository = { identity: `example.test/team/app-${randomUUID().slice(0, 8)}` };
    source = temporaryDirectory("strata-checkout-");
    write(source, "package.json", "{}\n");
    for (let i = 0; i < 30; i++) write(source, `node_modules/pkg-${i}/index.js`, `module.exports = ${i};\n`);
  });
  const capture = (previous: string | null = null) =>
    dirBackend.capture(source, { store, cacheDir, include: ["node_modules"], previous });
  const publish = (envHash: string, ref: string, paths = ["node_modules"]) =>
    publishDependencyCache(catalog().db, {
      agent,
      repository,
      envHash,
      paths,
      artifact: { kind: "dir", ref, sizeBytes: 1 },
    });

  it("publishes a cache by envHash, finds it, and layers the next one on the repository's latest", async () => {
    const db = catalog().db;
    const first = await capture();
    const published = await publish(envA, first.ref);
    expect(published).toMatchObject({ outcome: "published", cache: { envHash: envA, kind: "dir", ref: first.ref } });
    expect(published.blobs).toBe(31); // the record and 30 files
    expect(await publish(envA, first.ref)).toMatchObject({ outcome: "unchanged", blobs: 0 });

    const found = await findDependencyCache(db, { agent, repository, envHash: envA });
    expect(found.exact?.ref).toBe(first.ref);
    expect((await findDependencyCache(db, { agent, repository, envHash: envB })).exact).toBeNull();
    expect((await findDependencyCache(db, { agent, repository, envHash: null })).latest?.ref).toBe(first.ref);

    // One package changes (a new lockfile): the new cache records only its delta.
    write(source, "node_modules/pkg-3/index.js", "module.exports = 'three';\n");
    const second = await capture(found.latest!.ref);
    const layered = await publish(envB, second.ref);
    expect(layered.blobs).toBe(2); // the record and the changed file
    const row = await db.dependencyCache.findUniqueOrThrow({ where: { id: layered.cache.id } });
    expect(row.parentId).toBe(published.cache.id);
    expect((await findDependencyCache(db, { agent, repository, envHash: envA })).exact?.ref).toBe(first.ref);

    // Publishing the key again supersedes its previous cache.
    write(source, "node_modules/pkg-4/index.js", "module.exports = 'four';\n");
    const third = await capture(second.ref);
    await publish(envB, third.ref);
    const states = await db.dependencyCache.findMany({
      where: { envHash: envB, agentId: agent.agentId },
      select: { state: true },
    });
    expect(states.map((s) => s.state).sort()).toEqual(["ready", "superseded"]);
  });

  it("refuses unknown kinds, kinds without dependency directories, another agent's content and foreign records, storing nothing", async () => {
    const db = catalog().db;
    const before = await db.dependencyCache.count();
    const { ref } = await capture();
    const attempt = (
      artifact: { kind: string; ref: string; sizeBytes?: number },
      opts: { as?: AgentScope; paths?: string[] } = {},
    ) =>
      failure(
        publishDependencyCache(db, {
          agent: opts.as ?? agent,
          repository,
          envHash: envA,
          paths: opts.paths ?? ["node_modules"],
          artifact: { sizeBytes: 1, ...artifact },
        }),
      );
    expect(await attempt({ kind: "modal", ref })).toBe("UNKNOWN_BACKEND");
    expect(await attempt({ kind: "git", ref })).toBe("INVALID_INPUT");
    expect(await attempt({ kind: "dir", ref }, { paths: ["../outside"] })).toBe("INVALID_INPUT");

    // Another agent cannot publish a cache of records it does not hold…
    const other = await createOwner(db, `other-${randomUUID().slice(0, 6)}`);
    const otherAgent = { agentId: other.agentId } as AgentScope;
    expect(await attempt({ kind: "dir", ref }, { as: otherAgent })).toBe("BLOB_MISSING");
    // …nor, with a record it holds, name content it does not hold.
    const theirs = await storeBytes(db, "another agent's secret file\n", { agentId: agent.agentId });
    const otherStore = catalogContentStore(db, other.agentId);
    const forgedDir = temporaryDirectory("strata-forged-");
    write(forgedDir, "node_modules/x.js", "x\n");
    const forged = await dirBackend.capture(forgedDir, { store: otherStore, cacheDir, include: ["node_modules"] });
    const record = JSON.parse((await readWhole(otherStore, forged.ref)).toString()) as {
      entries: { type: string; digest?: string; size?: number }[];
    };
    for (const e of record.entries)
      if (e.type === "file") Object.assign(e, { digest: theirs.digest, size: theirs.sizeBytes });
    const bytes = Buffer.from(JSON.stringify(record));
    await otherStore.put(sha256(bytes), bytes);
    expect(await attempt({ kind: "dir", ref: sha256(bytes) }, { as: otherAgent })).toBe("BLOB_MISSING");
    expect(await db.dependencyCache.count()).toBe(before);
  });

  it("keeps one ready cache per key when two publishes race", async () => {
    const db = catalog().db;
    const env = sha256(`race ${randomUUID()}`);
    write(source, "node_modules/race.js", "one\n");
    const one = await capture();
    write(source, "node_modules/race.js", "two\n");
    const two = await capture();
    const results = await Promise.allSettled([publish(env, one.ref), publish(env, two.ref)]);
    expect(results.every((r) => r.status === "fulfilled")).toBe(true);
    const rows = await db.dependencyCache.findMany({ where: { envHash: env }, select: { state: true } });
    expect(rows.map((r) => r.state).sort()).toEqual(["ready", "superseded"]);
  });

  it("keeps what a live cache needs from collection, and lets it go once the cache is deleted", async () => {
    const db = catalog().db;
    const env = sha256(`gc ${randomUUID()}`);
    write(source, "node_modules/kept-by-cache.js", `kept ${randomUUID()}\n`);
    const { ref } = await capture();
    const { cache } = await publish(env, ref);
    await ageBlobs(db, 7 * 24 * 3600);
    await collectGarbage(db, { force: true, graceSeconds: 0 });
    const into = join(temporaryDirectory("strata-into-"), "deps");
    const restored = await dirBackend.restore(ref, into, { source: store, stateDir: join(cacheDir, "state") });
    expect(restored.status).toBe("restored");
    expect(treeImage(join(into, "node_modules"))).toEqual(treeImage(join(source, "node_modules")));

    await db.dependencyCache.update({ where: { id: cache.id }, data: { state: "deleted", deletedAt: new Date() } });
    const needed = (
      await db.dependencyCacheBlob.findMany({ where: { cacheId: cache.id }, select: { digest: true } })
    ).map((b) => b.digest);
    await ageBlobs(db, 7 * 24 * 3600);
    await collectGarbage(db, { force: true, graceSeconds: 0 });
    const left = await db.blob.count({ where: { digest: { in: needed }, state: "stored" } });
    // What the suite's other live caches still need stays; the rest of this cache's content goes.
    const stillNeeded = await db.dependencyCacheBlob.findMany({
      where: { digest: { in: needed }, cache: { state: { not: "deleted" } } },
      select: { digest: true },
    });
    expect(left).toBe(new Set(stillNeeded.map((r) => r.digest)).size);
    expect(left).toBeLessThan(needed.length);
  });

  it("reclaims superseded caches past retention through their backend, keeping a base a live cache needs", async () => {
    const db = catalog().db;
    const env = sha256(`sweep ${randomUUID()}`);
    const other = sha256(`sweep other ${randomUUID()}`);
    write(source, "node_modules/sweep.js", `${randomUUID()}\n`);
    const base = await capture();
    const baseCache = (await publish(env, base.ref)).cache;
    // A cache of another envHash layered on it, then the key's cache replaced.
    write(source, "node_modules/sweep.js", `${randomUUID()}\n`);
    const child = await capture(base.ref);
    const childCache = (await publish(other, child.ref)).cache;
    write(source, "node_modules/sweep.js", `${randomUUID()}\n`);
    await publish(env, (await capture()).ref);
    const later = new Date(Date.now() + 8 * 24 * 3600 * 1000);
    const retentionMs = 7 * 24 * 3600 * 1000;

    // The superseded base is what the live child is layered on: kept.
    await sweepDependencyCaches(db, { now: later, retentionMs });
    expect((await db.dependencyCache.findUniqueOrThrow({ where: { id: baseCache.id } })).state).toBe("superseded");

    // Once the child is superseded too, both go; a failed delete is recorded and tried again.
    write(source, "node_modules/sweep.js", `${randomUUID()}\n`);
    await publish(other, (await capture()).ref);
    await db.dependencyCache.update({ where: { id: childCache.id }, data: { artifactKind: "modal" } });
    const first = await sweepDependencyCaches(db, { now: later, retentionMs });
    expect(first.failed).toContainEqual(expect.objectContaining({ cacheId: childCache.id, kind: "modal" }));
    const failed = await db.dependencyCache.findUniqueOrThrow({ where: { id: childCache.id } });
    expect(failed).toMatchObject({ state: "deleted", artifactRef: child.ref, reclaimAttempts: 1 });
    expect(failed.reclaimError).toContain("UNKNOWN_BACKEND");
    await db.dependencyCache.update({ where: { id: childCache.id }, data: { artifactKind: "dir" } });
    await sweepDependencyCaches(db, { now: later, retentionMs });
    expect((await db.dependencyCache.findUniqueOrThrow({ where: { id: childCache.id } })).reclaimError).toBeNull();
    expect((await db.dependencyCache.findUniqueOrThrow({ where: { id: baseCache.id } })).state).toBe("deleted");
    expect(await statGrantedBlob(db, agent.agentId, base.ref)).toBeNull();
    expect(await statGrantedBlob(db, agent.agentId, child.ref)).toBeNull();
  });
});
