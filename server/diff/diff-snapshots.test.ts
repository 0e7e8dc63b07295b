// Comparing two snapshots as an agent and as the dashboard do: real captures of a real checkout
// published into a catalog of each kind, compared from the stored patches alone.
import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import type { SnapshotDiff } from "../domain/snapshot-diff.ts";
import { isStrataError } from "../domain/errors.ts";
import { TRPCError } from "@trpc/server";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import {
  addOrigin,
  commitAll,
  initRepository,
  remove,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";
import { makeUser } from "../testing/dashboard.ts";
import { createContextInner } from "../trpc/init.ts";
import { createCaller } from "../trpc/root.ts";
import type { UserScope } from "../domain/scope.ts";
import { appendCheckpoint } from "../lineage/checkpoints.ts";
import { retireSnapshot } from "../lineage/retirement.ts";
import { oid } from "../testing/lineage.ts";
import { diffAgentSnapshots, diffSnapshotsForStaff } from "./diff-snapshots.ts";

afterAll(removeTemporaryDirectories);

const SECRET = `FAKE-SECRET-${Math.random().toString(36).slice(2)}-NOT-A-REAL-KEY`;

/** 60 numbered lines; `edits` replaces some by line number (1-based). */
function lines(edits: Record<number, string> = {}): string {
  return Array.from({ length: 60 }, (_, i) => edits[i + 1] ?? `line ${i + 1} of the app`).join("\n") + "\n";
}

const PNG_V0 = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0]), Buffer.alloc(2000, 7)]);
const PNG_V1 = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1]), Buffer.alloc(3000, 8)]);
const PNG_V2 = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 2]), Buffer.alloc(5000, 9)]);

function checkpointTarget(repository: string, workContextId: string) {
  return {
    kind: "checkpoint" as const,
    key: { repository: { identity: repository }, backendKind: "local", baseImage: "test-image", workContextId },
  };
}

/** The file a diff leads to: `before` with the diff applied by git itself. */
function applied(path: string, before: string | null, diff: string): string {
  const dir = temporaryDirectory("strata-apply-");
  if (before !== null) write(dir, path, before);
  const header =
    before === null
      ? `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n`
      : `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n`;
  writeFileSync(join(dir, "change.patch"), header + diff);
  execFileSync("git", ["apply", "--recount", "change.patch"], { cwd: dir });
  return readFileSync(join(dir, path), "utf8");
}

function file(diff: SnapshotDiff, path: string) {
  const found = diff.files.find((f) => f.path === path);
  if (!found) throw new Error(`${path} is not in the diff: ${diff.files.map((f) => f.path).join(", ")}`);
  return found;
}

