// What the catalog holds of one git snapshot's files: its capture record names HEAD and the
// patch chain from HEAD to the captured tree; the patches (and the files they carry whole) are
// stored blobs. HEAD's own files are not held: a file no patch touched is HEAD's, whatever that
// is. So a snapshot's files are known as changes on top of its HEAD, path by path.
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { readBlob, statBlob } from "../content/blobs.ts";
import { captureManifestSchema, type CaptureManifest } from "../domain/capture-manifest.ts";
import { isBlobDigest } from "../domain/content.ts";
import { parsePatch, type PatchSection } from "./patch-sections.ts";
import { applyHunks, HunkMismatch, newHeadLines, unknownHead, type HeadLines, type SparseText } from "./sparse-text.ts";

/** A capture record larger than this is not read (100,000 omitted paths fit well below). */
const RECORD_MAX_BYTES = 64 * 1024 * 1024;
/** A patch larger than this is not read for a diff. */
const PATCH_MAX_BYTES = 64 * 1024 * 1024;

export interface FileVersion {
  /** The git blob id; null when no patch said it (a mode change of a file otherwise untouched). */
  oid: string | null;
  mode: string | null;
  binary: boolean;
  /** Its lines as far as known; null for a binary file or one whose lines cannot be followed. */
  text: SparseText | null;
}

interface PathState {
  /** The file at HEAD, as the first patch that touched it described it (null: not in HEAD). */
  head: FileVersion | null;
  /** The file in the snapshot (null: not in the snapshot). */
  now: FileVersion | null;
}

export interface SnapshotChanges {
  head: string | null;
  tree: string;
  files: Map<string, PathState>;
  /** Paths whose part of a patch could not be read. */
  unreadable: Set<string>;
  /** The stored content of files the patches carry whole, by git blob id. */
  whole: Map<string, { digest: string; size: number }>;
  /** Paths the capture left out as secrets. */
  denied: string[];
}

async function readStored(db: Db, digest: string, maxBytes: number): Promise<Buffer | null> {
  if (!isBlobDigest(digest)) return null;
  const info = await statBlob(db, digest);
  if (!info || info.sizeBytes > maxBytes) return null;
  const parts: Uint8Array[] = [];
  for await (const part of readBlob(db, info)) parts.push(part);
  return Buffer.concat(parts);
}

async function readRecord(db: Db, digest: string): Promise<CaptureManifest | null> {
  try {
    const bytes = await readStored(db, digest, RECORD_MAX_BYTES);
    if (!bytes) return null;
    const parsed = captureManifestSchema.safeParse(JSON.parse(bytes.toString("utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export const recordSelect = {
  manifestDigest: true,
  artifactKind: true,
  artifactRef: true,
  treeId: true,
  metadata: true,
  heads: { select: { layer: { select: { kind: true, digest: true } } } },
} satisfies Prisma.SnapshotSelect;

/**
 * The snapshot's full capture record, where a capture leaves it: the artifact reference of a git
 * artifact, the row's manifest reference, a head layer of kind `manifest`, or (describing the
 * row's tree) a blob the row lists. Null when none is held.
 */
export async function captureRecordOf(
  db: Db,
  row: Prisma.SnapshotGetPayload<{ select: typeof recordSelect }>,
): Promise<CaptureManifest | null> {
  const candidates: { digest: string; mustMatchTree: boolean }[] = [];
  if (row.artifactKind === "git" && row.artifactRef) candidates.push({ digest: row.artifactRef, mustMatchTree: false });
  if (row.manifestDigest) candidates.push({ digest: row.manifestDigest, mustMatchTree: false });
  for (const h of row.heads)
    if (h.layer.kind === "manifest") candidates.push({ digest: h.layer.digest, mustMatchTree: false });
  const listed = (row.metadata as { manifest?: { blobDigests?: unknown } } | null)?.manifest?.blobDigests;
  if (Array.isArray(listed)) {
    for (const d of listed.slice(0, 20)) if (typeof d === "string") candidates.push({ digest: d, mustMatchTree: true });
  }
  const tried = new Set<string>();
  for (const c of candidates) {
    if (tried.has(c.digest)) continue;
    tried.add(c.digest);
    const record = await readRecord(db, c.digest);
    if (!record || (c.mustMatchTree && row.treeId && record.tree !== row.treeId)) continue;
    return record;
  }
  return null;
}

/** The record of a clean checkout at `head` (a baseline: its evidence says nothing differs from HEAD). */
export function cleanChanges(head: string | null, tree: string): SnapshotChanges {
  return { head, tree, files: new Map(), unreadable: new Set(), whole: new Map(), denied: [] };
}

function headState(section: PatchSection): FileVersion | null {
  if (section.added) return null;
  return {
    oid: section.oldOid,
    mode: section.oldMode,
    binary: section.binary,
    text: section.binary ? null : unknownHead(),
  };
}

/** A file's next version after one patch's section (null: deleted). */
function nextVersion(prev: FileVersion | null, section: PatchSection, head: HeadLines): FileVersion | null {
  if (section.deleted) {
    // Reading the removed lines teaches HEAD's content where the file was HEAD's.
    if (prev?.text && section.hunks.length > 0) applyHunks(prev.text, section.hunks, head, true);
    return null;
  }
  const oid = section.newOid ?? prev?.oid ?? null;
  const mode = section.newMode ?? prev?.mode ?? null;
  if (section.binary) return { oid, mode, binary: true, text: null };
  const base = prev ? prev.text : [];
  if (section.hunks.length === 0) return { oid, mode, binary: prev?.binary ?? false, text: base };
  return { oid, mode, binary: false, text: base ? applyHunks(base, section.hunks, head) : null };
}

/**
 * Follows a snapshot's patch chain. `headLines` keeps, per path, what the patches taught of
 * HEAD's lines; snapshots on one HEAD share it, so either one's patches fill in the other's.
 * A patch no longer stored (or too large to read) makes the whole chain unknown: null.
 */
export async function readChanges(
  db: Db,
  record: CaptureManifest,
  headLines: Map<string, HeadLines>,
): Promise<SnapshotChanges | null> {
  const changes = cleanChanges(record.head, record.tree);
  changes.denied = record.omitted.filter((o) => o.reason === "denied").map((o) => o.path);
  for (const link of record.patches) {
    for (const f of link.files ?? []) changes.whole.set(f.oid, { digest: f.digest, size: f.size });
    let bytes: Buffer | null;
    try {
      bytes = await readStored(db, link.digest, PATCH_MAX_BYTES);
    } catch {
      bytes = null;
    }
    if (!bytes) return null;
    const { sections, unreadable } = parsePatch(bytes);
    for (const path of unreadable) changes.unreadable.add(path);
    for (const section of sections) {
      if (changes.unreadable.has(section.path)) continue;
      const state = changes.files.get(section.path) ?? { head: headState(section), now: headState(section) };
      let head = headLines.get(section.path);
      if (!head) headLines.set(section.path, (head = newHeadLines()));
      try {
        state.now = nextVersion(state.now, section, head);
      } catch (error) {
        if (!(error instanceof HunkMismatch)) throw error;
        changes.unreadable.add(section.path);
        continue;
      }
      changes.files.set(section.path, state);
    }
  }
  for (const path of changes.unreadable) changes.files.delete(path);
  return changes;
}
