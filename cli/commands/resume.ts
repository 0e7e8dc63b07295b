// strata resume --context ID | --snapshot ID: resume a task on this host. The catalog (a Strata
// server with STRATA_TOKEN, or this machine's database as the agent STRATA_TOKEN or --agent
// names) says which checkouts the task recorded (workspace.resume); each one on this host that is
// still its snapshot continues in place, nothing written, and any other is restored into this
// host's pool (STRATA_DATA_DIR/worktrees), reusing an idle clean worktree when there is one. One
// line per checkout. The user's own checkout is only ever read. A checkout the paused task held
// live (strata hold) is continued in, and its hold ends (resumed).
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import type { ResumePlan } from "../../server/domain/resume-plan.ts";
import type { PlanResumeInput } from "../../server/restore/plan-resume.ts";
import type { RestorePort } from "../../server/restore/restore-snapshot.ts";
import type { ResumedCheckout, ResumeResult } from "../../server/worktrees/resume-checkouts.ts";
import type { ResumeTaskResult } from "../../server/worktrees/resume-task.ts";
import { withCatalog } from "../catalog.ts";
import { CliError, EXIT, emit, progress } from "../output.ts";
import { RESTORE_EXIT, reporting, timingLine } from "./restore.ts";

interface ResumeFlags {
  context?: string;
  snapshot?: string;
  server?: string;
  agent?: string;
  stateDir?: string;
  maxIdle?: string;
  holdPid?: string;
  json?: boolean;
}

type PlanSource = (input: PlanResumeInput) => Promise<ResumePlan>;
/** Ends a live hold the resume continued in (workspace.releaseHold, reason resumed). */
type EndHold = (holdId: string) => Promise<void>;

/** Runs fn with the catalog the flags name, as `strata restore` does, plus its resume plans. */
async function withResumeCatalog<T>(
  flags: ResumeFlags,
  fn: (port: RestorePort, plan: PlanSource, endHold: EndHold) => Promise<T>,
): Promise<T> {
  const { localAgent, serverTarget } = await import("../connection.ts");
  const server = serverTarget(flags.server);
  if (server) {
    const [{ remoteRestorePort }, { connectServer }] = await Promise.all([
      import("../../client/restore-port.ts"),
      import("../../client/connection.ts"),
    ]);
    const { client, call } = connectServer(server);
    return fn(
      remoteRestorePort(server),
      (input) => call(() => client.workspace.resume.query(input)),
      async (holdId) => {
        await call(() => client.workspace.releaseHold.mutate({ holdId, reason: "resumed" }));
      },
    );
  }
  const [{ localRestorePort }, { planResume }, { releaseLiveHold }] = await Promise.all([
    import("../../server/restore/restore-snapshot.ts"),
    import("../../server/restore/plan-resume.ts"),
    import("../../server/lineage/release-live-hold.ts"),
  ]);
  return withCatalog(async (db) => {
    const agent = await localAgent(db, flags.agent);
    return fn(
      localRestorePort(db, agent),
      (input) => planResume(db, { ...input, agent }),
      async (holdId) => {
        await releaseLiveHold(db, { holdId, reason: "resumed", agent });
      },
    );
  });
}

function positive(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`--${flag} must be a positive integer`, EXIT.USAGE);
  return n;
}

function short(id: string): string {
  return id.slice(0, 8);
}

