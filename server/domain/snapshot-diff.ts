// What comparing two snapshots of one repository answers: the files that differ, each with its
// change, modes, sizes and a unified diff of its content where the catalog holds it, with every
// cut the size limits made said out loud. Built by server/diff/diff-snapshots.ts.
import { z } from "zod";
import { entityIdSchema } from "./snapshot-keys.ts";

/** The size limits of one answer: the defaults, and the most a caller may ask for. */
export const DIFF_LIMITS = {
  maxFiles: { default: 500, max: 5000 },
  maxBytesPerFile: { default: 64 * 1024, max: 1024 * 1024 },
  maxBytes: { default: 1024 * 1024, max: 8 * 1024 * 1024 },
} as const;

const limitFields = {
  /** Files listed at most; the rest are counted in `cut.files`. */
  maxFiles: z.number().int().min(1).max(DIFF_LIMITS.maxFiles.max).optional(),
  /** Bytes of unified diff shown per file at most. */
  maxBytesPerFile: z.number().int().min(256).max(DIFF_LIMITS.maxBytesPerFile.max).optional(),
  /** Bytes of unified diff in the whole answer at most. */
  maxBytes: z.number().int().min(256).max(DIFF_LIMITS.maxBytes.max).optional(),
};

/** `snapshot.diff`: two of the calling agent's snapshots. */
export const snapshotDiffInput = z.strictObject({
  from: entityIdSchema,
  to: entityIdSchema,
  /** Retired (and deleting/deleted) snapshots are refused unless asked for, as in snapshot.get. */
  includeRetired: z.boolean().default(false),
  ...limitFields,
});
export type SnapshotDiffInput = z.input<typeof snapshotDiffInput>;

/** The dashboard's diff: any two snapshots of a repository; without `from`, the snapshot's predecessor. */
export const dashboardDiffInput = z.strictObject({
  from: entityIdSchema.optional(),
  to: entityIdSchema,
  ...limitFields,
});
export type DashboardDiffInput = z.input<typeof dashboardDiffInput>;

const FILE_CHANGES = ["added", "modified", "deleted", "mode", "unknown"] as const;

/**
 * `text`: a unified diff is given; `binary`: named with its sizes, never shown; `not-held`: the
 * catalog does not hold this content (see `note`); `denied`: a secret path, never shown.
 */
const FILE_CONTENTS = ["text", "binary", "not-held", "denied"] as const;

const fileDiffSchema = z.object({
  path: z.string(),
  change: z.enum(FILE_CHANGES),
  content: z.enum(FILE_CONTENTS),
  /** Octal git modes ("100644", "100755", "120000"); null for the side without the file or not known. */
  oldMode: z.string().nullable(),
  newMode: z.string().nullable(),
  /** Git blob ids; null when the side has no such file or it is not known (never for a denied file). */
  oldOid: z.string().nullable(),
  newOid: z.string().nullable(),
  /** Sizes in bytes where the catalog holds the content (binary files). */
  oldSize: z.number().int().nullable(),
  newSize: z.number().int().nullable(),
  additions: z.number().int(),
  deletions: z.number().int(),
  /** The unified diff's hunks ("@@ … @@" and their lines); null unless content is "text". */
  diff: z.string().nullable(),
  /** The hunks were cut: at `maxBytesPerFile`, or because the answer's `maxBytes` was used up. */
  truncated: z.boolean(),
  /** Why the content is not shown or not complete, for people. */
  note: z.string().nullable(),
});
export type FileDiff = z.infer<typeof fileDiffSchema>;

const diffSideSchema = z.object({
  id: z.string(),
  class: z.string(),
  state: z.string(),
  sequence: z.number().int().nullable(),
  workContextId: z.string().nullable(),
  agentName: z.string(),
  head: z.string().nullable(),
  tree: z.string().nullable(),
  branch: z.string().nullable(),
  createdAt: z.date(),
  /** Whether the catalog holds the snapshot's capture record (its changes on top of HEAD). */
  recordHeld: z.boolean(),
});

export const snapshotDiffSchema = z.object({
  repository: z.object({ id: z.string(), identity: z.string(), name: z.string().nullable() }),
  from: diffSideSchema,
  to: diffSideSchema,
  /** Both snapshots hold the same tree: nothing differs. */
  identical: z.boolean(),
  /**
   * How complete the list is. `exact`: every differing file is listed (one HEAD under both, or
   * the same tree); `changes-only`: HEAD moved between them, so only files either snapshot
   * changed on top of its HEAD are listed (the commits' trees are not held); `unknown`: a
   * snapshot's capture record is not held, so its files cannot be listed at all.
   */
  completeness: z.enum(["exact", "changes-only", "unknown"]),
  files: z.array(fileDiffSchema),
  /** Secret paths either capture left out (denied): never compared, never shown. */
  denied: z.array(z.string()),
  stat: z.object({
    files: z.number().int(),
    added: z.number().int(),
    modified: z.number().int(),
    deleted: z.number().int(),
    additions: z.number().int(),
    deletions: z.number().int(),
  }),
  /** What the limits cut: files not listed, files whose hunks were cut or left out. */
  cut: z.object({ files: z.number().int(), diffs: z.number().int() }),
  limits: z.object({ maxFiles: z.number().int(), maxBytesPerFile: z.number().int(), maxBytes: z.number().int() }),
  /** Sentences on what could not be compared, and why. */
  notes: z.array(z.string()),
});
export type SnapshotDiff = z.infer<typeof snapshotDiffSchema>;
export type DiffSide = z.infer<typeof diffSideSchema>;

function sizeText(bytes: number | null): string {
  if (bytes === null) return "size not held";
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** How a binary file's change reads: "binary, 12.3 KiB -> 12.9 KiB" (a missing side is left out). */
/** What a file row says when its lines are not shown (binary, secret, unheld); null for a text file. */
export function unshownContentText(file: FileDiff): string | null {
  if (file.content === "binary") return binaryChangeText(file);
  if (file.content === "denied") return "secret, not shown";
  if (file.content === "not-held") return "content not held";
  return null;
}

export function binaryChangeText(file: Pick<FileDiff, "change" | "oldSize" | "newSize">): string {
  if (file.change === "added") return `binary, ${sizeText(file.newSize)}`;
  if (file.change === "deleted") return `binary, ${sizeText(file.oldSize)}`;
  return `binary, ${sizeText(file.oldSize)} -> ${sizeText(file.newSize)}`;
}
