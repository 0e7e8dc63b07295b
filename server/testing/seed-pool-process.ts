// A process e2e/serve.mjs runs once: two pooled worktrees of the seeded web-app in the e2e
// server's pool, for the repository page's pool section (e2e/repository-pool.spec.ts). web-app-1
// is held on behalf of the process named by the argument (serve.mjs, which runs as long as the
// server does); web-app-2 is released idle, exactly the checkout it recorded, with the
// repository's newest ready snapshot as its last one.
//
//   node --import tsx server/testing/seed-pool-process.ts <holder pid>
import { loadConfig } from "../config/config.ts";
import { openCatalog } from "../db/client.ts";
import { openWorktreePool, poolDirectory } from "../worktrees/pool.ts";
import { processOnThisMachine } from "../worktrees/process-identity.ts";
import { recordWorktreeSnapshot, releaseWorktree, takeWorktree } from "../worktrees/take-worktree.ts";
import { commitAll, git } from "./repos.ts";

const WEB_APP = { identity: "github.com/acme/web-app", name: "web-app" };

/** What a restore leaves: a checkout with one commit. */
function checkout(dir: string): { head: string; tree: string } {
  git(dir, ["init", "--quiet", "--initial-branch=main"]);
  const head = commitAll(dir, "restored");
  return { head, tree: git(dir, ["rev-parse", "HEAD^{tree}"]).trim() };
}

const holderPid = Number(process.argv[2]);
if (!Number.isInteger(holderPid) || holderPid <= 0) throw new Error("usage: seed-pool-process.ts <holder pid>");
const config = loadConfig();
const pool = await openWorktreePool({ dir: poolDirectory(config.dataDir), host: config.host });

const held = await takeWorktree(pool, WEB_APP, {
  owner: "issue-501-flaky-e2e",
  holder: await processOnThisMachine(holderPid, config.host),
  fresh: true,
});
checkout(held.path);
// The holder keeps it while it runs; this process need not refresh the lease.
held.lease.stop();

const catalog = openCatalog(config.databaseUrl);
try {
  const newest = await catalog.db.snapshot.findFirstOrThrow({
    where: { repository: { identity: WEB_APP.identity }, state: "ready" },
    orderBy: { createdAt: "desc" },
    select: { id: true },
  });
  const idle = await takeWorktree(pool, WEB_APP, { owner: "spike-redis-cache", fresh: true });
  const recorded = checkout(idle.path);
  await recordWorktreeSnapshot(idle, { snapshot: { id: newest.id, ...recorded }, env: null });
  await releaseWorktree(idle);
  process.stdout.write(`pooled ${held.name} (held by pid ${holderPid}) and ${idle.name} (idle) in ${pool.dir}\n`);
} finally {
  await catalog.close();
}
