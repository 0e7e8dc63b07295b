// strata restore / acquire / export / import: restoring snapshots into directories, the
// workspace decision and its restore in one step, and moving a snapshot as a file.
//
// The catalog is a Strata server (--server URL or STRATA_SERVER_URL, with STRATA_TOKEN) or this
// machine's database (DATABASE_URL / STRATA_DATA_DIR), acting as the agent STRATA_TOKEN or
// --agent names. Exit codes tell the outcomes apart (RESTORE_EXIT).
import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { homedir, hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { CacheRestoreResult } from "../../server/caches/cache-dependencies.ts";
import { pipeline } from "node:stream/promises";
import type { Writable } from "node:stream";
import type { Command } from "commander";
import { isStrataError, StrataError } from "../../server/domain/errors.ts";
import { RESTORE_PHASES, type RestoreResult } from "../../server/domain/restore-result.ts";
import type { RestoreProgress } from "../../server/restore/engine/restore.ts";
import type { AcquireAndRestoreResult, RestorePort } from "../../server/restore/restore-snapshot.ts";
import { withCatalog } from "../catalog.ts";
import { CliError, EXIT, emit, progress } from "../output.ts";

// What the commands run, loaded when one runs.
const restoring = () => import("../../server/restore/restore-snapshot.ts");
const connection = () => import("../connection.ts");

/** Exit codes of these commands, beyond the shared ones (0 ok, 1 failure, 2 usage, 3 config). */
export const RESTORE_EXIT = {
  /** Restored only partly: see `missing` (--json) for what and why. */
  DEGRADED: 10,
  /** Nothing could be restored; nothing was written. */
  UNRESTORED: 11,
  /** The snapshot record failed the security checks. */
  INVALID_SNAPSHOT: 12,
  /** The target directory is not new or empty. */
  UNSAFE_TARGET: 13,
  /** No such snapshot for this agent. */
  NOT_FOUND: 14,
  /** git cannot be run on this host. */
  GIT_UNAVAILABLE: 15,
  /** The server could not be reached or refused the token. */
  UNAVAILABLE: 16,
  /** An import file is damaged or not an export. */
  BAD_FILE: 17,
} as const;

/** The exit code of a typed failure (import: a damaged file is 17, an unsafe record 12). */
export function exitCodeFor(error: StrataError, context: "restore" | "import" = "restore"): number {
  switch (error.code) {
    case "INVALID_SNAPSHOT":
      return RESTORE_EXIT.INVALID_SNAPSHOT;
    case "UNSAFE_TARGET":
      return RESTORE_EXIT.UNSAFE_TARGET;
    case "NOT_FOUND":
      return RESTORE_EXIT.NOT_FOUND;
    case "GIT_UNAVAILABLE":
      return RESTORE_EXIT.GIT_UNAVAILABLE;
    case "UNAVAILABLE":
    case "UNAUTHORIZED":
      return RESTORE_EXIT.UNAVAILABLE;
    case "BLOB_CORRUPT":
      // Import: a blob of the file is not what it says. Restore: the snapshot's manifest itself
      // cannot be read, so nothing can be restored.
      return context === "import" ? RESTORE_EXIT.BAD_FILE : RESTORE_EXIT.UNRESTORED;
    case "BLOB_MISSING":
      // Import: only collection taking a blob mid-import (retryable), not the file's fault.
      return context === "import" ? EXIT.FAILURE : RESTORE_EXIT.UNRESTORED;
    case "INVALID_INPUT":
      return context === "import" ? RESTORE_EXIT.BAD_FILE : EXIT.USAGE;
    default:
      return EXIT.FAILURE;
  }
}

/**
 * Prints a failure as a typed error (JSON on stdout with --json) and sets the exit code. An
 * error that is not a StrataError is a bug or the database failing: it is reported as INTERNAL
 * (exit 1) without its internal text, which goes to stderr only with STRATA_DEBUG set.
 */
/** Runs fn; a typed failure is printed (JSON with --json) and sets the restore exit code for it. */
export async function reporting(json: boolean, context: "restore" | "import", fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (caught) {
    if (caught instanceof CliError) throw caught;
    if (!isStrataError(caught) && process.env.STRATA_DEBUG) process.stderr.write(`${String(caught)}\n`);
    const error = isStrataError(caught)
      ? caught
      : new StrataError("INTERNAL", "The command failed unexpectedly.", {
          hint: "Run it again; if it keeps failing, run it with STRATA_DEBUG=1 and report the output.",
        });
    progress("");
    if (json) emit(true, { error: error.toJSON() }, "");
    else
      process.stderr.write(`strata: ${error.message} [${error.code}]\n${error.hint ? `  hint: ${error.hint}\n` : ""}`);
    process.exitCode = exitCodeFor(error, context);
  }
}

// --- the catalog ------------------------------------------------------------------------------------

interface ConnectionFlags {
  server?: string;
  agent?: string;
}

/** Runs fn with the catalog the flags name: a server over HTTP, or this machine's database. */
export async function withRestorePort<T>(flags: ConnectionFlags, fn: (port: RestorePort) => Promise<T>): Promise<T> {
  const { localAgent, serverTarget } = await connection();
  const server = serverTarget(flags.server);
  if (server) {
    const { remoteRestorePort } = await import("../../client/restore-port.ts");
    return fn(remoteRestorePort(server));
  }
  const [{ localRestorePort }, { loadConfig }] = await Promise.all([
    restoring(),
    import("../../server/config/config.ts"),
  ]);
  const { providers } = loadConfig();
  return withCatalog(async (db) => fn(localRestorePort(db, await localAgent(db, flags.agent), providers)));
}

function defaultStateDir(): string {
  return join(homedir(), ".strata");
}

/**
 * The object store a restore borrows: the repository given by hand, none with
 * --no-object-store, else this host's shared store of the snapshot's repository (under
 * STRATA_DATA_DIR; used when the snapshot records a remote).
 */
async function objectStoreOptions(flag: string | false | undefined) {
  if (flag === false) return { objectStore: null, objectStores: null };
  if (flag) return { objectStore: resolve(flag), objectStores: null };
  const [{ loadConfig }, { objectStoresDirectory }] = await Promise.all([
    import("../../server/config/config.ts"),
    import("../../server/restore/engine/host-object-store.ts"),
  ]);
  return { objectStore: null, objectStores: objectStoresDirectory(loadConfig().dataDir) };
}

const OBJECT_STORE_HELP =
  "borrow this repository's objects instead of this host's shared store of the snapshot's repository";
const NO_OBJECT_STORE_HELP = "borrow no object store (fetch into the restored repository itself)";

function onProgress(json: boolean) {
  return (event: RestoreProgress) => {
    if (!json) progress(`${event.phase}: ${event.message}`);
  };
}

// --- what people read ---------------------------------------------------------------------------------

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

export function timingLine(result: RestoreResult): string {
  const t = result.timings;
  if (!t) return "";
  return RESTORE_PHASES.map(
    (phase) =>
      `${phase} ${seconds(t[phase])}${phase === "fetch" && t.commitsFrom !== "none" ? ` (${t.commitsFrom})` : ""}`,
  ).join(" · ");
}

function short(oid: string | null): string {
  return oid ? oid.slice(0, 12) : "none";
}

function listed(items: readonly string[], max = 8): string {
  return items.length <= max ? items.join(", ") : `${items.slice(0, max).join(", ")} and ${items.length - max} more`;
}

export function describeResult(result: RestoreResult, path: string | null): string {
  const lines: string[] = [];
  const h = result.holds;
  if (result.status === "restored") {
    lines.push(`Restored snapshot ${result.snapshotId} into ${path} (tree ${short(h.tree)}, HEAD ${short(h.head)}).`);
  } else if (result.status === "degraded") {
    const where =
      h.stage === "closest-commit"
        ? `commit ${short(h.head)} (${h.basis}) instead of the recorded ${short(result.recorded.head)}`
        : `the recorded HEAD ${short(h.head)} with ${h.appliedChangeSets.length} of ${h.appliedChangeSets.length + result.missing.changeSets.length} change set(s)`;
    lines.push(`Restored snapshot ${result.snapshotId} only partly into ${path}: ${where}.`);
  } else {
    lines.push(`Nothing of snapshot ${result.snapshotId} could be restored; nothing was written.`);
  }
  const m = result.missing;
  if (result.status !== "restored") {
    const missing = [
      m.commits.length > 0 ? `${m.commits.length} commit(s) (${listed(m.commits.map((c) => short(c)))})` : null,
      m.changeSets.length > 0 ? `${m.changeSets.length} change set(s)` : null,
      m.paths.length > 0 ? `files ${listed(m.paths)}${m.pathsComplete ? "" : " (and possibly others)"}` : null,
    ].filter(Boolean);
    if (missing.length > 0) lines.push(`  Not restored: ${missing.join("; ")}.`);
    if (m.cause) lines.push(`  Cause: ${m.cause}${m.causeMessage ? ` — ${m.causeMessage}` : ""}`);
    if (m.nextStep) lines.push(`  Next: ${m.nextStep}`);
  }
  for (const warning of result.warnings) lines.push(`  warning (${warning.kind}): ${warning.message}`);
  const timing = timingLine(result);
  if (timing) lines.push(`  ${timing}`);
  return lines.join("\n");
}

/** One line on the dependency cache a restore added (or why it added none). */
export function describeDependencies(deps: CacheRestoreResult | null | undefined): string | null {
  if (!deps) return null;
  if (deps.status === "restored" || deps.status === "degraded") {
    const missing = deps.missing.length > 0 ? `, without ${listed(deps.missing)} (content missing)` : "";
    return `  Dependencies: ${deps.paths.join(", ")} added from the cache of envHash ${deps.envHash.slice(0, 12)}${missing}.`;
  }
  if (deps.status === "present") return `  Dependencies: kept what the checkout has (${deps.reason}).`;
  if (deps.status === "failed") return `  Dependencies: not added (${deps.reason}); install them.`;
  if (deps.status === "none") return `  Dependencies: none cached (${deps.reason}); install them.`;
  return null;
}

function exitForResult(result: RestoreResult): number {
  if (result.status === "restored") return EXIT.OK;
  return result.status === "degraded" ? RESTORE_EXIT.DEGRADED : RESTORE_EXIT.UNRESTORED;
}

function describeAcquire(done: AcquireAndRestoreResult, into: string): string {
  const lines = [`Work context ${done.workContextId}.`];
  for (const step of done.steps) {
    const what = step.plan.snapshot ? `${step.plan.rung} snapshot ${step.plan.snapshot.id}` : "cold start";
    if (step.plan.notice) lines.push(`  notice: ${step.plan.notice}`);
    if (step.result) {
      lines.push(
        `${what}:`,
        ...describeResult(step.result, done.path ?? into)
          .split("\n")
          .map((l) => `  ${l}`),
      );
      const deps = describeDependencies(step.dependencies);
      if (deps) lines.push(`  ${deps}`);
    } else if (step.error) lines.push(`${what}: refused (${step.error.code}): ${step.error.message}`);
    else if (step.plan.live)
      lines.push(`${what}: continues in the held workspace ${step.plan.live.workspace}, nothing restored.`);
    else lines.push(`${what}: nothing to restore; clone the repository into ${into} and check out the canonical ref.`);
  }
  if (done.steps.at(-1)?.plan.mustInspectExternalState) {
    lines.push("Inspect durable external state before repeating writes: a snapshot proves nothing about effects.");
  }
  return lines.join("\n");
}

// --- commands -----------------------------------------------------------------------------------------

interface RestoreFlags extends ConnectionFlags {
  into: string;
  /** A repository to borrow by hand, or false (--no-object-store): none at all. */
  objectStore?: string | false;
  exact?: boolean;
  stateDir?: string;
  /** --no-deps: do not add the dependency cache of the snapshot's envHash. */
  deps: boolean;
  json?: boolean;
}

interface AcquireFlags extends ConnectionFlags {
  repository: string;
  backend: string;
  baseImage: string;
  ref: string;
  workContext?: string;
  into: string;
  host?: string;
  objectStore?: string | false;
  stateDir?: string;
  deps: boolean;
  json?: boolean;
}

function connectionOptions(command: Command): Command {
  return command
    .option("--server <url>", "a Strata server (default $STRATA_SERVER_URL; the token is read from $STRATA_TOKEN)")
    .option("--agent <name>", "with this machine's catalog: the agent to act as (or set STRATA_TOKEN)");
}

export function registerRestore(program: Command): void {
  connectionOptions(
    program
      .command("restore")
      .argument("<snapshot>", "the snapshot id")
      .description("restore a snapshot into a new or empty directory, verified to its recorded tree")
      .requiredOption("--into <dir>", "the directory to create (or an empty one)")
      .option("--object-store <repo>", OBJECT_STORE_HELP)
      .option("--no-object-store", NO_OBJECT_STORE_HELP)
      .option("--exact", "fail instead of restoring less than the snapshot (no degraded ladder)")
      .option("--state-dir <dir>", "this host's restore state (crash records)", defaultStateDir())
      .option("--no-deps", "do not add the dependency cache of the snapshot's envHash (node_modules…)")
      .option("--json", "print the result as JSON"),
  ).action(async (snapshotId: string, flags: RestoreFlags) => {
    const json = Boolean(flags.json);
    await reporting(json, "restore", async () => {
      const { restoreSnapshot } = await restoring();
      const stores = await objectStoreOptions(flags.objectStore);
      const report = await withRestorePort(flags, (port) =>
        restoreSnapshot(port, {
          snapshotId,
          into: resolve(flags.into),
          ...stores,
          exactOnly: Boolean(flags.exact),
          stateDir: resolve(flags.stateDir ?? defaultStateDir()),
          hold: true,
          dependencies: flags.deps,
          onProgress: onProgress(json),
        }),
      );
      progress("");
      emit(
        json,
        { snapshotId: report.snapshot.id, path: report.path, result: report.result, dependencies: report.dependencies },
        [describeResult(report.result, report.path), describeDependencies(report.dependencies)]
          .filter(Boolean)
          .join("\n"),
      );
      process.exitCode = exitForResult(report.result);
    });
  });

  connectionOptions(
    program
      .command("acquire")
      .description(
        "decide where a workspace starts (its checkpoint, the baseline, or cold) and restore it, in one step",
      )
      .requiredOption("--repository <identity>", "the repository's credential-free identity (github.com/acme/app)")
      .requiredOption("--backend <kind>", "the backend kind")
      .requiredOption("--base-image <id>", "the immutable base image")
      .option("--ref <branch>", "the canonical branch", "main")
      .option("--work-context <id>", "the durable work identity to resume (omit for new work)")
      .requiredOption("--into <dir>", "the workspace directory to create (or an empty one)")
      .option("--host <name>", "this worker host's name", hostname())
      .option("--object-store <repo>", OBJECT_STORE_HELP)
      .option("--no-object-store", NO_OBJECT_STORE_HELP)
      .option("--state-dir <dir>", "this host's restore state (crash records)", defaultStateDir())
      .option("--no-deps", "do not add the dependency cache of the snapshot's envHash (node_modules…)")
      .option("--json", "print the result as JSON"),
  ).action(async (flags: AcquireFlags) => {
    const json = Boolean(flags.json);
    await reporting(json, "restore", async () => {
      const into = resolve(flags.into);
      const { acquireAndRestore } = await restoring();
      const { continuesLive } = await import("../../server/worktrees/continue-live.ts");
      const stores = await objectStoreOptions(flags.objectStore);
      const done = await withRestorePort(flags, (port) =>
        acquireAndRestore(port, {
          acquire: {
            repository: { identity: flags.repository },
            backendKind: flags.backend,
            baseImage: flags.baseImage,
            canonicalRef: flags.ref,
            workContextId: flags.workContext,
          },
          into,
          host: flags.host ?? hostname(),
          ...stores,
          stateDir: resolve(flags.stateDir ?? defaultStateDir()),
          dependencies: flags.deps,
          onProgress: onProgress(json),
          continueLive: (plan) => continuesLive(port, plan),
        }),
      );
      progress("");
      emit(json, done, describeAcquire(done, into));
      const last = done.steps.at(-1);
      process.exitCode = !last
        ? RESTORE_EXIT.UNRESTORED
        : last.result
          ? exitForResult(last.result)
          : last.reported === "restored"
            ? EXIT.OK
            : RESTORE_EXIT.UNRESTORED;
    });
  });

  program
    .command("export")
    .argument("<snapshot>", "the snapshot id")
    .description("write a snapshot with its blobs inline to a .strata file (stdout by default)")
    .option("-o, --output <file>", "write to this file instead of stdout")
    .option("--agent <name>", "the agent to act as (or set STRATA_TOKEN)")
    .action(async (snapshotId: string, flags: { output?: string; agent?: string }) => {
      await reporting(false, "restore", async () => {
        if (!flags.output && process.stdout.isTTY) {
          throw new CliError(
            "Refusing to write a binary export to a terminal: redirect it or use -o FILE.",
            EXIT.USAGE,
          );
        }
        const [{ exportSnapshot }, { localAgent }] = await Promise.all([
          import("../../server/transfer/snapshot-export.ts"),
          connection(),
        ]);
        const out: Writable = flags.output ? createWriteStream(resolve(flags.output), { flags: "wx" }) : process.stdout;
        const summary = await withCatalog(async (db) =>
          exportSnapshot(db, { agent: await localAgent(db, flags.agent), snapshotId, out }),
        );
        if (flags.output)
          await new Promise<void>((done, fail) => out.end((e?: Error | null) => (e ? fail(e) : done())));
        process.stderr.write(
          `Exported snapshot ${summary.snapshotId}: ${summary.blobs} blob(s), ${summary.bytes} bytes.\n`,
        );
      });
    });

  program
    .command("import")
    .argument("<file>", "a .strata file from strata export ('-' reads stdin)")
    .description("check every blob of an export against its hash, then store the snapshot in this catalog")
    .option("--agent <name>", "the agent to own the snapshot (or set STRATA_TOKEN)")
    .option("--json", "print the result as JSON")
    .action(async (file: string, flags: { agent?: string; json?: boolean }) => {
      const json = Boolean(flags.json);
      await reporting(json, "import", async () => {
        let path = resolve(file);
        let spool: string | null = null;
        if (file === "-") {
          // Import reads the file twice (check everything, then store), so stdin is spooled first.
          spool = await mkdtemp(join(tmpdir(), "strata-import-"));
          path = join(spool, "stdin.strata");
          await pipeline(process.stdin, createWriteStream(path));
        }
        try {
          const [{ importSnapshotFile }, { localAgent }] = await Promise.all([
            import("../../server/transfer/snapshot-import.ts"),
            connection(),
          ]);
          const result = await withCatalog(async (db) =>
            importSnapshotFile(db, { agent: await localAgent(db, flags.agent), file: path }),
          );
          emit(
            json,
            result,
            `Imported snapshot ${result.snapshotId}${result.snapshotId !== result.exportedId ? ` (exported as ${result.exportedId})` : ""}` +
              ` as ${result.state}: ${result.blobs.count} blob(s) checked, ${result.blobs.new} new.` +
              (result.created ? "" : " It was already here."),
          );
        } finally {
          if (spool) await rm(spool, { recursive: true, force: true });
        }
      });
    });
}
