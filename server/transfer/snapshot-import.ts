// `strata import`: a `.strata` file (export-format.ts) into this catalog. The whole file is
// checked before anything is stored: its framing (every length against the file's own), its
// header (every field bounded by the column it goes to), the snapshot record's security checks
// (restore-record.ts), and every blob against its sha256. A file that fails any check stores
// nothing. Then the blobs are stored for nobody (streamed from the file, verified again), and
// one transaction grants them to the importing agent and records the snapshot with its layers.
// A failure after the check pass removes the blobs it stored that nobody was granted, and
// ungranted bytes are invisible to every agent and collected after the grace window, so even a
// crash in between leaves nothing anyone can use or that lasts. (One transaction around the
// blob writes too would hold SQLite's write lock, or a PostgreSQL transaction, for as long as
// gigabytes take to write.)
//
// Where the imported snapshot lands: a checkpoint joins the importing agent's lineage of its
// work context, as the head when the lineage has none (so acquiring that work context resumes
// from it), else as a superseded entry; a baseline is never made a baseline head by an import
// (only baseline.publish with evidence does that) and arrives superseded, restorable by id.
import { createHash, randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { inTransaction, type Db } from "../db/client.ts";
import { captureManifestSchema, manifestBlobDigests, type CaptureManifest } from "../domain/capture-manifest.ts";
import { StrataError } from "../domain/errors.ts";
import {
  blobLine,
  END_LINE_BYTES,
  EXPORT_MAGIC,
  exportHeaderSchema,
  MAX_HEADER_BYTES,
  parseBlobLine,
  parseEndLine,
  type ExportHeader,
} from "../domain/export-format.ts";
import { checkRestoreRecord } from "../domain/restore-record.ts";
import type { AgentScope } from "../domain/scope.ts";
import { dropUngrantedBlobs, grantStoredBlobs, putBlob } from "../content/blobs.ts";
import { publishLayers } from "../content/layers.ts";
import { findOrCreateLineage, lockLineageRow } from "../lineage/lineages.ts";
import { findOrCreateRepository } from "../lineage/repositories.ts";

function notAnExport(why: string, field?: string): StrataError {
  return new StrataError("INVALID_INPUT", `The file is not a valid Strata export: ${why}.`, {
    hint: "Nothing was stored. Export the snapshot again (strata export <snapshot> > file.strata).",
    data: field === undefined ? { why } : { why, field },
  });
}

/** Reads a file front to back at explicit offsets. */
class Cursor {
  offset = 0;
  constructor(
    private readonly handle: FileHandle,
    readonly size: number,
  ) {}

  async line(max: number): Promise<string> {
    const parts: Buffer[] = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(64 * 1024, max + 1 - length));
      const { bytesRead } = await this.handle.read(chunk, 0, chunk.length, this.offset);
      if (bytesRead === 0) throw notAnExport("it ends too early");
      const newline = chunk.subarray(0, bytesRead).indexOf(0x0a);
      const take = newline >= 0 ? newline : bytesRead;
      parts.push(chunk.subarray(0, take));
      length += take;
      this.offset += take;
      if (newline >= 0) {
        this.offset += 1;
        return Buffer.concat(parts, length).toString("utf8");
      }
      if (length > max) throw notAnExport("a line is too long");
    }
  }

  /** Hashes the next `n` bytes (and keeps them when `keep`). */
  async bytes(n: number, keep: boolean): Promise<{ digest: string; data: Buffer | null }> {
    if (this.offset + n > this.size) throw notAnExport("it ends inside a blob");
    const hash = createHash("sha256");
    const kept: Buffer[] = [];
    const buffer = Buffer.alloc(Math.min(1024 * 1024, Math.max(n, 1)));
    let left = n;
    while (left > 0) {
      const { bytesRead } = await this.handle.read(buffer, 0, Math.min(buffer.length, left), this.offset);
      if (bytesRead === 0) throw notAnExport("it ends inside a blob");
      const piece = buffer.subarray(0, bytesRead);
      hash.update(piece);
      if (keep) kept.push(Buffer.from(piece));
      this.offset += bytesRead;
      left -= bytesRead;
    }
    return { digest: hash.digest("hex"), data: keep ? Buffer.concat(kept, n) : null };
  }
}

interface VerifiedExport {
  header: ExportHeader;
  manifest: CaptureManifest;
  /** Where each blob's bytes are in the file. */
  entries: Array<{ digest: string; size: number; offset: number }>;
}

