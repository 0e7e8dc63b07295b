// The repository page's pool, read from a real pool directory: worktrees taken and released
// through the pool's own API (one held by an agent's process, one idle and exactly its recorded
// snapshot, one idle with an untracked file, one whose reset was interrupted), another
// repository's worktree left out, and the recorded snapshot joined to the catalog's row.
import { writeFileSync } from "node:fs";
import { afterAll, afterEach, expect, it } from "vitest";
import { isStrataError } from "../domain/errors.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, publishClean, scenario } from "../testing/lineage.ts";
import { commitAll, git, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { openWorktreePool, poolDirectory, type WorktreePool } from "../worktrees/pool.ts";
import {
  recordWorktreeSnapshot,
  releaseWorktree,
  takeWorktree,
  type HeldWorktree,
} from "../worktrees/take-worktree.ts";
import { resetMarkFile } from "../worktrees/worktree-cleanliness.ts";
import { repositoryPool } from "./repository-pool.ts";

afterAll(removeTemporaryDirectories);

const holds: HeldWorktree[] = [];
afterEach(() => {
  for (const held of holds.splice(0)) held.lease.stop();
});

/** A new worktree of `identity`, made a checkout as a restore would leave it. */
async function restored(pool: WorktreePool, identity: string): Promise<HeldWorktree> {
  const held = await takeWorktree(pool, { identity, name: "app" }, { owner: `task-${holds.length}`, fresh: true });
  holds.push(held);
  git(held.path, ["init", "--quiet", "--initial-branch=main"]);
  write(held.path, "README.md", "restored\n");
  commitAll(held.path, "restored");
  return held;
}

describeEachDatabase("repository pool", (catalog) => {
  it("shows this host's worktrees of the repository: held, idle clean, idle dirty and marked", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db, "pool");
    const s = scenario("pool");
    const { snapshot } = await publishClean(db, agent.scope, s, "pool-base", null);
    const identity = s.repository.identity;
    const dataDir = temporaryDirectory("strata-data-");
    // An agent's process on this machine takes the worktrees; the server lists them.
    const agentPool = await openWorktreePool({ dir: poolDirectory(dataDir), host: "agent-host" });

    const held = await restored(agentPool, identity);
    const clean = await restored(agentPool, identity);
    const head = git(clean.path, ["rev-parse", "HEAD"]).trim();
    const tree = git(clean.path, ["rev-parse", "HEAD^{tree}"]).trim();
    expect(await recordWorktreeSnapshot(clean, { snapshot: { id: snapshot.id, head, tree }, env: null })).toBe(
      "changed",
    );
    const dirty = await restored(agentPool, identity);
    write(dirty.path, "notes.txt", "not recorded anywhere\n");
    const marked = await restored(agentPool, identity);
    writeFileSync(resetMarkFile(marked.path), "");
    const elsewhere = await restored(agentPool, `${identity}-other`);
    for (const w of [clean, dirty, marked, elsewhere]) expect(await releaseWorktree(w)).toBe("released");

    const pool = await repositoryPool(db, { repositoryId: snapshot.repositoryId, dataDir, host: "server-host" });
    expect(pool).toMatchObject({
      repository: { id: snapshot.repositoryId, identity },
      host: "server-host",
      directory: poolDirectory(dataDir),
    });
    expect(pool.worktrees.map((w) => [w.name, w.state, w.status])).toEqual([
      [held.name, "held", "held"],
      [clean.name, "free", "idle-clean"],
      [dirty.name, "free", "idle-dirty"],
      [marked.name, "free", "marked"],
    ]);
    const [h, c, d, m] = pool.worktrees;
    expect(h).toMatchObject({ path: held.path, holder: { pid: process.pid, host: "agent-host" }, releasedAt: null });
    expect(h!.leaseAgeMs).toBeLessThan(30_000);
    expect(c).toMatchObject({
      holder: null,
      owner: clean.owner,
      detail: null,
      snapshot: { id: snapshot.id, head, tree, catalog: { class: "baseline", state: "ready" } },
    });
    expect(c!.releasedAt).toEqual(expect.any(Number));
    expect(d).toMatchObject({ snapshot: null, detail: expect.stringContaining("notes.txt") });
    expect(m).toMatchObject({ marked: true, detail: expect.stringContaining("interrupted") });
  });

  it("says so when this host has no pool, and refuses an unknown repository", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db, "pool");
    const { snapshot } = await publishClean(db, agent.scope, scenario("pool"), "pool-none", null);
    const dataDir = temporaryDirectory("strata-data-");
    const pool = await repositoryPool(db, { repositoryId: snapshot.repositoryId, dataDir, host: "server-host" });
    expect(pool).toMatchObject({ host: "server-host", directory: poolDirectory(dataDir), worktrees: [] });

    const unknown = await repositoryPool(db, { repositoryId: "no-such-repository", dataDir, host: "h" }).catch(
      (e: unknown) => e,
    );
    expect(isStrataError(unknown, "NOT_FOUND")).toBe(true);
  });
});
