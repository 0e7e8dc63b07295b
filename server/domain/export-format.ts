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
import { blobDigestSchema, layerDescriptorSchema, layerUuidSchema } from "./content.ts";
import { hasControlCharacter, textProblem } from "./text.ts";

export const EXPORT_MAGIC = "strata-export 1";
export const EXPORT_FORMAT_VERSION = 1;
/** A header longer than this is refused before it is parsed. */
export const MAX_HEADER_BYTES = 64 * 1024 * 1024;
/** The largest blob a file may carry: the blob store's own limit (DEFAULT_MAX_BLOB_BYTES). */
export const MAX_EXPORT_BLOB_BYTES = 4 * 1024 ** 3;
/** The catalog's 64-bit size columns. */
const MAX_SIZE_BYTES = 2n ** 63n - 1n;
/** The catalog's 32-bit integer columns (a checkpoint's sequence). */
const MAX_INT32 = 2 ** 31 - 1;
/** The `end <sha256>` line that closes a file. */
export const END_LINE_BYTES = "end ".length + 64 + 1;

// Everything in a header is from outside and goes into the catalog: every text is refused with
// a NUL, another control character or half a UTF-16 surrogate pair (neither database stores
// them), every number is bounded by its column, every list by a count.

/** Whether a string can be stored as text on both databases (no NUL, no lone surrogate). */
function isStorableText(value: string): boolean {
  return textProblem(value) === null;
}

function text(min: number, max: number) {
  return z
    .string()
    .min(min)
    .max(max)
    .refine((v) => !hasControlCharacter(v), "a control character")
    .refine(isStorableText, "half a surrogate pair");
}

const nullableText = text(1, 4096).nullable();

/** A JSON value as a snapshot's validation evidence holds it: bounded, and storable as JSON. */
const MAX_JSON_DEPTH = 32;
const MAX_JSON_NODES = 10_000;
function jsonProblem(value: unknown): string | null {
  let nodes = 0;
  const walk = (v: unknown, depth: number): string | null => {
    nodes += 1;
    if (nodes > MAX_JSON_NODES) return `more than ${MAX_JSON_NODES} values`;
    if (depth > MAX_JSON_DEPTH) return `nested deeper than ${MAX_JSON_DEPTH}`;
    if (v === null || typeof v === "boolean") return null;
    if (typeof v === "number") return Number.isFinite(v) ? null : "a number out of range";
    if (typeof v === "string") return v.length <= 65_536 && isStorableText(v) ? null : "a text it cannot store";
    if (Array.isArray(v)) {
      for (const item of v) {
        const problem = walk(item, depth + 1);
        if (problem) return problem;
      }
      return null;
    }
    if (typeof v === "object") {
      for (const [key, item] of Object.entries(v)) {
        if (key.length > 1024 || !isStorableText(key)) return "a key it cannot store";
        const problem = walk(item, depth + 1);
        if (problem) return problem;
      }
      return null;
    }
    return "a value that is not JSON";
  };
  return walk(value, 0);
}

const boundedJson = z.unknown().superRefine((value, ctx) => {
  const problem = jsonProblem(value);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/** Bytes as a decimal string (a bigint in the catalog): canonical, and at most 2^63-1. */
const sizeBytesText = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,18})$/, "a decimal size")
  // Zod runs this even when the pattern failed: only digits reach BigInt.
  .refine((v) => !/^[0-9]+$/.test(v) || BigInt(v) <= MAX_SIZE_BYTES, "a size larger than 2^63-1");

const blobSize = z.number().int().nonnegative().max(MAX_EXPORT_BLOB_BYTES);

/** The catalog record of the snapshot, as exported (enough to re-create it elsewhere). */
const exportedSnapshotSchema = z.strictObject({
  id: text(1, 200),
  class: z.enum(["baseline", "checkpoint"]),
  state: z.enum(["capturing", "ready", "superseded", "retired", "failed", "deleting", "deleted"]),
  repository: z.strictObject({ identity: text(1, 500), name: text(1, 200) }),
  backendKind: text(1, 300),
  baseImage: text(1, 300),
  canonicalRef: nullableText,
  canonicalCommit: nullableText,
  validation: boundedJson.nullable(),
  workContextId: nullableText,
  sequence: z.number().int().positive().max(MAX_INT32).nullable(),
  headCommit: nullableText,
  treeId: nullableText,
  branch: nullableText,
  /** Bytes, as a decimal string (a bigint in the catalog). */
  sizeBytes: sizeBytesText,
  /** The row's manifest reference (the short catalog form, or the full manifest itself). */
  manifestDigest: blobDigestSchema.nullable(),
  /** The blobs the snapshot consists of, as its row lists them. */
  blobDigests: z.array(blobDigestSchema).max(100_000),
  createdAt: z.iso.datetime(),
});

export const exportHeaderSchema = z.strictObject({
  format: z.literal(EXPORT_FORMAT_VERSION),
  exportedAt: z.iso.datetime(),
  snapshot: exportedSnapshotSchema,
  /** The digest of the full capture manifest among the blobs. */
  manifestBlob: blobDigestSchema,
  /** The snapshot's layers (its heads and everything beneath them) and its heads. */
  layers: z
    .array(z.strictObject({ ...layerDescriptorSchema.shape, sizeBytes: blobSize }))
    .max(100_000)
    .refine((layers) => new Set(layers.map((l) => l.uuid)).size === layers.length, "a layer is listed twice"),
  heads: z.array(layerUuidSchema).max(1_000),
  /** Every blob of the file, in the order they follow, each once. */
  blobs: z
    .array(z.strictObject({ digest: blobDigestSchema, size: blobSize }))
    .max(100_000)
    .refine((blobs) => new Set(blobs.map((b) => b.digest)).size === blobs.length, "a blob is listed twice"),
});
export type ExportHeader = z.infer<typeof exportHeaderSchema>;

/** `blob <sha256> <size>` (sizes in canonical decimal) */
export function blobLine(digest: string, size: number): string {
  return `blob ${digest} ${size}\n`;
}

export function parseBlobLine(line: string): { digest: string; size: number } | null {
  const match = /^blob ([0-9a-f]{64}) (0|[1-9][0-9]{0,15})$/.exec(line);
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
