// Comparing two snapshots of one repository from what the catalog holds (snapshot-changes.ts):
// the files that differ, each with a unified diff of its content where held, binary files named
// with their sizes, secrets never shown, and every cut the size limits made said in the answer.
//
// Two snapshots on one HEAD (a lineage's checkpoints, a checkpoint and the baseline it began
// from) are compared exactly: a file neither changed is HEAD's in both. When HEAD moved between
// them, only the files either changed on top of its own HEAD can be named: the commits' trees
// are not held (a bundle of unpushed commits is a thin pack, unreadable without its remote).
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { StrataError } from "../domain/errors.ts";
import type { AgentScope } from "../domain/scope.ts";
import {
  DIFF_LIMITS,
  dashboardDiffInput,
  snapshotDiffInput,
  type DashboardDiffInput,
  type DiffSide,
  type FileDiff,
  type SnapshotDiff,
  type SnapshotDiffInput,
} from "../domain/snapshot-diff.ts";
import { clientFields } from "../domain/client-fields.ts";
import { deniedPathRule } from "../domain/deny-list.ts";
import { HIDDEN_STATES } from "../lineage/snapshot-list.ts";
import {
  captureRecordOf,
  cleanChanges,
  readChanges,
  recordSelect,
  type FileVersion,
  type SnapshotChanges,
} from "./snapshot-changes.ts";
import { newHeadLines, renderDiff, type HeadLines, type SparseText } from "./sparse-text.ts";

const diffRowSelect = {
  id: true,
  class: true,
  state: true,
  agentId: true,
  repositoryId: true,
  sequence: true,
  workContextId: true,
  predecessorId: true,
  headCommit: true,
  branch: true,
  createdAt: true,
  agent: { select: { name: true } },
  repository: { select: { id: true, identity: true, name: true } },
  lineage: { select: { originSnapshotId: true } },
  ...recordSelect,
} satisfies Prisma.SnapshotSelect;

type DiffRow = Prisma.SnapshotGetPayload<{ select: typeof diffRowSelect }>;

interface Limits {
  maxFiles: number;
  maxBytesPerFile: number;
  maxBytes: number;
}

function limitsOf(input: { maxFiles?: number; maxBytesPerFile?: number; maxBytes?: number }): Limits {
  return {
    maxFiles: input.maxFiles ?? DIFF_LIMITS.maxFiles.default,
    maxBytesPerFile: input.maxBytesPerFile ?? DIFF_LIMITS.maxBytesPerFile.default,
    maxBytes: input.maxBytes ?? DIFF_LIMITS.maxBytes.default,
  };
}

function notFound(id: string): StrataError {
  return new StrataError("NOT_FOUND", `Snapshot ${id} was not found.`);
}

/**
 * `snapshot.diff`: two snapshots of the calling agent. Another agent's snapshot is NOT_FOUND, as
 * in snapshot.get, and so is a retired one unless includeRetired.
 */
export async function diffAgentSnapshots(
  db: Db,
  opts: SnapshotDiffInput & { agent: AgentScope },
): Promise<SnapshotDiff> {
  const input = snapshotDiffInput.parse(clientFields(opts, "agent"));
  const read = async (id: string) => {
    const row = await db.snapshot.findFirst({
      where: {
        id,
        agentId: opts.agent.agentId,
        ...(input.includeRetired ? {} : { state: { notIn: HIDDEN_STATES } }),
      },
      select: diffRowSelect,
    });
    if (!row) throw notFound(id);
    return row;
  };
  return compareSnapshots(db, await read(input.from), await read(input.to), limitsOf(input));
}

/**
 * The dashboard's diff: any two snapshots of one repository, in any state. Without `from`, the
 * snapshot is compared with its predecessor (a first checkpoint: the snapshot its lineage began from).
 */
