// The contract every backend kind keeps, run against each registered kind with the catalog's
// blob store on SQLite and on PostgreSQL: capture, restore verified byte for byte, unchanged
// captures, a secret left out and reported, hostile records refused with nothing written,
// degraded outcomes that name what is missing, idempotent delete, describe.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isStrataError } from "../domain/errors.ts";
import { BACKEND_FIXTURES, treeImage } from "../testing/backends.ts";
import { createOwner, sha256 } from "../testing/content.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import type { SnapshotBackend } from "./backend.ts";
import { catalogContentStore, memoryContentStore, readWhole, type ContentStore } from "./content-store.ts";
import { BACKEND_KINDS, backendFor } from "./registry.ts";

afterAll(removeTemporaryDirectories);

it("every registered kind has a contract fixture, and an unknown kind is a typed error", () => {
  expect(BACKEND_KINDS.sort()).toEqual(Object.keys(BACKEND_FIXTURES).sort());
  let error: unknown;
  try {
    backendFor("modal");
  } catch (caught) {
    error = caught;
  }
  expect(isStrataError(error, "UNKNOWN_BACKEND")).toBe(true);
  expect((error as Error).message).toContain("modal");
});

describeEachDatabase("backend contract", (catalog) => {
  for (const kind of BACKEND_KINDS) {
    describe(kind, () => {
      const fixture = BACKEND_FIXTURES[kind]!;
      let backend: SnapshotBackend;
      let store: ContentStore;
      let stateDir: string;
      let cacheDir: string;
      beforeAll(async () => {
        backend = backendFor(kind);
        store = catalogContentStore(catalog().db, (await createOwner(catalog().db)).agentId);
        stateDir = temporaryDirectory("strata-state-");
        cacheDir = temporaryDirectory("strata-cache-");
      });
      const restoreInto = (ref: string, into: string, exactOnly = false) =>
        backend.restore(ref, into, { source: store, stateDir, exactOnly });
      const newTarget = () => join(temporaryDirectory("strata-into-"), "workspace");

      it("captures a workspace and restores it byte for byte, verified, without its secret", async () => {
        const root = fixture.make();
        const captured = await backend.capture(root, { store, cacheDir });
        expect(captured.outcome).toBe("captured");
        expect(captured.ref).toMatch(/^[0-9a-f]{64}$/);
        expect(captured.sizeBytes).toBeGreaterThan(0);
        expect(captured.omitted).toContainEqual(expect.objectContaining({ path: ".env" }));

        const into = newTarget();
        const outcome = await restoreInto(captured.ref, into);
        expect(outcome.status).toBe("restored");
        if (outcome.status !== "restored") return;
        expect(outcome.path).toBe(into);
        expect(outcome.verified).toMatch(/^[0-9a-f]{40,64}$/);
        expect(treeImage(into, fixture.skip)).toEqual(treeImage(root, fixture.skip));
        expect(existsSync(join(into, ".env"))).toBe(false);
        const files = [...treeImage(into)].filter(([, what]) => what.startsWith("file")).map(([path]) => path);
        expect(files.filter((path) => readFileSync(join(into, path), "latin1").includes("FAKE-SECRET"))).toEqual([]);
      });

      it("records an unchanged workspace as its previous artifact, and an edit as a new one", async () => {
        const root = fixture.make();
        const first = await backend.capture(root, { store, cacheDir });
        const again = await backend.capture(root, { store, cacheDir, previous: first.ref });
        expect(again).toMatchObject({ outcome: "unchanged", ref: first.ref, uploaded: { blobs: 0 } });

        write(root, fixture.edit, "console.log('edited');\n");
        const edited = await backend.capture(root, { store, cacheDir, previous: first.ref });
        expect(edited.outcome).toBe("captured");
        expect(edited.ref).not.toBe(first.ref);
        const into = newTarget();
        expect((await restoreInto(edited.ref, into)).status).toBe("restored");
        expect(readFileSync(join(into, fixture.edit), "utf8")).toBe("console.log('edited');\n");
        // The first artifact is immutable: it still restores the state it recorded.
        const before = newTarget();
        expect((await restoreInto(first.ref, before)).status).toBe("restored");
        expect(readFileSync(join(before, fixture.edit), "utf8")).not.toContain("edited");
      });

      it("refuses a target that is not empty and a hostile record, writing nothing", async () => {
        const root = fixture.make();
        const { ref } = await backend.capture(root, { store, cacheDir });
        const occupied = temporaryDirectory("strata-occupied-");
        writeFileSync(join(occupied, "mine.txt"), "keep\n");
        const refused = await restoreInto(ref, occupied);
        expect(refused.status).toBe("unrestored");
        if (refused.status === "unrestored") expect(refused.error.code).toBe("UNSAFE_TARGET");
        expect(readdirSync(occupied)).toEqual(["mine.txt"]);

        const record = JSON.parse((await readWhole(store, ref)).toString("utf8")) as unknown;
        const hostile = Buffer.from(JSON.stringify(fixture.poison(record)));
        const hostileRef = sha256(hostile);
        await store.put(hostileRef, hostile);
        const parent = temporaryDirectory("strata-hostile-");
        const outcome = await restoreInto(hostileRef, join(parent, "workspace"));
        expect(outcome.status).toBe("unrestored");
        if (outcome.status === "unrestored") expect(outcome.error.code).toBe("INVALID_SNAPSHOT");
        expect(readdirSync(parent)).toEqual([]);
        expect(existsSync(join(parent, "escape"))).toBe(false);
      });

      it("restores what it can when content is missing, and says what is missing", async () => {
        const root = fixture.make();
        const first = await backend.capture(root, { store, cacheDir });
        write(root, fixture.edit, `console.log('only in the second capture ${kind}');\n`);
        const second = await backend.capture(root, { store, cacheDir, previous: first.ref });
        // Drop the content only the second capture has (not its record).
        const record = (await readWhole(store, second.ref)).toString("utf8");
        const firstRecord = (await readWhole(store, first.ref)).toString("utf8");
        const own = [...new Set(record.match(/[0-9a-f]{64}/g) ?? [])].filter(
          (d) => d !== first.ref && !firstRecord.includes(d) && d !== second.ref,
        );
        expect(own.length).toBeGreaterThan(0);
        for (const digest of own) await store.remove(digest);

        const into = newTarget();
        const outcome = await restoreInto(second.ref, into);
        expect(outcome.status).toBe("degraded");
        if (outcome.status !== "degraded") return;
        expect(outcome.missing.cause).toBe("BLOB_MISSING");
        expect(outcome.missing.entries.length).toBeGreaterThan(0);
        // A kind that can tell which files the missing content held names them.
        if (outcome.missing.pathsComplete) expect(outcome.missing.paths).toContain(fixture.edit);
        else expect(outcome.missing.entries.some((e) => e.startsWith("change-set:"))).toBe(true);
        expect(readFileSync(join(into, "README.md"), "utf8")).toBe("# fixture\n");

        const exact = await restoreInto(second.ref, newTarget(), true);
        expect(exact.status).toBe("unrestored");
        if (exact.status === "unrestored") expect(exact.error.code).toBe("BLOB_MISSING");
      });

      it("lists the content an artifact needs: a store holding only that restores it", async () => {
        const root = fixture.make();
        const first = await backend.capture(root, { store, cacheDir });
        write(root, fixture.edit, "console.log('listed');\n");
        const second = await backend.capture(root, { store, cacheDir, previous: first.ref });
        const all = await backend.content(second.ref, { source: store, known: async () => false });
        expect(all.base).toBeNull();
        expect(all.digests).toContain(second.ref);
        const only = memoryContentStore();
        for (const digest of all.digests) await only.put(digest, await readWhole(store, digest));
        const into = newTarget();
        const outcome = await backend.restore(second.ref, into, { source: only, stateDir });
        expect(outcome.status).toBe("restored");
        expect(treeImage(into, fixture.skip)).toEqual(treeImage(root, fixture.skip));
        // Knowing the first artifact is kept, a layered kind lists less and names it as its base.
        const delta = await backend.content(second.ref, { source: store, known: async (ref) => ref === first.ref });
        if (delta.base !== null) {
          expect(delta.base).toBe(first.ref);
          expect(delta.digests.length).toBeLessThan(all.digests.length);
        } else expect(delta.digests.sort()).toEqual(all.digests.sort());
      });

      it("describes an artifact, deletes it once, and then neither restores nor describes it", async () => {
        const root = fixture.make();
        const { ref } = await backend.capture(root, { store, cacheDir });
        const described = await backend.describe(ref, { source: store });
        expect(described).toMatchObject({ kind, ref, exists: true });
        expect(described.summary.length).toBeGreaterThan(5);
        expect(Date.parse(described.capturedAt ?? "")).not.toBeNaN();

        expect(await backend.delete(ref, { store })).toEqual({ deleted: true });
        expect(await backend.delete(ref, { store })).toEqual({ deleted: false });
        expect(await backend.describe(ref, { source: store })).toMatchObject({ exists: false });
        const parent = temporaryDirectory("strata-deleted-");
        const outcome = await restoreInto(ref, join(parent, "workspace"));
        expect(outcome.status).toBe("unrestored");
        if (outcome.status === "unrestored") expect(outcome.error.code).toBe("BLOB_MISSING");
        expect(readdirSync(parent)).toEqual([]);
      });
    });
  }
});
