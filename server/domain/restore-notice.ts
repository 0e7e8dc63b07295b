// What support reads about a restore that came back degraded or unrestored: what the worktree
// holds, what is missing, why, and what a person should do next. Built from the restore row's
// `result` JSON, which workers write; older rows carry only a list of missing entries, newer
// ones the full ladder result, so every field is read tolerantly and nothing is assumed.

interface RestoreHolds {
  /** The ladder stage the worktree reached (e.g. exact, changes, closest-commit, nothing). */
  stage: string | null;
  head: string | null;
  tree: string | null;
  /** What the head was chosen from (recorded head, pushed base, earlier snapshot, branch tip). */
  basis: string | null;
}

interface RestoreMissing {
  commits: string[];
  /** Change sets (patches of the chain, layers) that were not applied. */
  changeSets: string[];
  paths: string[];
  /** Anything else the worker named (e.g. "bundle"). */
  other: string[];
}

export interface RestoreNotice {
  holds: RestoreHolds;
  /** What the snapshot recorded, when the worker said. */
  recorded: { head: string | null; tree: string | null; branch: string | null } | null;
  missing: RestoreMissing;
  /** The failure that sent the restore down the ladder (an error code), when known. */
  cause: string | null;
  causeMessage: string | null;
  /** Things a person should know about the worktree even where nothing is missing. */
  warnings: { kind: string; message: string }[];
  nextStep: string;
  /** One sentence for the queue. */
  summary: string;
}

type Json = unknown;

function record(value: Json): Record<string, Json> | null {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, Json>) : null;
}

function text(value: Json): string | null {
  if (typeof value === "string" && value.trim() !== "") return value.trim();
  if (typeof value === "number") return String(value);
  return null;
}

function first(obj: Record<string, Json> | null, keys: readonly string[]): Json {
  if (!obj) return undefined;
  for (const key of keys) if (obj[key] !== undefined && obj[key] !== null) return obj[key];
  return undefined;
}

/** A list entry as a short string: a plain string, or the most telling field of an object. */
function entryText(value: Json): string | null {
  const plain = text(value);
  if (plain) return plain;
  const obj = record(value);
  if (!obj) return null;
  const name = text(first(obj, ["path", "commit", "id", "uuid", "digest", "name", "ref"]));
  const why = text(first(obj, ["reason", "cause", "detail"]));
  return name ? (why ? `${name} (${why})` : name) : JSON.stringify(obj);
}

function list(value: Json): string[] {
  if (!Array.isArray(value)) return [];
  return value.map(entryText).filter((v): v is string => v !== null);
}

const OBJECT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Sorts a flat list of missing entries into kinds: the `kind:value` entries reportRestore
 * takes (commit:, change-set:, path:, tree:), or bare values as early workers sent them.
 */
function classify(entries: string[], into: RestoreMissing): void {
  for (const entry of entries) {
    const prefixed = /^(commit|change-?set|layer|patch|path|tree):(.+)$/i.exec(entry);
    if (prefixed) {
      const [, kind, value] = prefixed as unknown as [string, string, string];
      const k = kind.toLowerCase();
      if (k === "commit") into.commits.push(value);
      else if (k === "path") into.paths.push(value);
      else if (k === "tree") into.other.push(`recorded tree ${short(value)}`);
      else into.changeSets.push(value);
    } else if (OBJECT_ID.test(entry)) into.commits.push(entry);
    else if (UUID.test(entry) || /^(layer|patch|change-?set):/i.test(entry)) into.changeSets.push(entry);
    else if (/^bundle$|^manifest$/i.test(entry)) into.other.push(entry);
    else into.paths.push(entry);
  }
}

const NEXT_STEPS: Record<string, string> = {
  BLOB_MISSING:
    "Upload the missing blobs again from the machine that captured the snapshot (or capture it there again), then restore again.",
  BLOB_CORRUPT: "Replace the corrupt blobs with a good copy from the capturing machine, then restore again.",
  COMMITS_UNAVAILABLE:
    "Push the missing commits, with their history, to one of the recorded remotes, then restore again.",
  DELTA_FAILED:
    "The recorded changes no longer apply to the commit that could be had. Re-apply them by hand from the capturing machine, or discard to continue from what the worktree holds.",
  TREE_MISMATCH:
    "The rebuilt tree did not match the recorded one. Capture the original checkout again if it still exists, or discard to continue from what the worktree holds.",
};