export async function diffSnapshotsForStaff(db: Db, opts: DashboardDiffInput): Promise<SnapshotDiff> {
  const input = dashboardDiffInput.parse(opts);
  const read = async (id: string) => {
    const row = await db.snapshot.findUnique({ where: { id }, select: diffRowSelect });
    if (!row) throw notFound(id);
    return row;
  };
  const to = await read(input.to);
  const fromId = input.from ?? to.predecessorId ?? to.lineage?.originSnapshotId ?? null;
  if (!fromId) {
    throw new StrataError("INVALID_INPUT", `Snapshot ${to.id} has no predecessor to compare with.`, {
      hint: "Name the snapshot to compare it with (from).",
      data: { reason: "no-predecessor" },
    });
  }
  return compareSnapshots(db, await read(fromId), to, limitsOf(input));
}

function sideOf(row: DiffRow, recordHeld: boolean, tree: string | null, head: string | null): DiffSide {
  return {
    id: row.id,
    class: row.class,
    state: row.state,
    sequence: row.sequence,
    workContextId: row.workContextId,
    agentName: row.agent.name,
    head: head ?? row.headCommit,
    tree: tree ?? row.treeId,
    branch: row.branch,
    createdAt: row.createdAt,
    recordHeld,
  };
}

/** What the catalog holds of a snapshot's files, or null when nothing can be said. */
async function changesOf(
  db: Db,
  row: DiffRow,
  headLines: (head: string | null) => Map<string, HeadLines>,
): Promise<{ changes: SnapshotChanges | null; recordHeld: boolean }> {
  const record = await captureRecordOf(db, row);
  if (record) return { changes: await readChanges(db, record, headLines(record.head)), recordHeld: true };
  // A baseline is a clean checkout of its commit (its evidence was checked): its files are HEAD's.
  if (row.class === "baseline" && row.headCommit && row.treeId) {
    return { changes: cleanChanges(row.headCommit, row.treeId), recordHeld: false };
  }
  return { changes: null, recordHeld: false };
}

/** Secret paths named at most (the rest are counted in a note). */
const DENIED_LISTED = 100;

const EMPTY_STAT = { files: 0, added: 0, modified: 0, deleted: 0, additions: 0, deletions: 0 };

async function compareSnapshots(db: Db, from: DiffRow, to: DiffRow, limits: Limits): Promise<SnapshotDiff> {
  if (from.repositoryId !== to.repositoryId) {
    throw new StrataError(
      "INVALID_INPUT",
      `Snapshots ${from.id} and ${to.id} belong to different repositories (${from.repository.identity}, ${to.repository.identity}).`,
      {
        hint: "Compare two snapshots of one repository.",
        data: { reason: "different-repositories", from: from.repository.identity, to: to.repository.identity },
      },
    );
  }
  // Snapshots on one HEAD share what their patches tell of HEAD's lines.
  const byHead = new Map<string, Map<string, HeadLines>>();
  const headLines = (head: string | null) => {
    const key = head ?? "";
    let lines = byHead.get(key);
    if (!lines) byHead.set(key, (lines = new Map()));
    return lines;
  };
  const a = await changesOf(db, from, headLines);
  const b = from.id === to.id ? a : await changesOf(db, to, headLines);
  const base = {
    repository: to.repository,
    from: sideOf(from, a.recordHeld, a.changes?.tree ?? null, a.changes?.head ?? null),
    to: sideOf(to, b.recordHeld, b.changes?.tree ?? null, b.changes?.head ?? null),
    limits,
  };
  const allDenied = [...new Set([...(a.changes?.denied ?? []), ...(b.changes?.denied ?? [])])].sort();
  const denied = allDenied.slice(0, DENIED_LISTED);
  const deniedNote =
    allDenied.length > denied.length
      ? [`${allDenied.length - denied.length} more secret paths were left out of the captures; not listed.`]
      : [];
  const treeA = base.from.tree;
  const treeB = base.to.tree;
  if (treeA && treeA === treeB) {
    return {
      ...base,
      identical: true,
      completeness: "exact",
      files: [],
      denied,
      stat: EMPTY_STAT,
      cut: { files: 0, diffs: 0 },
      notes: deniedNote,
    };
  }
  if (!a.changes || !b.changes) {
    const missing = [!a.changes ? from : null, !b.changes ? to : null].filter((r): r is DiffRow => r !== null);
    return {
      ...base,
      identical: false,
      completeness: "unknown",
      files: [],
      denied,
      stat: EMPTY_STAT,
      cut: { files: 0, diffs: 0 },
      notes: [
        ...missing.map(
          (r) =>
            `The catalog holds no readable capture record of snapshot ${r.id} (or a change set it names is no longer stored), so its files cannot be listed; the trees differ.`,
        ),
        ...deniedNote,
      ],
    };
  }
  const sameHead = a.changes.head === b.changes.head;
  const notes: string[] = [];
  if (!sameHead) {
    notes.push(
      `HEAD moved from ${short(a.changes.head)} to ${short(b.changes.head)}: the files the commits between them changed are not listed (the catalog holds each snapshot's changes on top of its HEAD, not the commits' trees).`,
    );
  }
  const lines = headLines(a.changes.head);
  const entries = comparedPaths(a.changes, b.changes)
    .map((path) => compareFile(path, a.changes!, b.changes!, sameHead ? (lines.get(path) ?? newHeadLines()) : null))
    .filter((e): e is PendingFile => e !== null);
  return {
    ...base,
    identical: false,
    completeness: sameHead ? "exact" : "changes-only",
    denied,
    notes: [...notes, ...deniedNote],
    ...bounded(entries, limits),
  };
}

