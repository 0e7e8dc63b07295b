// strata pool list|prune: this host's pool of restored worktrees (under STRATA_DATA_DIR/worktrees,
// shared with any host that shares the directory). `list` shows each worktree with its
// repository, holder and lease (held, stale or free, aged on the pool filesystem's clock), or the
// end of the live hold that keeps it (strata hold); `prune` removes the free ones that hold
// nothing to lose, never one with changes git lacks.
import type { Command } from "commander";
import type { PoolListing, PoolWorktree } from "../../server/worktrees/list-pool.ts";
import type { WorktreePool } from "../../server/worktrees/pool.ts";
import type { PruneResult } from "../../server/worktrees/prune-pool.ts";
import { emit } from "../output.ts";

async function openPool(): Promise<WorktreePool> {
  const [{ loadConfig }, { openWorktreePool, poolDirectory }] = await Promise.all([
    import("../../server/config/config.ts"),
    import("../../server/worktrees/pool.ts"),
  ]);
  const config = loadConfig();
  return openWorktreePool({ dir: poolDirectory(config.dataDir), host: config.host });
}

function age(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

function describeWorktree(w: PoolWorktree, now: number | null): string {
  if (w.keptUntil !== null) {
    const left = now === null ? "" : ` (${age(Math.max(0, w.keptUntil - now))} left)`;
    const until = new Date(w.keptUntil).toISOString();
    return `${w.name.padEnd(24)} ${w.state.padEnd(5)} live hold for ${w.owner ?? "its owner"} until ${until}${left}  ${w.repository.identity}`;
  }
  const holder = w.holder ? `pid ${w.holder.pid} on ${w.holder.host}` : "nobody";
  const since = w.state === "free" && w.holder === null ? "released" : "refreshed";
  const kept = w.keptByProcess ? " (its process still runs here)" : "";
  return `${w.name.padEnd(24)} ${w.state.padEnd(5)} ${holder}, ${since} ${age(w.leaseAgeMs)} ago${kept}  ${w.repository.identity}`;
}

function describeListing(listing: PoolListing): string {
  const lines = listing.worktrees.map((w) => describeWorktree(w, listing.now));
  for (const leftover of listing.leftovers) lines.push(`${leftover.name.padEnd(24)} ${leftover.kind}`);
  return lines.length > 0 ? lines.join("\n") : `No pooled worktrees in ${listing.dir}.`;
}

function describePrune(result: PruneResult): string {
  const lines = [
    ...result.removed.map((w) => `removed ${w.path}`),
    ...result.kept.map((w) => `kept    ${w.path} (${w.reason})`),
  ];
  lines.push(
    `Removed ${result.removed.length}, kept ${result.kept.length}; cleaned ${result.leftoversCleaned} leftover(s).`,
  );
  return lines.join("\n");
}

export function registerPool(program: Command): void {
  const pool = program
    .command("pool")
    .description("this host's pool of restored worktrees: list them, prune free clean ones");

  pool
    .command("list")
    .description("list pooled worktrees: repository, holder, lease age on the pool's clock, held/stale/free")
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean }) => {
      const { listPool } = await import("../../server/worktrees/list-pool.ts");
      const listing = await listPool(await openPool());
      emit(Boolean(opts.json), listing, describeListing(listing));
    });

  pool
    .command("prune")
    .description(
      "remove free worktrees with nothing to lose (never one with changes), and leftovers of crashed processes",
    )
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean }) => {
      const { prunePool } = await import("../../server/worktrees/prune-pool.ts");
      const result = await prunePool(await openPool());
      emit(Boolean(opts.json), result, describePrune(result));
    });
}
