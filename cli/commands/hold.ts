// strata hold: a paused task keeps its live workspace. After `strata capture --context ID`
// appended the pause's checkpoint, `strata hold --context ID --snapshot CHECKPOINT [dir]` holds the
// checkout the task works in (workspace.hold): 14 days on an idle-persistent provider, one hour
// otherwise (STRATA_PROVIDERS). While the hold lasts, the checkpoint is kept from collection,
// `strata acquire`/`strata resume` of the work context on this host continue in the directory
// as it is, and, when the directory is a pooled worktree of this host, the pool keeps it for the
// task (no other task takes, reuses or prunes it). `strata hold --release HOLD` ends it early.
import { realpath, stat } from "node:fs/promises";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { Config } from "../../server/config/config.ts";
import type { LiveHoldView } from "../../server/domain/live-holds.ts";
import type { HoldWorkspaceInput } from "../../server/lineage/hold-workspace.ts";
import type { ReleaseLiveHoldInput } from "../../server/lineage/release-live-hold.ts";
import { withCatalog } from "../catalog.ts";
import { CliError, EXIT, emit } from "../output.ts";
import { reporting } from "./restore.ts";

interface HoldFlags {
  context?: string;
  snapshot?: string;
  release?: string;
  server?: string;
  agent?: string;
  json?: boolean;
}

interface HoldCatalog {
  hold(input: HoldWorkspaceInput): Promise<LiveHoldView>;
  release(input: ReleaseLiveHoldInput): Promise<LiveHoldView>;
}

/** Runs fn against the catalog the flags name: a Strata server, or this machine's database. */
async function withHoldCatalog<T>(
  flags: HoldFlags,
  config: Config,
  fn: (catalog: HoldCatalog) => Promise<T>,
): Promise<T> {
  const { localAgent, serverTarget } = await import("../connection.ts");
  const server = serverTarget(flags.server);
  if (server) {
    const { connectServer } = await import("../../client/connection.ts");
    const { client, call } = connectServer(server);
    return fn({
      hold: (input) => call(() => client.workspace.hold.mutate(input)),
      release: (input) => call(() => client.workspace.releaseHold.mutate(input)),
    });
  }
  const [{ holdWorkspace }, { releaseLiveHold }] = await Promise.all([
    import("../../server/lineage/hold-workspace.ts"),
    import("../../server/lineage/release-live-hold.ts"),
  ]);
  const { providers } = config;
  return withCatalog(async (db) => {
    const agent = await localAgent(db, flags.agent);
    return fn({
      hold: (input) => holdWorkspace(db, { ...input, agent, providers }),
      release: (input) => releaseLiveHold(db, { ...input, agent }),
    });
  });
}

/** This host's pool, and the worktree `dir` is in it (null when it is no pooled worktree here). */
async function pooledWorktree(dir: string, config: Config) {
  const { poolDirectory, pooledWorktreeName } = await import("../../server/worktrees/pool-directory.ts");
  const name = await pooledWorktreeName(dir, poolDirectory(config.dataDir));
  if (name === null) return null;
  const { openWorktreePool } = await import("../../server/worktrees/pool.ts");
  return { pool: await openWorktreePool({ dir: poolDirectory(config.dataDir), host: config.host }), name };
}

function describeHold(hold: LiveHoldView, pooled: boolean): string {
  const span = hold.idlePersistent ? "14 days" : "1 hour";
  if (hold.status !== "active") {
    return `hold ${hold.id} on ${hold.workspace} ${hold.status === "expired" ? "expired" : `ended (${hold.endReason})`}.`;
  }
  return [
    `holding ${hold.workspace} on ${hold.host} for work context ${hold.workContextId} until ${hold.expiresAt.toISOString()}`,
    `  ${span} (provider ${hold.provider}${hold.idlePersistent ? ", idle-persistent" : ""}); checkpoint ${hold.snapshotId} is kept meanwhile`,
    pooled ? "  the pooled worktree is kept for the work context" : null,
    `  end it early: strata hold --release ${hold.id}`,
  ]
    .filter((line) => line !== null)
    .join("\n");
}