function short(oid: string | null): string {
  return oid ? oid.slice(0, 12) : "no commit";
}

function comparedPaths(a: SnapshotChanges, b: SnapshotChanges): string[] {
  return [...new Set([...a.files.keys(), ...b.files.keys(), ...a.unreadable, ...b.unreadable])].sort();
}

/** A differing file before the limits: its diff is rendered when it is listed. */
type PendingFile = Omit<FileDiff, "diff" | "truncated"> & {
  render: ((maxBytes: number) => ReturnType<typeof renderDiff>) | null;
};

function sideFile(version: FileVersion | null) {
  return { mode: version?.mode ?? null, oid: version?.oid ?? null };
}

function hasUnknownLines(text: SparseText): boolean {
  return text.some((item) => "gap" in item);
}

/**
 * One path: its version in each snapshot (`undefined`: not known, HEAD moved and this side did
 * not change it) and what differs. Null when nothing does.
 */
function compareFile(path: string, a: SnapshotChanges, b: SnapshotChanges, head: HeadLines | null): PendingFile | null {
  const base = { path, oldSize: null, newSize: null, additions: 0, deletions: 0, render: null };
  if (a.unreadable.has(path) || b.unreadable.has(path)) {
    return {
      ...base,
      change: "unknown",
      content: "not-held",
      oldMode: null,
      newMode: null,
      oldOid: null,
      newOid: null,
      note: "Its part of a stored change set could not be read, so it is not compared.",
    };
  }
  const sa = a.files.get(path);
  const sb = b.files.get(path);
  // On one HEAD a file one snapshot left alone is HEAD's, as the other's patches describe it.
  const va = sa ? sa.now : head ? sb!.head : undefined;
  const vb = sb ? sb.now : head ? sa!.head : undefined;
  if (va === null && vb === null) return null;
  if (deniedPathRule(path)) {
    const change =
      va === undefined || vb === undefined ? "unknown" : va === null ? "added" : vb === null ? "deleted" : "modified";
    return {
      ...base,
      change,
      content: "denied",
      oldMode: null,
      newMode: null,
      oldOid: null,
      newOid: null,
      note: "A secret path (deny-list): its content is never shown.",
    };
  }
  if (va === undefined || vb === undefined) {
    return {
      ...base,
      change: "unknown",
      content: "not-held",
      oldMode: sideFile(va ?? null).mode,
      newMode: sideFile(vb ?? null).mode,
      oldOid: sideFile(va ?? null).oid,
      newOid: sideFile(vb ?? null).oid,
      note: "Only one snapshot changed it on top of its HEAD, and the other's HEAD version is not held.",
    };
  }
  const change = va === null ? "added" : vb === null ? "deleted" : "modified";
  const sides = {
    oldMode: sideFile(va).mode,
    newMode: sideFile(vb).mode,
    oldOid: sideFile(va).oid,
    newOid: sideFile(vb).oid,
  };
  const sameBlob = va !== null && vb !== null && va.oid !== null && va.oid === vb.oid;
  if (sameBlob && va.mode === vb.mode) return null;
  if (va?.binary || vb?.binary) {
    if (sameBlob) return { ...base, change: "mode", content: "binary", ...sides, note: null };
    const sizeOf = (v: FileVersion | null) =>
      v?.oid ? ((a.whole.get(v.oid) ?? b.whole.get(v.oid))?.size ?? null) : null;
    const oldSize = va ? sizeOf(va) : null;
    const newSize = vb ? sizeOf(vb) : null;
    const unknownSize = (va !== null && oldSize === null) || (vb !== null && newSize === null);
    return {
      ...base,
      change,
      content: "binary",
      ...sides,
      oldSize,
      newSize,
      note: unknownSize
        ? "A version of it is HEAD's, whose content the catalog does not hold: its size is not known."
        : null,
    };
  }
  const fromText = va ? va.text : [];
  const toText = vb ? vb.text : [];
  if (!fromText || !toText) {
    return {
      ...base,
      change,
      content: "not-held",
      ...sides,
      note: "Its lines could not be followed through the change sets.",
    };
  }
  if (!head && (hasUnknownLines(fromText) || hasUnknownLines(toText))) {
    return {
      ...base,
      change,
      content: "not-held",
      ...sides,
      note: "Its HEAD versions differ and are not held, so its lines cannot be compared.",
    };
  }
  const lines = head ?? newHeadLines();
  const whole = renderDiff(fromText, toText, lines, Number.MAX_SAFE_INTEGER);
  if (!whole.changed) {
    if (va?.mode === vb?.mode) return null;
    return {
      ...base,
      change: "mode",
      content: "text",
      ...sides,
      note: null,
      render: (max) => renderDiff(fromText, toText, lines, max),
    };
  }
  return {
    ...base,
    change,
    content: "text",
    ...sides,
    additions: whole.additions,
    deletions: whole.deletions,
    note: whole.partial ? "Some changed lines are HEAD's, whose content the catalog does not hold." : null,
    render: (max) => renderDiff(fromText, toText, lines, max),
  };
}

