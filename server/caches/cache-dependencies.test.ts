// A warm start end to end on both databases: a freshly fetched baseline captured with its
// installed node_modules as the cache of its envHash; a new task acquires it and gets the checkout
// and the node_modules byte for byte, its .env left out; a changed lockfile finds no cache; the
// next baseline's cache stores only what changed.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import { snapshotDetail } from "../dashboard/snapshot-detail.ts";
import { acquireAndRestore, localRestorePort } from "../restore/restore-snapshot.ts";
import { treeImage } from "../testing/backends.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName } from "../testing/lineage.ts";
import {
  addOrigin,
  commitAll,
  git,
  initRepository,
  removeTemporaryDirectories,
  symlink,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";

afterAll(removeTemporaryDirectories);

const LOCK_V1 = '{"name":"app","lockfileVersion":3,"packages":{"node_modules/left":{"version":"1.0.0"}}}\n';
const LOCK_V2 = '{"name":"app","lockfileVersion":3,"packages":{"node_modules/left":{"version":"2.0.0"}}}\n';

/** What `npm ci` would leave: packages, a bin link, an executable, npm's own lock copy. */
function install(root: string, version: string): void {
  write(root, "node_modules/left/package.json", `{"name":"left","version":"${version}"}\n`);
  write(root, "node_modules/left/index.js", `module.exports = "left ${version}";\n`);
  write(root, "node_modules/left/bin/left.js", "#!/usr/bin/env node\nconsole.log('left');\n", 0o755);
  for (let i = 0; i < 40; i++) write(root, `node_modules/util-${i}/index.js`, `module.exports = ${i};\n`);
  write(root, "node_modules/.package-lock.json", version === "1.0.0" ? LOCK_V1 : LOCK_V2);
  if (!existsSync(join(root, "node_modules/.bin/left"))) symlink(root, "node_modules/.bin/left", "../left/bin/left.js");
  write(root, "node_modules/left/.env", "LEFT_TOKEN=not-to-be-stored\n");
}

describeEachDatabase("warm start from a baseline's dependency cache", (catalog) => {
  it("restores a new task's checkout with the baseline's node_modules, and not after the lockfile changes", async () => {
    const db = catalog().db;
    const { scope } = await makeAgent(db);
    const upstream = initRepository({
      "package.json": '{"name":"app","dependencies":{"left":"1.0.0"}}\n',
      "package-lock.json": LOCK_V1,
      "index.js": "require('left');\n",
      ".gitignore": "node_modules/\n",
    });
    const bare = addOrigin(upstream);
    const clone = join(temporaryDirectory(), "clone");
    git(temporaryDirectory(), ["clone", "--quiet", `file://${bare}`, clone]);
    install(clone, "1.0.0");
    const key = {
      repository: { identity: `example.test/acme/${uniqueName("warm")}` },
      backendKind: "local",
      baseImage: "node-20",
      canonicalRef: "main",
    };

    const published = await captureAndPublish(localCatalog(db, scope), {
      dir: clone,
      target: { kind: "baseline", key },
      dependencies: { paths: ["node_modules", ".venv"] },
    });
    expect(published.outcome).toBe("published");
    expect(published.dependencies).toMatchObject({ outcome: "published", paths: ["node_modules"] });
    if (published.dependencies?.outcome !== "published") return;
    expect(published.dependencies.omitted).toEqual([{ path: "node_modules/left/.env", reason: "secret (.env*)" }]);

    // The dashboard shows what the backend says of the artifact, and the cache a restore adds.
    const detail = await snapshotDetail(db, { snapshotId: published.snapshotId });
    expect(detail.artifact).toMatchObject({ kind: "git", ref: published.manifestBlobDigest, deletedAt: null });
    expect(detail.artifact.described).toMatchObject({
      exists: true,
      summary: expect.stringMatching(/^git checkout at [0-9a-f]{12} on main, clean/),
    });
    expect(detail.dependencyCache).toMatchObject({
      paths: ["node_modules"],
      artifactKind: "dir",
      artifactRef: published.dependencies.ref,
    });

    const stateDir = temporaryDirectory("strata-state-");
    const into = join(temporaryDirectory(), "task");
    const acquire = {
      repository: key.repository,
      backendKind: key.backendKind,
      baseImage: key.baseImage,
      canonicalRef: "main",
    };
    const task = await acquireAndRestore(localRestorePort(db, scope), { acquire, into, host: "test-host", stateDir });
    expect(task.steps.map((s) => s.plan.rung)).toEqual(["baseline"]);
    expect(task.steps[0]!.dependencies).toMatchObject({ status: "restored", paths: ["node_modules"], missing: [] });
    const withoutSecret = (path: string) => path === "left/.env";
    expect(treeImage(join(into, "node_modules"))).toEqual(treeImage(join(clone, "node_modules"), withoutSecret));
    expect(existsSync(join(into, "node_modules/left/.env"))).toBe(false);
    expect(git(into, ["status", "--porcelain"])).toBe("");

    // A task whose snapshot names another lockfile gets no cache: it installs.
    write(upstream, "package-lock.json", LOCK_V2);
    commitAll(upstream, "left 2.0.0");
    git(upstream, ["push", "--quiet", "origin", "HEAD"]);
    git(clone, ["pull", "--quiet", "--ff-only"]);
    const second = await captureAndPublish(localCatalog(db, scope), { dir: clone, target: { kind: "baseline", key } });
    expect(second.outcome).toBe("published");
    const cold = join(temporaryDirectory(), "task");
    const next = await acquireAndRestore(localRestorePort(db, scope), {
      acquire,
      into: cold,
      host: "test-host",
      stateDir,
    });
    expect(next.steps.at(-1)!.dependencies).toMatchObject({
      status: "none",
      reason: "no dependency cache for this envHash",
    });
    expect(existsSync(join(cold, "node_modules"))).toBe(false);

    // Installing the new lockfile and publishing again caches it, storing only what changed.
    install(clone, "2.0.0");
    const third = await captureAndPublish(localCatalog(db, scope), {
      dir: clone,
      target: { kind: "baseline", key },
      dependencies: { paths: ["node_modules"] },
    });
    expect(third.dependencies).toMatchObject({ outcome: "published" });
    if (third.dependencies?.outcome !== "published") return;
    // left/package.json, left/index.js, .package-lock.json and the record.
    expect(third.dependencies.uploaded.blobs).toBe(4);
    const warm = join(temporaryDirectory(), "task");
    const again = await acquireAndRestore(localRestorePort(db, scope), {
      acquire,
      into: warm,
      host: "test-host",
      stateDir,
    });
    expect(again.steps.at(-1)!.dependencies).toMatchObject({ status: "restored" });
    expect(readFileSync(join(warm, "node_modules/left/index.js"), "utf8")).toBe('module.exports = "left 2.0.0";\n');
  });
});