/** Checks a whole export file without storing anything. */
async function verifyExportFile(file: string): Promise<VerifiedExport> {
  const handle = await open(file, "r");
  try {
    const cursor = new Cursor(handle, (await handle.stat()).size);
    if ((await cursor.line(100)) !== EXPORT_MAGIC) throw notAnExport("it does not start with the format line");
    const headerLine = await cursor.line(MAX_HEADER_BYTES);
    let raw: unknown;
    try {
      raw = JSON.parse(headerLine);
    } catch {
      throw notAnExport("its header is not JSON");
    }
    const parsed = exportHeaderSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.join(".") || "the top";
      // The field and the rule, never the value (it may be anything).
      throw notAnExport(`its header fails at ${field} (${issue?.code ?? "invalid"})`, field);
    }
    const header = parsed.data;
    // The framing's lengths against the file's own, before reading any of it.
    let expected = cursor.offset + END_LINE_BYTES;
    for (const blob of header.blobs) expected += Buffer.byteLength(blobLine(blob.digest, blob.size)) + blob.size + 1;
    if (expected !== cursor.size) {
      throw notAnExport(`it is ${cursor.size < expected ? "shorter" : "longer"} than its header says`);
    }

    const entries: VerifiedExport["entries"] = [];
    let manifestBytes: Buffer | null = null;
    for (const expected of header.blobs) {
      const line = parseBlobLine(await cursor.line(200));
      if (!line || line.digest !== expected.digest || line.size !== expected.size) {
        throw notAnExport("a blob does not follow the header's list");
      }
      const offset = cursor.offset;
      const keep = line.digest === header.manifestBlob && line.size <= MAX_HEADER_BYTES;
      const read = await cursor.bytes(line.size, keep);
      if (read.digest !== line.digest) {
        throw new StrataError("BLOB_CORRUPT", `Blob ${line.digest} in the file does not have that sha256.`, {
          hint: "Nothing was stored. The file was damaged or altered; export the snapshot again.",
          data: { digest: line.digest },
        });
      }
      if (keep) manifestBytes = read.data;
      if ((await cursor.line(0)) !== "") throw notAnExport("a blob is longer than it says");
      entries.push({ digest: line.digest, size: line.size, offset });
    }
    const end = parseEndLine(await cursor.line(200));
    if (end !== createHash("sha256").update(headerLine, "utf8").digest("hex")) {
      throw notAnExport("its end line does not match its header");
    }
    if (cursor.offset !== cursor.size) throw notAnExport("it has data after its end");
    if (!manifestBytes) throw notAnExport("its manifest is not among its blobs");

    let manifestJson: unknown;
    try {
      manifestJson = JSON.parse(manifestBytes.toString("utf8"));
    } catch {
      throw notAnExport("its manifest is not JSON");
    }
    // The same security checks as a restore: the record must be safe to restore anywhere.
    const manifest = checkRestoreRecord({ snapshotId: header.snapshot.id, manifest: manifestJson });
    checkConsistency(header, manifest);
    return { header, manifest: captureManifestSchema.parse(manifest), entries };
  } finally {
    await handle.close();
  }
}

function checkConsistency(header: ExportHeader, manifest: CaptureManifest): void {
  const s = header.snapshot;
  if (s.treeId !== null && s.treeId !== manifest.tree) throw notAnExport("the record's tree is not the manifest's");
  if (s.headCommit !== null && s.headCommit !== manifest.head)
    throw notAnExport("the record's HEAD is not the manifest's");
  const sizes = new Map(header.blobs.map((b) => [b.digest, b.size]));
  for (const digest of manifestBlobDigests(manifest)) {
    if (!sizes.has(digest)) throw notAnExport("a blob the manifest needs is not in the file");
  }
  for (const layer of header.layers) {
    if (sizes.get(layer.digest) !== layer.sizeBytes) throw notAnExport("a layer's blob is not in the file");
  }
  const uuids = new Set(header.layers.map((l) => l.uuid));
  if (header.heads.some((h) => !uuids.has(h))) throw notAnExport("a head names no layer of the file");
  if (s.class === "checkpoint" && !s.workContextId) throw notAnExport("a checkpoint without its work context");
}

export interface ImportResult {
  snapshotId: string;
  /** The id in the exporting catalog (the same unless that id was taken here). */
  exportedId: string;
  created: boolean;
  state: "ready" | "superseded";
  /** `new`: blobs the importing agent did not have before (whatever other agents stored). */
  blobs: { count: number; bytes: number; new: number };
}

async function* fileRange(file: string, offset: number, size: number): AsyncGenerator<Uint8Array> {
  if (size === 0) return;
  for await (const chunk of createReadStream(file, { start: offset, end: offset + size - 1 })) {
    yield chunk as Buffer;
  }
}