/** The answer within its limits: at most maxFiles files, and diffs cut per file and in total. */
function bounded(entries: PendingFile[], limits: Limits): Pick<SnapshotDiff, "files" | "stat" | "cut"> {
  const listed = entries.slice(0, limits.maxFiles);
  let budget = limits.maxBytes;
  let cutDiffs = 0;
  const stat = { ...EMPTY_STAT, files: entries.length };
  for (const e of entries) {
    if (e.change === "added") stat.added += 1;
    if (e.change === "modified" || e.change === "mode") stat.modified += 1;
    if (e.change === "deleted") stat.deleted += 1;
    stat.additions += e.additions;
    stat.deletions += e.deletions;
  }
  const files = listed.map(({ render, ...e }): FileDiff => {
    if (!render) return { ...e, diff: null, truncated: false };
    const room = Math.min(limits.maxBytesPerFile, budget);
    const shown = render(room);
    budget -= Buffer.byteLength(shown.text);
    const truncated = shown.truncated;
    if (truncated) cutDiffs += 1;
    const why =
      truncated && room < limits.maxBytesPerFile
        ? `Diff cut: the answer's ${limits.maxBytes} bytes of diff were used up.`
        : truncated
          ? `Diff cut at ${limits.maxBytesPerFile} bytes.`
          : null;
    return {
      ...e,
      diff: shown.text,
      truncated,
      note: [e.note, why].filter(Boolean).join(" ") || null,
    };
  });
  return { files, stat, cut: { files: entries.length - listed.length, diffs: cutDiffs } };
}
