// strata diff FROM TO: what differs between two of the agent's snapshots of one repository, as
// `git diff --stat` then the unified diff (or only the stat, only the names, or the typed answer
// as --json). The catalog is a Strata server (--server or STRATA_SERVER_URL, with STRATA_TOKEN)
// or this machine's database as the agent STRATA_TOKEN or --agent names, as for `strata restore`.
import type { Command } from "commander";
import {
  binaryChangeText,
  unshownContentText,
  type FileDiff,
  type SnapshotDiff,
} from "../../server/domain/snapshot-diff.ts";
import { CliError, EXIT, emit } from "../output.ts";
import { reporting } from "./restore.ts";

interface DiffFlags {
  stat?: boolean;
  nameOnly?: boolean;
  json?: boolean;
  maxFiles?: string;
  maxBytes?: string;
  includeRetired?: boolean;
  server?: string;
  agent?: string;
}

function whole(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`--${name} must be a whole number ≥ 1`, EXIT.USAGE);
  return n;
}

async function fetchDiff(from: string, to: string, flags: DiffFlags): Promise<SnapshotDiff> {
  const input = {
    from,
    to,
    includeRetired: Boolean(flags.includeRetired),
    ...(flags.maxFiles ? { maxFiles: whole(flags.maxFiles, "max-files") } : {}),
    ...(flags.maxBytes ? { maxBytes: whole(flags.maxBytes, "max-bytes") } : {}),
  };
  const { localAgent, serverTarget } = await import("../connection.ts");
  const server = serverTarget(flags.server);
  if (server) {
    const { connectServer } = await import("../../client/connection.ts");
    const { client, call } = connectServer(server);
    return call(() => client.snapshot.diff.query(input));
  }
  const [{ withCatalog }, { diffAgentSnapshots }] = await Promise.all([
    import("../catalog.ts"),
    import("../../server/diff/diff-snapshots.ts"),
  ]);
  return withCatalog(async (db) => diffAgentSnapshots(db, { ...input, agent: await localAgent(db, flags.agent) }));
}

/** What the stat column says of one file: its line counts, a binary's sizes, or why nothing is shown. */
function statCell(f: FileDiff): string {
  const unshown = unshownContentText(f);
  if (unshown !== null) return unshown;
  const bar = `${"+".repeat(Math.min(f.additions, 40))}${"-".repeat(Math.min(f.deletions, 40))}`;
  const mode = f.oldMode !== f.newMode && f.oldMode && f.newMode ? ` (mode ${f.oldMode} -> ${f.newMode})` : "";
  return `${f.additions + f.deletions} ${bar}${mode}`.trimEnd();
}

function statLines(diff: SnapshotDiff): string[] {
  const width = Math.min(60, Math.max(0, ...diff.files.map((f) => f.path.length)));
  const lines = diff.files.map((f) => ` ${f.path.padEnd(width)} | ${statCell(f)}`);
  const s = diff.stat;
  lines.push(
    ` ${s.files} file(s) changed, ${s.additions} insertion(s)(+), ${s.deletions} deletion(s)(-)` +
      ` [${s.added} added, ${s.modified} modified, ${s.deleted} deleted]`,
  );
  return lines;
}

function fileSection(f: FileDiff): string[] {
  const lines = [`diff --git a/${f.path} b/${f.path}`];
  if (f.change === "added" && f.newMode) lines.push(`new file mode ${f.newMode}`);
  if (f.change === "deleted" && f.oldMode) lines.push(`deleted file mode ${f.oldMode}`);
  if (f.change !== "added" && f.change !== "deleted" && f.oldMode !== f.newMode && f.oldMode && f.newMode) {
    lines.push(`old mode ${f.oldMode}`, `new mode ${f.newMode}`);
  }
  if (f.oldOid || f.newOid) {
    const zero = "0".repeat((f.oldOid ?? f.newOid ?? "").length);
    const mode = f.oldMode === f.newMode && f.newMode ? ` ${f.newMode}` : "";
    lines.push(`index ${f.oldOid ?? zero}..${f.newOid ?? zero}${mode}`);
  }
  if (f.content === "binary") {
    lines.push(`Binary files a/${f.path} and b/${f.path} differ (${binaryChangeText(f)})`);
  } else if (f.content === "text" && f.diff) {
    lines.push(f.change === "added" ? "--- /dev/null" : `--- a/${f.path}`);
    lines.push(f.change === "deleted" ? "+++ /dev/null" : `+++ b/${f.path}`);
    lines.push(f.diff.replace(/\n$/, ""));
  }
  if (f.note) lines.push(`# ${f.note}`);
  return lines;
}

/** The human answer: --name-only, --stat, or the stat then every file's unified diff. */
function describeDiff(diff: SnapshotDiff, flags: DiffFlags): string {
  const notes = [
    ...diff.notes,
    ...(diff.cut.files > 0 ? [`${diff.cut.files} more file(s) differ; not listed (--max-files).`] : []),
    ...(diff.denied.length > 0 ? [`Left out as secrets, never compared: ${diff.denied.join(", ")}`] : []),
  ].map((n) => `# ${n}`);
  if (diff.identical) return `Snapshots ${diff.from.id} and ${diff.to.id} hold the same tree.`;
  if (flags.nameOnly) return [...diff.files.map((f) => f.path), ...notes].join("\n");
  const stat = [...statLines(diff), ...notes];
  if (flags.stat) return stat.join("\n");
  return [...stat, "", ...diff.files.flatMap(fileSection)].join("\n");
}

export function registerDiff(program: Command): void {
  program
    .command("diff")
    .argument("<from>", "the snapshot to compare from")
    .argument("<to>", "the snapshot to compare to (of the same repository)")
    .description("compare two snapshots of one repository: the files that differ and a unified diff of their content")
    .option("--stat", "only the summary of changed files, as git diff --stat")
    .option("--name-only", "only the paths of the changed files")
    .option("--json", "print the typed answer as JSON")
    .option("--max-files <n>", "list at most this many files")
    .option("--max-bytes <n>", "show at most this many bytes of diff in all")
    .option("--include-retired", "also compare retired snapshots")
    .option("--server <url>", "a Strata server (default $STRATA_SERVER_URL; the token is read from $STRATA_TOKEN)")
    .option("--agent <name>", "with this machine's catalog: the agent to act as (or set STRATA_TOKEN)")
    .action(async (from: string, to: string, flags: DiffFlags) => {
      const json = Boolean(flags.json);
      await reporting(json, "restore", async () => {
        const diff = await fetchDiff(from, to, flags);
        emit(json, diff, describeDiff(diff, flags));
      });
    });
}