/** Imports a `.strata` file for `agent`. Refuses a bad file before storing anything. */
export async function importSnapshotFile(
  db: Db,
  opts: { agent: AgentScope; file: string; now?: Date },
): Promise<ImportResult> {
  const verified = await verifyExportFile(opts.file);
  const { header } = verified;

  // Stored for nobody until the record commits: the grant comes with the snapshot.
  const storedHere: string[] = [];
  try {
    let bytes = 0;
    for (const entry of verified.entries) {
      const put = await putBlob(db, {
        digest: entry.digest,
        body: fileRange(opts.file, entry.offset, entry.size),
        grantTo: null,
      });
      if (put.created) storedHere.push(entry.digest);
      if (put.sizeBytes !== entry.size) throw notAnExport("a blob changed since it was checked");
      bytes += entry.size;
    }
    const recorded = await recordImported(db, opts.agent, header, verified, opts.now ?? new Date());
    return {
      snapshotId: recorded.snapshotId,
      created: recorded.created,
      state: recorded.state,
      exportedId: header.snapshot.id,
      blobs: { count: verified.entries.length, bytes, new: recorded.newGrants },
    };
  } catch (error) {
    // Nothing lasting from a failed import: the bytes it stored and nobody was granted go now.
    await dropUngrantedBlobs(db, storedHere).catch(() => undefined);
    throw error;
  }
}

async function recordImported(
  db: Db,
  agent: AgentScope,
  header: ExportHeader,
  verified: VerifiedExport,
  now: Date,
): Promise<{ snapshotId: string; created: boolean; state: "ready" | "superseded"; newGrants: number }> {
  const s = header.snapshot;
  return inTransaction(db, async (tx) => {
    // The importing agent gets every blob of the file: the snapshot it records is its own.
    const newGrants = await grantStoredBlobs(
      tx,
      agent.agentId,
      verified.entries.map((e) => e.digest),
    );
    const existing = await tx.snapshot.findUnique({
      where: { id: s.id },
      select: { agentId: true, manifestDigest: true, state: true },
    });
    if (existing && existing.agentId === agent.agentId && existing.manifestDigest === s.manifestDigest) {
      // Imported before: the content is stored again above; the record stays as it is.
      const state = existing.state === "ready" ? "ready" : "superseded";
      return { snapshotId: s.id, created: false, state, newGrants };
    }
    // An id another snapshot holds here: the import gets a new one.
    const snapshotId = existing ? randomUUID() : s.id;
    const repository = await findOrCreateRepository(tx, s.repository);
    let state: "ready" | "superseded" = "superseded";
    let checkpoint: {
      lineageId: string;
      workContextId: string;
      sequence: number;
      predecessorId: string | null;
    } | null = null;
    if (s.class === "checkpoint") {
      const workContextId = s.workContextId ?? "";
      const lineage = await findOrCreateLineage(tx, {
        agentId: agent.agentId,
        workContextId,
        repositoryId: repository.id,
        backendKind: s.backendKind,
        baseImage: s.baseImage,
      });
      const lineageState = await lockLineageRow(tx, lineage.id);
      const head = await tx.snapshot.findFirst({
        where: { lineageId: lineage.id, class: "checkpoint", state: "ready" },
        select: { id: true },
      });
      const last = await tx.snapshot.findFirst({
        where: { lineageId: lineage.id, class: "checkpoint", failedAt: null },
        orderBy: { sequence: "desc" },
        select: { id: true, sequence: true },
      });
      state = lineageState === "active" && !head ? "ready" : "superseded";
      checkpoint = {
        lineageId: lineage.id,
        workContextId,
        sequence: (last?.sequence ?? 0) + 1,
        predecessorId: last?.id ?? null,
      };
    }
    await tx.snapshot.create({
      data: {
        id: snapshotId,
        class: s.class,
        state: "capturing",
        agentId: agent.agentId,
        repositoryId: repository.id,
        backendKind: s.backendKind,
        baseImage: s.baseImage,
        canonicalRef: s.class === "baseline" ? s.canonicalRef : null,
        canonicalCommit: s.class === "baseline" ? s.canonicalCommit : null,
        validation: s.class === "baseline" ? (s.validation ?? { imported: true }) : undefined,
        workContextId: checkpoint?.workContextId ?? null,
        lineageId: checkpoint?.lineageId ?? null,
        sequence: checkpoint?.sequence ?? null,
        predecessorId: checkpoint?.predecessorId ?? null,
        manifestDigest: s.manifestDigest,
        headCommit: s.headCommit,
        treeId: s.treeId,
        branch: s.branch,
        sizeBytes: BigInt(s.sizeBytes),
        sourceWorkspace: "import",
        metadata: {
          manifest: { blobDigests: s.blobDigests },
          importedFrom: { snapshotId: s.id, exportedAt: header.exportedAt },
        },
        createdAt: now,
      },
      select: { id: true },
    });
    await publishLayers(tx, { snapshotId, layers: header.layers, heads: header.heads });
    await tx.snapshot.update({
      where: { id: snapshotId },
      data: state === "ready" ? { state, readyAt: now } : { state, readyAt: now, supersededAt: now },
    });
    return { snapshotId, created: true, state, newGrants };
  });
}
