// What a capture leaves out, decided from one status report: a pure function from the status
// entries (and a few facts about the files) to the changes the private index needs and the
// `omitted` list. Rules, in order: ignored; deny-list; .strata/snapshot-ignore; untracked when
// untracked capture is off; over maxFileBytes; beyond maxSnapshotBytes in total. A tracked file
// that is left out keeps its HEAD content; an untracked one is simply absent.
import type { OmissionReason, OmittedEntry } from "../../domain/capture-manifest.ts";
import type { IndexEntry } from "../../git/commands.ts";
import { deniedPathRule } from "../../domain/deny-list.ts";
import { GITLINK_MODE, ZERO_MODE, type StatusEntry } from "../../git/status.ts";

/** What a capture leaves out unless told otherwise (captureCheckout's options override them). */
export const OMISSION_DEFAULTS = {
  includeUntracked: true,
  maxFileBytes: 50 * 1024 * 1024,
  maxSnapshotBytes: 256 * 1024 * 1024,
} as const;

export interface OmissionRules {
  includeUntracked: boolean;
  maxFileBytes: number;
  maxSnapshotBytes: number;
  /** Paths .strata/snapshot-ignore matches. */
  snapshotIgnored: ReadonlySet<string>;
  /** Untracked directories (ending in "/") that hold a repository of their own. */
  nestedRepositories: ReadonlySet<string>;
  /** Working-tree size of each path (lstat; a symlink counts its target text); null when missing. */
  sizes: ReadonlyMap<string, number | null>;
}

export interface IndexPlan {
  /** Paths to take from the working tree (`update-index --add --remove`). */
  update: string[];
  /** Entries to put back to HEAD's (mode 0: remove). */
  reset: IndexEntry[];
  /** Unmerged paths to put back to HEAD's entry, which status does not print. */
  resetToHeadLookup: string[];
  omitted: OmittedEntry[];
}

const ZERO_OID = /^0+$/;

function isSubmodule(entry: StatusEntry): boolean {
  if (entry.kind !== "changed") return false;
  return entry.submodule.startsWith("S") || entry.modeIndex === GITLINK_MODE || entry.modeWorktree === GITLINK_MODE;
}

/** Why one file is left out regardless of budget, or null. */
function ruleFor(
  path: string,
  untracked: boolean,
  rules: OmissionRules,
): { reason: OmissionReason; detail?: string } | null {
  const denied = deniedPathRule(path);
  if (denied) return { reason: "denied", detail: `matches ${denied}` };
  if (rules.snapshotIgnored.has(path)) return { reason: "snapshot-ignore" };
  if (untracked && !rules.includeUntracked) return { reason: "untracked" };
  const size = rules.sizes.get(path);
  if (size !== undefined && size !== null && size > rules.maxFileBytes) {
    return { reason: "too-large", detail: `${size} bytes > ${rules.maxFileBytes}` };
  }
  return null;
}

interface Candidate {
  path: string;
  size: number;
  /** Whether the private index must be updated from the file (false: it already holds it). */
  update: boolean;
  /** The HEAD entry to fall back to when it is left out; null for an untracked file. */
  head: IndexEntry | null;
  /** Whether the private index differs from HEAD now (so falling back needs a reset). */
  indexDiffers: boolean;
}

function headEntry(entry: StatusEntry): IndexEntry | null {
  if (entry.kind !== "changed") return null;
  if (entry.modeHead === ZERO_MODE || ZERO_OID.test(entry.oidHead)) {
    return { mode: "0", oid: "0".repeat(entry.oidHead.length || 40), path: entry.path };
  }
  return { mode: entry.modeHead, oid: entry.oidHead, path: entry.path };
}

export function planIndexChanges(entries: readonly StatusEntry[], rules: OmissionRules): IndexPlan {
  const plan: IndexPlan = { update: [], reset: [], resetToHeadLookup: [], omitted: [] };
  const candidates: Candidate[] = [];

  for (const entry of entries) {
    if (entry.kind === "ignored") {
      plan.omitted.push({ path: entry.path, reason: "ignored" });
      continue;
    }
    if (entry.kind === "untracked") {
      if (entry.path.endsWith("/")) {
        if (rules.nestedRepositories.has(entry.path))
          plan.omitted.push({ path: entry.path, reason: "nested-repository" });
        continue;
      }
      const rule = ruleFor(entry.path, true, rules);
      if (rule) plan.omitted.push({ path: entry.path, ...rule });
      else
        candidates.push({
          path: entry.path,
          size: rules.sizes.get(entry.path) ?? 0,
          update: true,
          head: null,
          indexDiffers: false,
        });
      continue;
    }
    if (entry.kind === "unmerged") {
      const rule = ruleFor(entry.path, false, rules);
      if (rule) {
        plan.omitted.push({ path: entry.path, ...rule, detail: keptDetail(rule.detail) });
        plan.resetToHeadLookup.push(entry.path);
      } else plan.update.push(entry.path);
      continue;
    }
    // A submodule: its checked-out commit is recorded as it is; what is inside is judged apart.
    if (isSubmodule(entry)) {
      if (entry.y !== ".") plan.update.push(entry.path);
      continue;
    }
    const indexDiffers = entry.x !== ".";
    const head = headEntry(entry);
    const inHead = head !== null && head.mode !== "0";
    const rule = ruleFor(entry.path, false, rules);
    if (rule) {
      plan.omitted.push({
        path: entry.path,
        ...rule,
        detail: inHead ? keptDetail(rule.detail) : rule.detail,
      });
      if (indexDiffers && head) plan.reset.push(head);
      continue;
    }
    candidates.push({
      path: entry.path,
      size: rules.sizes.get(entry.path) ?? 0,
      update: entry.y !== ".",
      head,
      indexDiffers,
    });
  }

  // The snapshot budget: content that differs from HEAD, in path order, until it is spent.
  candidates.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  let total = 0;
  for (const c of candidates) {
    if (total + c.size > rules.maxSnapshotBytes) {
      const inHead = c.head !== null && c.head.mode !== "0";
      plan.omitted.push({
        path: c.path,
        reason: "snapshot-too-large",
        detail: inHead ? keptDetail(`${c.size} bytes past the budget`) : `${c.size} bytes past the budget`,
      });
      if (c.indexDiffers && c.head) plan.reset.push(c.head);
      continue;
    }
    total += c.size;
    if (c.update) plan.update.push(c.path);
  }
  return plan;
}

function keptDetail(detail: string | undefined): string {
  return detail ? `${detail}; HEAD content kept` : "HEAD content kept";
}

/** The paths whose worktree size the rules need: everything that may differ from HEAD. */
export function pathsToMeasure(entries: readonly StatusEntry[]): string[] {
  const paths: string[] = [];
  for (const entry of entries) {
    if (entry.kind === "ignored") continue;
    if (entry.kind === "untracked" && entry.path.endsWith("/")) continue;
    if (isSubmodule(entry)) continue;
    paths.push(entry.path);
  }
  return paths;
}
