// `git status --porcelain=v2 -z`: the one pass over the working tree that a capture makes. It
// tells HEAD and the branch, what differs between HEAD, an index and the files, and which
// paths are untracked or ignored.
import { StrataError } from "../domain/errors.ts";
import { splitNul, type GitCommand } from "./runner.ts";

interface ChangedEntry {
  kind: "changed";
  /** Index against HEAD ('.' when equal). */
  x: string;
  /** Working tree against the index ('.' when equal). */
  y: string;
  /** `N...` for a plain path, `S<c><m><u>` for a submodule. */
  submodule: string;
  modeHead: string;
  modeIndex: string;
  modeWorktree: string;
  oidHead: string;
  oidIndex: string;
  path: string;
}

interface UnmergedEntry {
  kind: "unmerged";
  x: string;
  y: string;
  submodule: string;
  path: string;
}

interface UntrackedEntry {
  kind: "untracked";
  /** A directory (only a nested repository, with --untracked-files=all) ends with "/". */
  path: string;
}

interface IgnoredEntry {
  kind: "ignored";
  path: string;
}

export type StatusEntry = ChangedEntry | UnmergedEntry | UntrackedEntry | IgnoredEntry;

export interface StatusReport {
  /** HEAD's commit, or null on an unborn branch. */
  head: string | null;
  /** The checked-out branch, or null when HEAD is detached. */
  branch: string | null;
  entries: StatusEntry[];
  /** Directories git could not open (it only warns about them). */
  unreadable: string[];
}

export interface StatusOptions {
  untracked: "all" | "normal" | "no";
  ignored: boolean;
  /** `dirty`: compare submodule commits only, never look inside them. */
  ignoreSubmodules: "dirty" | "none";
  /** Run against this index instead of the repository's own. */
  indexFile?: string;
  /** Allow git to write refreshed stat data back (only ever for a private index). */
  writeRefreshedIndex?: boolean;
}

export function statusCommand(opts: StatusOptions): GitCommand<StatusReport> {
  const args = [
    "-c",
    "core.splitIndex=false",
    "-c",
    "status.renames=false",
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--no-ahead-behind",
    "--no-renames",
    `--untracked-files=${opts.untracked}`,
    `--ignore-submodules=${opts.ignoreSubmodules}`,
  ];
  if (opts.ignored) args.push("--ignored=matching");
  const env: Record<string, string> = {};
  if (opts.indexFile !== undefined) env.GIT_INDEX_FILE = opts.indexFile;
  if (opts.writeRefreshedIndex) env.GIT_OPTIONAL_LOCKS = "1";
  return {
    args,
    env,
    parse: (out) => ({ ...parseStatus(out.stdout), unreadable: parseUnreadableWarnings(out.stderr) }),
  };
}

function fields(record: string, count: number): { parts: string[]; rest: string } {
  const parts: string[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const space = record.indexOf(" ", at);
    if (space < 0) throw malformed(record);
    parts.push(record.slice(at, space));
    at = space + 1;
  }
  return { parts, rest: record.slice(at) };
}

function malformed(record: string): StrataError {
  return new StrataError("GIT_FAILED", "git status printed a line this version cannot read.", {
    data: { subcommand: "status", line: record.slice(0, 200) },
  });
}

export function parseStatus(stdout: Buffer): Omit<StatusReport, "unreadable"> {
  const records = splitNul(stdout);
  let head: string | null = null;
  let branch: string | null = null;
  const entries: StatusEntry[] = [];
  for (let i = 0; i < records.length; i++) {
    const record = records[i] ?? "";
    if (record.startsWith("# ")) {
      const [, key, ...value] = record.split(" ");
      const text = value.join(" ");
      if (key === "branch.oid") head = text === "(initial)" ? null : text;
      if (key === "branch.head") branch = text === "(detached)" ? null : text;
      continue;
    }
    const type = record[0];
    if (type === "1" || type === "2") {
      // A "2" (rename or copy) record has a score field more and its original path after it;
      // renames are switched off, but such a record is still read whole.
      const { parts, rest } = fields(record, type === "1" ? 8 : 9);
      const [, xy = "", sub = "", mH = "", mI = "", mW = "", hH = "", hI = ""] = parts;
      entries.push({
        kind: "changed",
        x: xy[0] ?? ".",
        y: xy[1] ?? ".",
        submodule: sub,
        modeHead: mH,
        modeIndex: mI,
        modeWorktree: mW,
        oidHead: hH,
        oidIndex: hI,
        path: rest,
      });
      if (type === "2") i++;
    } else if (type === "u") {
      const { parts, rest } = fields(record, 10);
      const [, xy = "", sub = ""] = parts;
      entries.push({ kind: "unmerged", x: xy[0] ?? "U", y: xy[1] ?? "U", submodule: sub, path: rest });
    } else if (type === "?") {
      entries.push({ kind: "untracked", path: record.slice(2) });
    } else if (type === "!") {
      entries.push({ kind: "ignored", path: record.slice(2) });
    } else {
      throw malformed(record);
    }
  }
  return { head, branch, entries };
}

/** status only warns (exit 0) about directories it cannot open; a capture must not. */
export function parseUnreadableWarnings(stderr: string): string[] {
  const out: string[] = [];
  const re = /could not open directory '(.*?)': (?:Permission denied|Too many levels of symbolic links)/g;
  for (let m = re.exec(stderr); m; m = re.exec(stderr)) out.push(m[1] ?? "");
  return out;
}

export const ZERO_MODE = "000000";
export const GITLINK_MODE = "160000";