/** One line per checkout (and its warnings and timings when restored). */
export function describeCheckout(c: ResumedCheckout): string {
  const recorded = c.recorded.path ?? `snapshot ${short(c.snapshotId)}`;
  const how = c.worktree
    ? c.worktree.origin === "reused"
      ? `, reused idle worktree ${c.worktree.name}`
      : c.worktree.origin === "retaken"
        ? `, its worktree ${c.worktree.name}`
        : `, new worktree ${c.worktree.name}`
    : "";
  const line =
    c.outcome === "in-place"
      ? `continues in place: ${c.path} (${c.reason})`
      : c.outcome === "unrestored"
        ? `not restored: ${recorded} (${c.reason}); ${c.result?.missing.causeMessage ?? "nothing could be restored"}`
        : `${c.outcome === "degraded" ? "restored partly" : "restored"}: ${recorded} → ${c.path} (${c.reason}${how})`;
  const lines = [line];
  for (const w of c.result?.warnings ?? []) lines.push(`  warning (${w.kind}): ${w.message}`);
  if (c.result?.status === "degraded" && c.result.missing.nextStep) lines.push(`  next: ${c.result.missing.nextStep}`);
  if (c.outcome !== "in-place" && c.result) lines.push(`  ${timingLine(c.result)}`);
  if (c.evicted.length > 0) lines.push(`  removed idle worktrees ${c.evicted.join(", ")}`);
  return lines.join("\n");
}

function exitFor(result: ResumeResult): number {
  const outcomes = result.checkouts.map((c) => c.outcome);
  if (outcomes.includes("unrestored")) return RESTORE_EXIT.UNRESTORED;
  return outcomes.includes("degraded") ? RESTORE_EXIT.DEGRADED : EXIT.OK;
}

async function resume(flags: ResumeFlags): Promise<ResumeTaskResult> {
  const [{ loadConfig }, { resumeTask }, { processOnThisMachine }, take] = await Promise.all([
    import("../../server/config/config.ts"),
    import("../../server/worktrees/resume-task.ts"),
    import("../../server/worktrees/process-identity.ts"),
    import("../../server/worktrees/take-worktree.ts"),
  ]);
  const config = loadConfig();
  const holdPid = positive(flags.holdPid, "hold-pid");
  const result = await withResumeCatalog(flags, async (port, plan, endHold) =>
    resumeTask(
      { port, plan, endHold },
      {
        target: flags.context ? { workContextId: flags.context } : { snapshotId: flags.snapshot! },
        dataDir: config.dataDir,
        host: config.host,
        stateDir: resolve(flags.stateDir ?? join(homedir(), ".strata")),
        maxIdlePerRepository: positive(flags.maxIdle, "max-idle"),
        holder: holdPid === undefined ? undefined : await processOnThisMachine(holdPid, config.host),
        onProgress: (event) => progress(`${event.phase}: ${event.message}`),
      },
    ),
  );
  for (const held of result.held) {
    if (holdPid === undefined) await take.releaseWorktree(held);
    else held.lease.stop();
  }
  return result;
}

export function registerResume(program: Command): void {
  program
    .command("resume")
    .description(
      "resume a task on this host: each recorded checkout continues in place when it is still its snapshot, else is restored into a pooled worktree",
    )
    .option("--context <id>", "the work context to resume (every checkout it recorded)")
    .option("--snapshot <id>", "resume one snapshot")
    .option("--server <url>", "a Strata server (default $STRATA_SERVER_URL; the token is read from $STRATA_TOKEN)")
    .option("--agent <name>", "with this machine's catalog: the agent to act as (or set STRATA_TOKEN)")
    .option("--state-dir <dir>", "this host's restore state (crash records)")
    .option("--max-idle <n>", "idle worktrees of one repository the pool keeps (default 4)")
    .option("--hold-pid <pid>", "keep the pooled worktrees held while this process of this machine runs")
    .option("--json", "print the result as JSON")
    .action(async (flags: ResumeFlags) => {
      const json = Boolean(flags.json);
      if (Boolean(flags.context) === Boolean(flags.snapshot)) {
        throw new CliError(
          "choose one: --context <id> (every checkout of a work context) or --snapshot <id>",
          EXIT.USAGE,
        );
      }
      await reporting(json, "restore", async () => {
        const result = await resume(flags);
        progress("");
        const { held: _held, ...shown } = result;
        const ended = result.liveHoldsEnded.map((id) => `ended live hold ${id} (resumed)`);
        emit(json, shown, [...result.checkouts.map(describeCheckout), ...ended].join("\n"));
        process.exitCode = exitFor(result);
      });
    });
}