async function takeHold(flags: HoldFlags, config: Config, dirArg: string | undefined): Promise<void> {
  if (!flags.context || !flags.snapshot) {
    throw new CliError("holding needs --context <work context> and --snapshot <the pause's checkpoint>", EXIT.USAGE);
  }
  const dir = await realpath(resolve(dirArg ?? ".")).catch(() => null);
  if (dir === null || !(await stat(dir)).isDirectory()) {
    throw new CliError(`${dirArg ?? "."} is not a directory on this host`, EXIT.USAGE);
  }
  const { context, snapshot } = flags;
  await withHoldCatalog(flags, config, async (catalog) => {
    const hold = await catalog.hold({
      workContextId: context,
      snapshotId: snapshot,
      workspace: dir,
      host: config.host,
    });
    const pooled = await pooledWorktree(dir, config);
    if (pooled) {
      const { holdWorktree } = await import("../../server/worktrees/hold-worktree.ts");
      const kept = await holdWorktree(pooled.pool, pooled.name, {
        owner: context,
        durationMs: Math.max(1, hold.expiresAt.getTime() - Date.now()),
      });
      if (kept === "lost" || kept === "busy") {
        // The catalog must not promise a workspace the pool may hand to another task.
        await catalog.release({ holdId: hold.id });
        const { StrataError } = await import("../../server/domain/errors.ts");
        throw kept === "lost"
          ? new StrataError("POOLED_WORKTREE_LOST", `Another task holds the pooled worktree ${dir}; nothing is held.`, {
              hint: "Resume the work context (strata resume --context ID) to continue in a worktree of its own.",
            })
          : new StrataError("UNAVAILABLE", `The pooled worktree ${dir} stayed locked; nothing is held.`, {
              hint: "Hold it again in a moment.",
            });
      }
    }
    emit(Boolean(flags.json), hold, describeHold(hold, pooled !== null));
  });
}

async function releaseHold(flags: HoldFlags, config: Config, holdId: string): Promise<void> {
  await withHoldCatalog(flags, config, async (catalog) => {
    const hold = await catalog.release({ holdId });
    const pooled = await pooledWorktree(hold.workspace, config).catch(() => null);
    if (pooled) {
      const { releaseWorktreeHold } = await import("../../server/worktrees/hold-worktree.ts");
      await releaseWorktreeHold(pooled.pool, pooled.name, { owner: hold.workContextId });
    }
    emit(Boolean(flags.json), hold, describeHold(hold, pooled !== null));
  });
}

export function registerHold(program: Command): void {
  program
    .command("hold")
    .description(
      "keep a paused task's live checkout (after its checkpoint): acquire and resume continue there while the hold lasts",
    )
    .argument("[dir]", "the checkout to hold (default: the current directory)")
    .option("--context <id>", "the paused work context")
    .option("--snapshot <id>", "the checkpoint the pause appended (the lineage's head)")
    .option("--release <hold>", "end a hold early instead")
    .option("--server <url>", "a Strata server (default $STRATA_SERVER_URL; the token is read from $STRATA_TOKEN)")
    .option("--agent <name>", "with this machine's catalog: the agent to act as (or set STRATA_TOKEN)")
    .option("--json", "print the hold as JSON")
    .action(async (dir: string | undefined, flags: HoldFlags) => {
      const json = Boolean(flags.json);
      if (flags.release !== undefined && (flags.context || flags.snapshot || dir)) {
        throw new CliError("--release takes only the hold's id", EXIT.USAGE);
      }
      // The configuration first: a bad value (STRATA_PROVIDERS…) stops the command naming it.
      const { loadConfig } = await import("../../server/config/config.ts");
      const config = loadConfig();
      await reporting(json, "restore", () =>
        flags.release !== undefined ? releaseHold(flags, config, flags.release) : takeHold(flags, config, dir),
      );
    });
}
