// The record of a `dir` snapshot: a whole directory (dependency and build caches included, git
// repository or not) as files by content, modes, symbolic links and directories. A record names
// its parent record and carries only what changed since (`entries`, `removed`), so publishing a
// capture costs its delta plus the chain's length; every 32nd link is full again.
//
// The record is also where a hostile snapshot is caught: every path is relative, normal and free
// of NUL; nothing sits below a file or a link; a link never points out of the directory. A
// record that breaks any of these is INVALID_SNAPSHOT before a byte is written.
import { createHash } from "node:crypto";
import { posix } from "node:path";
import { z } from "zod";
import { blobDigestSchema } from "./content.ts";
import { StrataError } from "./errors.ts";

export const DIR_FORMAT = "strata-dir/1";
/** Links in a record chain before a capture records the whole directory again. */
export const DIR_FULL_EVERY = 32;

const pathSchema = z.string().min(1).max(4096);
const modeSchema = z.number().int().min(0).max(0o7777);

const dirChunkSchema = z.strictObject({ digest: blobDigestSchema, size: z.number().int().nonnegative() });
export type DirChunk = z.infer<typeof dirChunkSchema>;

const dirEntrySchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("file"),
    path: pathSchema,
    mode: modeSchema,
    size: z.number().int().nonnegative(),
    /** The sha256 of the whole file. */
    digest: blobDigestSchema,
    /** The stored pieces, in order; absent when the file is one piece (stored as `digest`). */
    chunks: z.array(dirChunkSchema).min(2).max(1_000_000).optional(),
  }),
  z.strictObject({ type: z.literal("symlink"), path: pathSchema, target: z.string().min(1).max(4096) }),
  z.strictObject({ type: z.literal("dir"), path: pathSchema, mode: modeSchema }),
]);
export type DirEntry = z.infer<typeof dirEntrySchema>;
export type DirFileEntry = Extract<DirEntry, { type: "file" }>;

const dirOmissionSchema = z.strictObject({ path: pathSchema, reason: z.string().min(1).max(200) });
export type DirOmission = z.infer<typeof dirOmissionSchema>;

const dirManifestSchema = z.strictObject({
  format: z.literal(DIR_FORMAT),
  /** Unique per capture, so each capture is its own artifact (deleting one never takes another's). */
  id: z.string().uuid(),
  capturedAt: z.string().datetime(),
  /** The record this one is layered on, or null for a full record. */
  parent: blobDigestSchema.nullable(),
  /** Links below this one (0 for a full record). */
  depth: z.number().int().min(0).max(DIR_FULL_EVERY),
  /** The digest of the whole directory this record chain describes (dirStateDigest). */
  stateDigest: blobDigestSchema,
  /** Entries added or changed since the parent (every entry for a full record). */
  entries: z.array(dirEntrySchema),
  /** Paths gone since the parent (with everything below them). */
  removed: z.array(pathSchema),
  /** What the capture left out, and why (the whole list, not a delta). */
  omitted: z.array(dirOmissionSchema).max(100_000),
  files: z.number().int().nonnegative(),
  sizeBytes: z.number().int().nonnegative(),
});
export type DirManifest = z.infer<typeof dirManifestSchema>;

/** A directory's state: its entries by path. */
export type DirState = Map<string, DirEntry>;

function invalid(message: string, data?: Record<string, unknown>): StrataError {
  return new StrataError("INVALID_SNAPSHOT", `The dir snapshot's record is not usable: ${message}.`, {
    hint: "The record was damaged or forged; restore an earlier snapshot, or capture again.",
    data,
  });
}

/** Why a recorded path is not a safe relative path, or null. */
function unsafePathReason(path: string): string | null {
  if (path.includes("\0")) return "it contains NUL";
  if (path.startsWith("/")) return "it is absolute";
  const parts = path.split("/");
  if (parts.some((p) => p === "" || p === "." || p === "..")) return "it is not a normal relative path";
  return null;
}

/** Whether a link at `path` pointing at `target` stays inside the directory. */
export function linkStaysInside(path: string, target: string): boolean {
  if (target.includes("\0") || posix.isAbsolute(target)) return false;
  const resolved = posix.normalize(posix.join(posix.dirname(path), target));
  return resolved !== ".." && !resolved.startsWith("../");
}

/** Applies a record to its parent's state (in place) and checks every entry it adds. */
export function applyDirManifest(state: DirState, manifest: DirManifest): DirState {
  for (const gone of manifest.removed) {
    const reason = unsafePathReason(gone);
    if (reason) throw invalid(`a removed path ${reason}`, { path: gone });
    state.delete(gone);
    const below = `${gone}/`;
    for (const path of state.keys()) if (path.startsWith(below)) state.delete(path);
  }
  for (const entry of manifest.entries) {
    const reason = unsafePathReason(entry.path);
    if (reason) throw invalid(`the path ${JSON.stringify(entry.path.slice(0, 200))} ${reason}`, { path: entry.path });
    if (entry.type === "symlink" && !linkStaysInside(entry.path, entry.target)) {
      throw invalid(`the link ${entry.path} points out of the directory`, { path: entry.path });
    }
    if (entry.type === "file" && entry.chunks) {
      const total = entry.chunks.reduce((sum, c) => sum + c.size, 0);
      if (total !== entry.size)
        throw invalid(`the pieces of ${entry.path} do not add up to its size`, { path: entry.path });
    }
    state.set(entry.path, entry);
  }
  return state;
}

/** Checks that nothing in a state sits below a file or a link (a write would go through it). */
export function checkDirState(state: DirState): void {
  for (const path of state.keys()) {
    let slash = path.indexOf("/");
    while (slash > 0) {
      const ancestor = state.get(path.slice(0, slash));
      if (ancestor && ancestor.type !== "dir") {
        throw invalid(`${path} lies below the ${ancestor.type} ${ancestor.path}`, { path });
      }
      slash = path.indexOf("/", slash + 1);
    }
  }
}

function entryLine(entry: DirEntry): string {
  switch (entry.type) {
    case "file":
      return `file ${entry.mode.toString(8)} ${entry.size} ${entry.digest} ${entry.path}`;
    case "symlink":
      return `link ${entry.target} -> ${entry.path}`;
    case "dir":
      return `dir ${entry.mode.toString(8)} ${entry.path}`;
  }
}

/** The digest of a whole directory state (what a restore is verified against). */
export function dirStateDigest(entries: Iterable<DirEntry>): string {
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const hash = createHash("sha256");
  for (const entry of sorted) hash.update(`${entryLine(entry)}\0`);
  return hash.digest("hex");
}

/** A record's stored bytes (canonical JSON: the digest of the bytes is the artifact reference). */
export function dirManifestBytes(manifest: DirManifest): Buffer {
  return Buffer.from(JSON.stringify(manifest), "utf8");
}

/** Parses stored record bytes; INVALID_SNAPSHOT when they are not a record. */
export function parseDirManifest(bytes: Uint8Array): DirManifest {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch {
    throw invalid("it is not JSON");
  }
  const parsed = dirManifestSchema.safeParse(json);
  if (!parsed.success) throw invalid(parsed.error.issues[0]?.message ?? "it does not match the format");
  return parsed.data;
}

/** The stored pieces of a file, in order. */
export function filePieces(entry: DirFileEntry): DirChunk[] {
  return entry.chunks ?? [{ digest: entry.digest, size: entry.size }];
}
