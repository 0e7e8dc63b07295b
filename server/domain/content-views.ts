// What the content API returns: pins, publish and retire results, collection runs. Output
// schemas for the routers, so a response never carries a field by accident.
import { z } from "zod";

export const pinViewSchema = z.object({
  pinId: z.string(),
  snapshotId: z.string(),
  released: z.boolean(),
  /** Whether the pin protects its snapshot now (not released and not expired). */
  active: z.boolean(),
  holder: z.string().nullable(),
  purpose: z.string().nullable(),
  createdAt: z.date(),
  releasedAt: z.date().nullable(),
  expiresAt: z.date().nullable(),
});

export const publishSnapshotResultSchema = z.object({
  snapshotId: z.string(),
  state: z.enum(["ready", "superseded"]),
  manifestDigest: z.string().nullable(),
  alreadyPublished: z.boolean(),
  layersWritten: z.number().int(),
  layersReused: z.number().int(),
  headsWritten: z.number().int(),
  heads: z.array(z.string()),
});

export const retireSnapshotResultSchema = z.object({
  snapshotId: z.string(),
  state: z.string(),
  retiredAt: z.date().nullable(),
  alreadyRetired: z.boolean(),
  activePins: z.number().int(),
});

export const headReleaseTallySchema = z.object({
  snapshotsReleased: z.number().int(),
  headsReleased: z.number().int(),
  snapshotsKept: z.number().int(),
  snapshotsDeleted: z.number().int(),
});

const collectionTallySchema = z.object({
  pinsExpired: z.number().int(),
  snapshotsReleased: z.number().int(),
  headsReleased: z.number().int(),
  snapshotsKept: z.number().int(),
  snapshotsDeleted: z.number().int(),
  layersMarked: z.number().int(),
  layersDeleted: z.number().int(),
  layerBytes: z.number().int(),
  blobsDeleted: z.number().int(),
  bytesFreed: z.number().int(),
  uploadsAbandoned: z.number().int(),
  batches: z.number().int(),
});

export const collectResultSchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("skipped"), reason: z.enum(["running", "not-due"]), until: z.date() }),
  z.object({
    status: z.enum(["finished", "failed"]),
    runId: z.string(),
    dryRun: z.boolean(),
    startedAt: z.date(),
    finishedAt: z.date(),
    errorCode: z.string().nullable(),
    error: z.string().nullable(),
    tally: collectionTallySchema,
  }),
]);

export const collectionRunSchema = z.object({
  id: z.string(),
  host: z.string().nullable(),
  status: z.string(),
  startedAt: z.date(),
  finishedAt: z.date().nullable(),
  dryRun: z.boolean(),
  pinsExpired: z.number().int(),
  snapshotsReleased: z.number().int(),
  headsReleased: z.number().int(),
  layersDeleted: z.number().int(),
  layerBytes: z.number().int(),
  blobsDeleted: z.number().int(),
  bytesFreed: z.number().int(),
  uploadsAbandoned: z.number().int(),
  errorCode: z.string().nullable(),
});
