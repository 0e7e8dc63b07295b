// strata verify DIR --snapshot ID: whether a checkout on this host is still exactly what a
// snapshot recorded. The snapshot is read as `strata restore` reads it (a Strata server with
// STRATA_TOKEN, or this machine's catalog as the agent STRATA_TOKEN or --agent names); the
// checkout is only read.
import { resolve } from "node:path";
import type { Command } from "commander";
import { describeDrift, type WorktreeVerification } from "../../server/worktrees/worktree-verification.ts";
import { EXIT, emit } from "../output.ts";
import { reporting, withRestorePort } from "./restore.ts";

/**
 * Exit codes of `strata verify`: 0 when the checkout matches; a failure to verify uses the
 * codes of `strata restore` (14 no such snapshot, 12 a record that fails the checks, …).
 */
export const VERIFY_EXIT = {
  /** The checkout drifted from the snapshot: see the paths (or `drift`, `headMoved` with --json). */
  DRIFT: 20,
} as const;

/** How many drifted paths the human output lists. */
const LISTED_PATHS = 50;

interface VerifyFlags {
  snapshot: string;
  server?: string;
  agent?: string;
  json?: boolean;
}

function short(oid: string | null): string {
  return oid ? oid.slice(0, 12) : "none";
}

function describeVerification(v: WorktreeVerification): string {
  if (v.matches) {
    return `${v.root} matches snapshot ${v.snapshotId} (HEAD ${short(v.head.current)}, tree ${short(v.tree)}).`;
  }
  const lines = [`${v.root} drifted from snapshot ${v.snapshotId}: ${describeDrift(v)}.`];
  const listed = v.drift.paths.slice(0, LISTED_PATHS);
  for (const { change, path } of listed) lines.push(`  ${change.padEnd(8)} ${path}`);
  if (v.drift.total > listed.length) lines.push(`  … and ${v.drift.total - listed.length} more`);
  if (v.headOnlyAdvanced) lines.push("Only HEAD moved forward over the recorded files: work may continue here.");
  return lines.join("\n");
}

async function verify(dir: string, flags: VerifyFlags): Promise<WorktreeVerification> {
  const { checkSnapshotWorktree } = await import("../../server/worktrees/verify-worktree.ts");
  return withRestorePort(flags, (port) =>
    checkSnapshotWorktree(port, { snapshotId: flags.snapshot, dir: resolve(dir) }),
  );
}

export function registerVerify(program: Command): void {
  program
    .command("verify")
    .argument("<dir>", "the checkout to check")
    .description("check that a checkout is exactly what a snapshot recorded: its HEAD and every file of its tree")
    .requiredOption("--snapshot <id>", "the snapshot the checkout should match")
    .option("--server <url>", "a Strata server (default $STRATA_SERVER_URL; the token is read from $STRATA_TOKEN)")
    .option("--agent <name>", "with this machine's catalog: the agent to act as (or set STRATA_TOKEN)")
    .option("--json", "print the result as JSON")
    .action(async (dir: string, flags: VerifyFlags) => {
      const json = Boolean(flags.json);
      await reporting(json, "restore", async () => {
        const verification = await verify(dir, flags);
        emit(json, verification, describeVerification(verification));
        process.exitCode = verification.matches ? EXIT.OK : VERIFY_EXIT.DRIFT;
      });
    });
}