describeEachDatabase("snapshot diff", (catalog) => {
  let owner: TestAgent;
  let other: TestAgent;
  let repository: string;
  let first: string;
  let second: string;
  let moved: string;
  let elsewhere: string;

  beforeAll(async () => {
    const db = catalog().db;
    owner = await makeAgent(db, "differ");
    other = await makeAgent(db, "stranger");
    repository = `example.test/acme/${uniqueName("diff")}`;
    const root = initRepository({
      "src/app.ts": lines(),
      "assets/logo.png": PNG_V0,
      "old.txt": "going away\nsoon\n",
      "run.sh": "echo run\n",
    });
    addOrigin(root);
    const port = localCatalog(db, owner.scope);
    const target = checkpointTarget(repository, uniqueName("wc"));

    write(root, "src/app.ts", lines({ 10: "line 10, first change" }));
    write(root, "assets/logo.png", PNG_V1);
    write(root, "notes.md", "kept as is\n");
    write(root, ".env", `TOKEN=${SECRET}\n`);
    first = (await captureAndPublish(port, { dir: root, target })).snapshotId;

    write(
      root,
      "src/app.ts",
      lines({ 10: "line 10, first change", 30: "line 30, second change", 55: "added after 55" }),
    );
    write(root, "assets/logo.png", PNG_V2);
    remove(root, "old.txt");
    chmodSync(join(root, "run.sh"), 0o755);
    write(root, "docs/new.md", "# New\n\nA page.\n");
    write(root, ".env", `TOKEN=${SECRET}-rotated\n`);
    const captured = await captureAndPublish(port, { dir: root, target });
    expect(captured.manifest.patches.map((p) => p.kind)).toEqual(["full", "incremental"]);
    second = captured.snapshotId;

    // HEAD moves: the next checkpoint's changes sit on another commit.
    commitAll(root, "work so far");
    write(root, "src/app.ts", lines({ 1: "moved on" }));
    moved = (await captureAndPublish(port, { dir: root, target })).snapshotId;

    const another = initRepository({ "a.txt": "a\n" });
    write(another, "a.txt", "b\n");
    elsewhere = (
      await captureAndPublish(port, { dir: another, target: checkpointTarget(`${repository}-2`, uniqueName("wc")) })
    ).snapshotId;
  }, 120_000);

  it("lists text, binary, added, deleted and mode changes between two checkpoints on one HEAD", async () => {
    const diff = await diffAgentSnapshots(catalog().db, { from: first, to: second, agent: owner.scope });
    expect(diff).toMatchObject({ identical: false, completeness: "exact", cut: { files: 0, diffs: 0 } });
    expect(diff.files.map((f) => [f.path, f.change, f.content])).toEqual([
      ["assets/logo.png", "modified", "binary"],
      ["docs/new.md", "added", "text"],
      ["old.txt", "deleted", "text"],
      ["run.sh", "mode", "text"],
      ["src/app.ts", "modified", "text"],
    ]);

    // The text diff, applied by git to the first snapshot's file, gives the second's.
    const app = file(diff, "src/app.ts");
    expect(app).toMatchObject({ additions: 2, deletions: 2, truncated: false, note: null });
    const before = lines({ 10: "line 10, first change" });
    const after = lines({ 10: "line 10, first change", 30: "line 30, second change", 55: "added after 55" });
    expect(applied("src/app.ts", before, app.diff ?? "")).toBe(after);
    expect(app.diff).toContain("-line 30 of the app\n+line 30, second change\n");

    expect(applied("docs/new.md", null, file(diff, "docs/new.md").diff ?? "")).toBe("# New\n\nA page.\n");
    expect(file(diff, "old.txt")).toMatchObject({ deletions: 2, diff: "@@ -1,2 +0,0 @@\n-going away\n-soon\n" });
    expect(file(diff, "run.sh")).toMatchObject({ oldMode: "100644", newMode: "100755", diff: "" });

    // A binary file is named with its sizes, never dumped.
    expect(file(diff, "assets/logo.png")).toMatchObject({
      oldSize: PNG_V1.length,
      newSize: PNG_V2.length,
      diff: null,
    });
    expect(diff.stat).toEqual({ files: 5, added: 1, modified: 3, deleted: 1, additions: 5, deletions: 4 });
  });

  it("never shows a denied file: its path is named as left out, its content nowhere", async () => {
    const diff = await diffAgentSnapshots(catalog().db, { from: first, to: second, agent: owner.scope });
    expect(diff.denied).toEqual([".env"]);
    expect(diff.files.map((f) => f.path)).not.toContain(".env");
    expect(JSON.stringify(diff)).not.toContain(SECRET);
  });

  it("compares a checkpoint with its predecessor for the dashboard, and a snapshot with itself", async () => {
    const diff = await diffSnapshotsForStaff(catalog().db, { to: second });
    expect(diff.from.id).toBe(first);
    expect(diff.files).toHaveLength(5);
    const same = await diffSnapshotsForStaff(catalog().db, { from: second, to: second });
    expect(same).toMatchObject({ identical: true, files: [], completeness: "exact" });
  });

  it("says when HEAD moved: only the files either snapshot changed on top of its HEAD are listed", async () => {
    const diff = await diffAgentSnapshots(catalog().db, { from: second, to: moved, agent: owner.scope });
    expect(diff.completeness).toBe("changes-only");
    expect(diff.notes[0]).toMatch(/^HEAD moved from [0-9a-f]{12} to [0-9a-f]{12}/);
    // app.ts: both versions hold lines of their own HEAD that are not held, so no line diff.
    expect(file(diff, "src/app.ts")).toMatchObject({ content: "not-held", diff: null });
    expect(JSON.stringify(diff)).not.toContain(SECRET);
  });

  it("keeps to its limits and says what it cut", async () => {
    const db = catalog().db;
    const few = await diffAgentSnapshots(db, { from: first, to: second, agent: owner.scope, maxFiles: 2 });
    expect(few.files.map((f) => f.path)).toEqual(["assets/logo.png", "docs/new.md"]);
    expect(few.cut.files).toBe(3);
    expect(few.stat.files).toBe(5);

    const short = await diffAgentSnapshots(db, { from: first, to: second, agent: owner.scope, maxBytesPerFile: 256 });
    const app = file(short, "src/app.ts");
    expect(app.truncated).toBe(true);
    expect(Buffer.byteLength(app.diff ?? "")).toBeLessThanOrEqual(256);
    expect(app.note).toMatch(/cut at 256 bytes/);

    const budget = await diffAgentSnapshots(db, { from: first, to: second, agent: owner.scope, maxBytes: 300 });
    const shown = budget.files.reduce((sum, f) => sum + Buffer.byteLength(f.diff ?? ""), 0);
    expect(shown).toBeLessThanOrEqual(300);
    expect(budget.cut.diffs).toBeGreaterThan(0);
    expect(file(budget, "src/app.ts").note).toMatch(/were used up/);
  });

  it("says when a snapshot's capture record is not held, and hides a retired snapshot unless asked", async () => {
    const db = catalog().db;
    // A checkpoint published with its short manifest only: no capture record, no patches.
    const bare = await appendCheckpoint(db, {
      agent: owner.scope,
      key: {
        repository: { identity: repository },
        backendKind: "local",
        baseImage: "test-image",
        workContextId: uniqueName("wc"),
      },
      observedHeadId: null,
      manifest: { treeId: oid("tree:bare"), head: oid("head:bare"), branch: "main", blobDigests: [], sizeBytes: 0 },
    });
    const id = bare.snapshot.id;
    const diff = await diffAgentSnapshots(db, { from: first, to: id, agent: owner.scope });
    expect(diff).toMatchObject({ completeness: "unknown", identical: false, files: [], to: { recordHeld: false } });
    expect(diff.notes).toEqual([expect.stringContaining(`holds no readable capture record of snapshot ${id}`)]);

    await retireSnapshot(db, { snapshotId: id, actor: { type: "system" } });
    const hidden = await diffAgentSnapshots(db, { from: first, to: id, agent: owner.scope }).catch((e: unknown) => e);
    expect(isStrataError(hidden, "NOT_FOUND")).toBe(true);
    const asked = await diffAgentSnapshots(db, { from: first, to: id, agent: owner.scope, includeRetired: true });
    expect(asked.to).toMatchObject({ id, state: "retired" });
  });

  it("names at most 100 secret paths and counts the rest in a note", async () => {
    const db = catalog().db;
    const root = initRepository({ "a.txt": "a\n" });
    for (let i = 0; i < 102; i += 1) write(root, `.env.${String(i).padStart(3, "0")}`, `TOKEN=${SECRET}\n`);
    write(root, "a.txt", "b\n");
    const target = checkpointTarget(`${repository}-secrets`, uniqueName("wc"));
    const id = (await captureAndPublish(localCatalog(db, owner.scope), { dir: root, target })).snapshotId;
    const diff = await diffAgentSnapshots(db, { from: id, to: id, agent: owner.scope });
    expect(diff).toMatchObject({
      identical: true,
      notes: ["2 more secret paths were left out of the captures; not listed."],
    });
    expect(diff.denied).toHaveLength(100);
    expect(diff.denied[0]).toBe(".env.000");
    expect(JSON.stringify(diff)).not.toContain(SECRET);
  });

  it("answers another agent's snapshot as not found, and refuses snapshots of two repositories", async () => {
    const db = catalog().db;
    const refused = await diffAgentSnapshots(db, { from: first, to: second, agent: other.scope }).catch(
      (e: unknown) => e,
    );
    expect(isStrataError(refused, "NOT_FOUND")).toBe(true);
    const unknown = await diffAgentSnapshots(db, {
      from: first,
      to: "0d3c1a52-8d0e-4a4e-9a56-3f1e8b2c9d71",
      agent: owner.scope,
    }).catch((e: unknown) => e);
    expect(isStrataError(unknown, "NOT_FOUND")).toBe(true);
    const apart = await diffAgentSnapshots(db, { from: first, to: elsewhere, agent: owner.scope }).catch(
      (e: unknown) => e,
    );
    expect(isStrataError(apart, "INVALID_INPUT")).toBe(true);
    expect(apart).toMatchObject({ data: { reason: "different-repositories" } });
    const staffApart = await diffSnapshotsForStaff(db, { from: first, to: elsewhere }).catch((e: unknown) => e);
    expect(isStrataError(staffApart, "INVALID_INPUT")).toBe(true);
  });

  it("answers through the API: snapshot.diff for the owning agent, dashboard.snapshotDiff for every staff role", async () => {
    const db = catalog().db;
    const caller = (authorization: string | null, user: UserScope | null = null) =>
      createCaller(createContextInner({ db, authorization, user }));
    const code = (call: Promise<unknown>) =>
      call.then(
        () => "ok",
        (error: unknown) => {
          const cause = error instanceof TRPCError ? error.cause : error;
          return isStrataError(cause) ? cause.code : error instanceof TRPCError ? error.code : "thrown";
        },
      );
    const own = await caller(`Bearer ${owner.token}`).snapshot.diff({ from: first, to: second });
    expect(own.files.map((f) => f.path)).toContain("src/app.ts");
    expect(await code(caller(`Bearer ${other.token}`).snapshot.diff({ from: first, to: second }))).toBe("NOT_FOUND");
    expect(await code(caller(null).snapshot.diff({ from: first, to: second }))).toBe("UNAUTHORIZED");
    for (const role of ["operator", "support", "admin"] as const) {
      const user = await makeUser(db, role);
      const answer = await caller(null, user).dashboard.snapshotDiff({ to: second });
      expect(answer).toMatchObject({ from: { id: first }, to: { id: second }, stat: { files: 5 } });
    }
    expect(await code(caller(`Bearer ${owner.token}`).dashboard.snapshotDiff({ to: second }))).toBe("UNAUTHORIZED");
    expect(await code(caller(null).dashboard.snapshotDiff({ to: second }))).toBe("UNAUTHORIZED");
  });
});
