// What a worker may touch for which agent (host-access.ts), on both databases: the roots, the
// agents' own folders, directories claimed by restores, symbolic links and `..` resolved first,
// one answer for every refusal, and two agents claiming overlapping paths at the same moment.
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { isStrataError } from "../domain/errors.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { testHostRoots, type TestHostRoots } from "../testing/host-roots.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";
import { defaultWorkerRoots, HostAccess } from "./host-access.ts";

afterAll(removeTemporaryDirectories);

/** The code and message a refused call gave (or "allowed"). */
async function answer(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return "allowed";
  } catch (error) {
    if (isStrataError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
}

describeEachDatabase("host access: roots and ownership", (catalog) => {
  let a: TestAgent;
  let b: TestAgent;
  let roots: TestHostRoots;
  let access: HostAccess;
  let host: string;

  beforeAll(async () => {
    a = await makeAgent(catalog().db, "own-a");
    b = await makeAgent(catalog().db, "own-b");
    roots = testHostRoots();
    host = uniqueName("host");
    access = HostAccess.open({ host, ...roots.options, dataDir: temporaryDirectory("strata-access-data-") });
  });

  const refusedRestore = "PATH_NOT_ALLOWED: The job's workspace is not a directory this worker may use for this agent.";
  const refusedCapture = "PATH_NOT_ALLOWED: The job's dir is not a directory this worker may use for this agent.";

  it("lets a restore claim a new path under a root, and its agent alone use it afterwards", async () => {
    const db = catalog().db;
    const x = join(roots.root, uniqueName("x"));
    expect(await access.claimForRestore(db, a.scope, x, "job-1")).toBe(x);
    // Claimed again by the same agent (a retried job, a second restore over its empty directory).
    expect(await access.claimForRestore(db, a.scope, x, "job-2")).toBe(x);
    mkdirSync(join(x, "sub"), { recursive: true });
    expect(await access.forCapture(db, a.scope, join(x, "sub"))).toEqual({ path: join(x, "sub"), ownedBy: x });

    // B: not the directory, not inside it, not around it, not through a link or `..`.
    symlinkSync(x, join(roots.folderOf(b.name), "link"));
    const attempts = [
      () => access.claimForRestore(db, b.scope, x, "job-b"),
      () => access.claimForRestore(db, b.scope, join(x, "inner"), "job-b"),
      () => access.claimForRestore(db, b.scope, join(roots.folderOf(b.name), "link", "inner"), "job-b"),
      () => access.claimForRestore(db, b.scope, join(roots.root, "..", "elsewhere"), "job-b"),
      () => access.claimForRestore(db, b.scope, roots.root, "job-b"),
      () => access.claimForRestore(db, b.scope, join(roots.agentRoot, a.name, "new"), "job-b"),
      () => access.claimForRestore(db, b.scope, join(roots.agentRoot, b.name), "job-b"),
      () => access.claimForRestore(db, b.scope, "/etc/strata", "job-b"),
    ];
    for (const attempt of attempts) expect(await answer(attempt)).toBe(refusedRestore);
    const captures = [x, join(x, "sub"), join(roots.folderOf(b.name), "link"), "/etc", join(roots.root, "missing")];
    for (const dir of captures) expect(await answer(() => access.forCapture(db, b.scope, dir))).toBe(refusedCapture);
    // Nothing was claimed for B by the refusals.
    expect(await db.hostDirectory.count({ where: { agentId: b.scope.agentId } })).toBe(0);
  });

  it("gives each agent the folder named after it under an agent root, and nothing else there", async () => {
    const db = catalog().db;
    const own = join(roots.folderOf(b.name), "checkout");
    mkdirSync(own, { recursive: true });
    expect(await access.forCapture(db, b.scope, own)).toEqual({ path: own, ownedBy: roots.folderOf(b.name) });
    expect(await access.claimForRestore(db, b.scope, join(roots.folderOf(b.name), "restored"), "job-3")).toBe(
      join(roots.folderOf(b.name), "restored"),
    );
    expect(await answer(() => access.forCapture(db, a.scope, own))).toBe(refusedCapture);
    expect(await answer(() => access.forCapture(db, b.scope, roots.agentRoot))).toBe(refusedCapture);
  });

  it("refuses a capture of an owned directory that holds another agent's", async () => {
    const db = catalog().db;
    // A claimed a path inside a directory B claims later cannot exist (B's claim is refused)…
    const outer = join(roots.root, uniqueName("outer"));
    await access.claimForRestore(db, a.scope, join(outer, "inner"), "job-4");
    expect(await answer(() => access.claimForRestore(db, b.scope, outer, "job-5"))).toBe(refusedRestore);
    // …and a capture of the surrounding directory by whoever owned it would be refused too.
    await db.hostDirectory.create({ data: { host, path: outer, agentId: b.scope.agentId, jobId: "planted" } });
    expect(await answer(() => access.forCapture(db, b.scope, outer))).toBe(refusedCapture);
    await db.hostDirectory.deleteMany({ where: { jobId: "planted" } });
  });

  it("lets exactly one of two agents claiming the same or nested paths at once have it", async () => {
    const db = catalog().db;
    for (let round = 0; round < 8; round++) {
      const base = join(roots.root, uniqueName(`race-${round}`));
      const nested = round % 2 === 0 ? base : join(base, "inner");
      const outcomes = await Promise.all([
        answer(() => access.claimForRestore(db, a.scope, base, `race-a-${round}`)),
        answer(() => access.claimForRestore(db, b.scope, nested, `race-b-${round}`)),
      ]);
      expect(outcomes.filter((o) => o === "allowed")).toHaveLength(1);
      const owners = await db.hostDirectory.findMany({
        where: { host, OR: [{ path: base }, { path: nested }] },
        select: { agentId: true },
      });
      expect(new Set(owners.map((o) => o.agentId)).size).toBe(1);
    }
  });

  it("uses the data directory's folders when no roots are configured, and refuses a configured root that is missing", () => {
    const dataDir = temporaryDirectory("strata-default-roots-");
    const opened = HostAccess.open({ host, roots: [], agentRoots: [], dataDir });
    const defaults = defaultWorkerRoots(dataDir);
    expect(opened.describe()).toEqual(defaults);
    for (const dir of [...defaults.roots, ...defaults.agentRoots]) expect(existsSync(dir)).toBe(true);
    expect(() => HostAccess.open({ host, roots: [join(dataDir, "typo")], agentRoots: [], dataDir })).toThrow(
      /--root .*typo does not exist/,
    );
  });
});
