// The `.strata` file: one snapshot with its blobs inline, each once, written and read as a
// stream. Documented in docs/restore.md ("Moving a snapshot as a file"):
//
//   strata-export 1\n
//   <header: one line of JSON>\n
//   blob <sha256> <size>\n<size bytes>\n        (once per entry of header.blobs, in that order)
//   end <sha256 of the header line>\n
//
// Plain data and parsing helpers; no I/O.
import { z } from "zod";
import { blobDigestSchema, layerDescriptorSchema } from "./content.ts";

export const EXPORT_MAGIC = "strata-export 1";
export const EXPORT_FORMAT_VERSION = 1;
/** A header longer than this is refused before it is parsed. */
export const MAX_HEADER_BYTES = 64 * 1024 * 1024;

const nullableText = z.string().max(4096).nullable();

/** The catalog record of the snapshot, as exported (enough to re-create it elsewhere). */
export const exportedSnapshotSchema = z.object({
  id: z.string().min(1).max(200),
  class: z.enum(["baseline", "checkpoint"]),
  state: z.string().max(50),
  repository: z.object({ identity: z.string().min(1).max(500), name: z.string().min(1).max(200) }),
  backendKind: z.string().min(1).max(300),
  baseImage: z.string().min(1).max(300),
  canonicalRef: nullableText,
  canonicalCommit: nullableText,
  validation: z.unknown().nullable(),
  workContextId: nullableText,
  sequence: z.number().int().positive().nullable(),
  headCommit: nullableText,
  treeId: nullableText,
  branch: nullableText,
  /** Bytes, as a decimal string (a bigint in the catalog). */
  sizeBytes: z.string().regex(/^\d{1,20}$/),
  /** The row's manifest reference (the short catalog form, or the full manifest itself). */
  manifestDigest: blobDigestSchema.nullable(),
  /** The blobs the snapshot consists of, as its row lists them. */
  blobDigests: z.array(blobDigestSchema).max(100_000),
  createdAt: z.iso.datetime(),
});
export type ExportedSnapshot = z.infer<typeof exportedSnapshotSchema>;

export const exportHeaderSchema = z.object({
  format: z.literal(EXPORT_FORMAT_VERSION),
  exportedAt: z.iso.datetime(),
  snapshot: exportedSnapshotSchema,
  /** The digest of the full capture manifest among the blobs. */
  manifestBlob: blobDigestSchema,
  /** The snapshot's layers (its heads and everything beneath them) and its heads. */
  layers: z.array(layerDescriptorSchema).max(100_000),
  heads: z.array(z.string()).max(1_000),
  /** Every blob of the file, in the order they follow, each once. */
  blobs: z
    .array(z.object({ digest: blobDigestSchema, size: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER) }))
    .max(100_000)
    .refine((blobs) => new Set(blobs.map((b) => b.digest)).size === blobs.length, "a blob is listed twice"),
});
export type ExportHeader = z.infer<typeof exportHeaderSchema>;

/** `blob <sha256> <size>` */
export function blobLine(digest: string, size: number): string {
  return `blob ${digest} ${size}\n`;
}

export function parseBlobLine(line: string): { digest: string; size: number } | null {
  const match = /^blob ([0-9a-f]{64}) (\d{1,16})$/.exec(line);
  if (!match?.[1] || !match[2]) return null;
  const size = Number(match[2]);
  return Number.isSafeInteger(size) ? { digest: match[1], size } : null;
}

export function endLine(headerDigest: string): string {
  return `end ${headerDigest}\n`;
}

export function parseEndLine(line: string): string | null {
  return /^end ([0-9a-f]{64})$/.exec(line)?.[1] ?? null;
}
