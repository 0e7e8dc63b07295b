// A take that names another process of this machine as its holder (`strata resume --hold-pid`):
// once the taking process stops refreshing, the worktree stays held while that process runs and
// frees 90 s (here: the shortened timings) after the last refresh once it is gone.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";
import type { LeaseTimings } from "./lease.ts";
import { listPool } from "./list-pool.ts";
import { openWorktreePool } from "./pool.ts";
import { processOnThisMachine } from "./process-identity.ts";
import { takeWorktree } from "./take-worktree.ts";

afterAll(removeTemporaryDirectories);

// Windows wide enough that a busy machine never lets a refreshed lease go stale.
const FAST: Partial<LeaseTimings> = { refreshMs: 100, staleMs: 1_000, graceMs: 1_000, unverifiedKeepMs: 3_000 };

it("keeps a worktree held while the named holder runs, and frees it once that process is gone", async () => {
  // The pool's time is moved forward (aheadMs) instead of waited for.
  let ahead = 0;
  const pool = await openWorktreePool({
    dir: join(temporaryDirectory("strata-pool-"), "worktrees"),
    timings: FAST,
    aheadMs: () => ahead,
  });
  const agent = spawn("sleep", ["60"], { stdio: "ignore" });
  try {
    const holder = await processOnThisMachine(agent.pid!, pool.me.host);
    expect(holder).toMatchObject({ pid: agent.pid, bootId: pool.me.bootId, pidNamespace: pool.me.pidNamespace });
    const held = await takeWorktree(pool, { identity: "github.com/acme/app", name: "app" }, { holder });
    // The taking process exits (stops refreshing); the agent goes on.
    held.lease.stop();
    // A refresh under way would stamp the moved time: wait it out.
    await held.lease.refresh();
    // Past the lease's stale time: only the holder process keeps it now.
    ahead += FAST.staleMs! + 300;
    expect((await listPool(pool)).worktrees).toEqual([
      expect.objectContaining({
        name: held.name,
        state: "held",
        keptByProcess: true,
        holder: { pid: agent.pid, host: pool.me.host },
      }),
    ]);
  } finally {
    agent.kill("SIGKILL");
  }
  await new Promise((resolve) => agent.once("exit", resolve));
  // Past stale + grace since the last refresh: with its holder gone, the worktree is free.
  ahead += FAST.graceMs! + 200;
  expect((await listPool(pool)).worktrees).toEqual([expect.objectContaining({ state: "free", keptByProcess: false })]);
});