const DEFAULT_NEXT: Record<"degraded" | "unrestored", string> = {
  degraded:
    "Check what the worktree holds. Restore again once the missing content is available, or discard to continue from the worktree as it is.",
  unrestored:
    "Nothing was restored. Make the snapshot's commits and blobs available and restore again, or discard to let the work context start afresh.",
};

function short(id: string | null): string | null {
  return id && OBJECT_ID.test(id) ? id.slice(0, 12) : id;
}

function countOf(n: number, one: string, many: string): string | null {
  return n === 0 ? null : `${n} ${n === 1 ? one : many}`;
}

/** Reads a restore's result into the notice support acts on. */
export function describeRestoreResult(opts: {
  outcome: "degraded" | "unrestored";
  result: Json;
  errorCode?: string | null;
}): RestoreNotice {
  const result = record(opts.result);
  const holdsObj = record(first(result, ["holds", "worktree", "restored", "state"])) ?? result;
  const holds: RestoreHolds = {
    stage: text(first(holdsObj, ["stage"])) ?? text(first(result, ["stage"])),
    head: text(first(holdsObj, ["head", "headCommit", "commit"])),
    tree: text(first(holdsObj, ["tree", "treeId"])),
    basis: text(first(holdsObj, ["basis"])) ?? text(first(result, ["basis"])),
  };

  const missing: RestoreMissing = { commits: [], changeSets: [], paths: [], other: [] };
  const rawMissing = first(result, ["missing"]);
  const missingObj = record(rawMissing);
  if (Array.isArray(rawMissing)) classify(list(rawMissing), missing);
  const source = missingObj ?? result;
  missing.commits.push(...list(first(source, ["commits", "missingCommits"])));
  missing.changeSets.push(...list(first(source, ["changeSets", "missingLinks", "links", "patches"])));
  missing.paths.push(...list(first(source, ["paths", "missingPaths"])));
  missing.other.push(...list(first(source, ["other"])));

  const cause =
    text(first(missingObj, ["cause", "code"])) ??
    text(first(result, ["cause", "code", "reason"])) ??
    text(first(record(first(result, ["error"])), ["code"])) ??
    opts.errorCode ??
    null;
  const nextStep =
    text(first(missingObj, ["nextStep", "next", "hint"])) ??
    text(first(result, ["nextStep", "next", "hint"])) ??
    (cause ? NEXT_STEPS[cause.toUpperCase().replace(/-/g, "_")] : undefined) ??
    DEFAULT_NEXT[opts.outcome];

  const lacks = [
    countOf(missing.commits.length, "commit", "commits"),
    countOf(missing.changeSets.length, "change set", "change sets"),
    countOf(missing.paths.length, "path", "paths"),
    ...missing.other,
  ].filter(Boolean);
  const held =
    opts.outcome === "unrestored"
      ? "Nothing was restored"
      : holds.head || holds.tree
        ? `Restored ${holds.head ? `commit ${short(holds.head)}` : `tree ${short(holds.tree)}`}${holds.basis ? ` (${holds.basis})` : ""}`
        : "Restored partly";
  const summary = `${held}; missing ${lacks.length > 0 ? lacks.join(", ") : "unknown content"}.`;
  const recordedObj = record(first(result, ["recorded"]));
  const recorded = recordedObj
    ? {
        head: text(first(recordedObj, ["head"])),
        tree: text(first(recordedObj, ["tree", "treeId"])),
        branch: text(first(recordedObj, ["branch"])),
      }
    : null;
  const causeMessage = text(first(missingObj, ["causeMessage", "message"])) ?? text(first(result, ["causeMessage"]));
  const rawWarnings = first(result, ["warnings"]);
  const warnings = (Array.isArray(rawWarnings) ? rawWarnings : [])
    .map((w) => record(w))
    .filter((w): w is Record<string, Json> => w !== null)
    .map((w) => ({ kind: text(w.kind) ?? "warning", message: text(w.message) ?? "" }));
  return { holds, recorded, missing, cause, causeMessage, warnings, nextStep, summary };
}
