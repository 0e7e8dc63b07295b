// Capturing a checkout and publishing it: upload the blobs the catalog lacks, then append a
// checkpoint (fenced on the lineage head seen before capturing) or publish a baseline (with
// evidence gathered right after a fetch), then register the content as layers. The catalog is a
// port, so the same steps run against a local database or a Strata server over HTTP.
//
// The catalog's own modules (Prisma, the blob store, the lineage writes) are loaded by
// localCatalog when it first needs them: a capture that finds nothing new (the common case, an
// agent captures at every turn) never loads them.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import type { Db } from "../db/client.ts";
import type { BaselineEvidence } from "../domain/baseline-evidence.ts";
import {
  canonicalManifestBytes,
  captureManifestSchema,
  manifestBlobDigests,
  manifestContentBytes,
  type CaptureManifest,
} from "../domain/capture-manifest.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { StrataError, isStrataError } from "../domain/errors.ts";
import { manifestDigest, normalizeBlobDigests, type Manifest } from "../domain/manifest.ts";
import type { AgentScope } from "../domain/scope.ts";
import {
  baselineKeySchema,
  lineageKeySchema,
  type BaselineKey,
  type LineageKey,
  type Source,
} from "../domain/snapshot-keys.ts";
import { captureCheckout, type CaptureOptions } from "./engine/capture.ts";
import { describeCheckout, type CheckoutInfo } from "../git/checkout-info.ts";
import { collectBaselineEvidence } from "./engine/evidence.ts";
import { privateIndexDirectory } from "./engine/private-index.ts";
import type { PublishBaselineInput } from "../lineage/baselines.ts";
import type { AppendCheckpointInput } from "../lineage/checkpoints.ts";
import type { CacheCaptureResult } from "../caches/cache-dependencies.ts";
import type { DependencyCachePort } from "../caches/dependency-port.ts";

// --- the catalog, local or remote ------------------------------------------------------------------

interface PublishedSnapshot {
  outcome: "appended" | "published" | "unchanged";
  snapshotId: string;
}

/** What publishing needs from a catalog. `localCatalog` and the HTTP client both provide it. */
export interface CatalogPort {
  /** The digests the catalog lacks (asking restarts the grace window of the others). */
  missingBlobs(digests: readonly string[]): Promise<string[]>;
  putBlob(digest: string, bytes: Uint8Array): Promise<void>;
  /** The ready checkpoint head of a lineage, or null. */
  lineageHeadId(key: LineageKey): Promise<string | null>;
  /** The ready baseline of a baseline key, or null. */
  baselineHeadId(key: BaselineKey): Promise<string | null>;
  appendCheckpoint(input: AppendCheckpointInput): Promise<PublishedSnapshot>;
  publishBaseline(input: PublishBaselineInput): Promise<PublishedSnapshot>;
  /** Registers a ready snapshot's layers and heads (once; a repeat is idempotent). */
  publishLayers(input: { snapshotId: string; layers: LayerDescriptor[]; heads: string[] }): Promise<void>;
  /** Dependency caches (a baseline's dependency directories), where the catalog has them. */
  dependencies?: DependencyCachePort;
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** The catalog in this process's database, acting as one agent. */
export function localCatalog(db: Db, agent: AgentScope): CatalogPort {
  return {
    async missingBlobs(digests) {
      const { missingBlobs } = await import("../content/blobs.ts");
      return missingBlobs(db, agent.agentId, digests);
    },
    async putBlob(digest, bytes) {
      const { putBlob } = await import("../content/blobs.ts");
      await putBlob(db, { digest, body: once(bytes), grantTo: agent.agentId });
    },
    async lineageHeadId(key) {
      const head = await db.snapshot.findFirst({
        where: {
          agentId: agent.agentId,
          class: "checkpoint",
          state: "ready",
          workContextId: key.workContextId,
          backendKind: key.backendKind,
          baseImage: key.baseImage,
          repository: { identity: key.repository.identity },
        },
        select: { id: true },
      });
      return head?.id ?? null;
    },
    async baselineHeadId(key) {
      const head = await db.snapshot.findFirst({
        where: {
          agentId: agent.agentId,
          class: "baseline",
          state: "ready",
          canonicalRef: key.canonicalRef,
          backendKind: key.backendKind,
          baseImage: key.baseImage,
          repository: { identity: key.repository.identity },
        },
        select: { id: true },
      });
      return head?.id ?? null;
    },
    async appendCheckpoint(input) {
      const { appendCheckpoint } = await import("../lineage/checkpoints.ts");
      const result = await appendCheckpoint(db, { ...input, agent });
      return { outcome: result.outcome, snapshotId: result.snapshot.id };
    },
    async publishBaseline(input) {
      const { publishBaseline } = await import("../lineage/baselines.ts");
      const result = await publishBaseline(db, { ...input, agent });
      return { outcome: result.outcome, snapshotId: result.snapshot.id };
    },
    async publishLayers(input) {
      const { publishSnapshot } = await import("../content/layers.ts");
      await publishSnapshot(db, { ...input, agentId: agent.agentId });
    },
    dependencies: lazyDependencyPort(async () =>
      (await import("../caches/dependency-port.ts")).localDependencyPort(db, agent),
    ),
  };
}

/** A port whose modules load on first use (a capture without dependencies never loads them). */
export function lazyDependencyPort(load: () => Promise<DependencyCachePort>): DependencyCachePort {
  let port: Promise<DependencyCachePort> | null = null;
  const get = () => (port ??= load());
  return {
    store: {
      missing: async (digests) => (await get()).store.missing(digests),
      put: async (digest, bytes) => (await get()).store.put(digest, bytes),
      open: async (digest, signal) => (await get()).store.open(digest, signal),
    },
    find: async (input) => (await get()).find(input),
    publish: async (input) => (await get()).publish(input),
  };
}

// --- what a capture becomes in the catalog -----------------------------------------------------------

const LAYER_KINDS = { patch: "patch", bundle: "bundle", manifest: "manifest" } as const;

/** A layer uuid that only these bytes can have: retrying a publish names the same layer. */
function uuidForDigest(digest: string): string {
  const hex = createHash("sha256").update(`strata manifest layer ${digest}`).digest("hex");
  const variant = ((parseInt(hex[16] ?? "8", 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export interface ManifestBlob {
  digest: string;
  bytes: Buffer;
}

export function manifestBlob(manifest: CaptureManifest): ManifestBlob {
  const bytes = canonicalManifestBytes(manifest);
  return { digest: createHash("sha256").update(bytes).digest("hex"), bytes };
}

/** The catalog's short form: the tree, the head, and every blob the snapshot needs. */
function catalogManifest(manifest: CaptureManifest, blob: ManifestBlob): Manifest {
  if (!manifest.head) {
    throw new StrataError("INVALID_INPUT", "The checkout has no commit yet; there is nothing to publish.", {
      hint: "Make a first commit, then capture again.",
    });
  }
  return {
    treeId: manifest.tree,
    head: manifest.head,
    branch: manifest.branch,
    degradedFrom: manifest.degradedFrom ?? null,
    blobDigests: [...manifestBlobDigests(manifest), blob.digest],
    sizeBytes: manifestContentBytes(manifest) + blob.bytes.length,
  };
}

/**
 * The short manifest as stored bytes whose sha256 is the digest the catalog computes for it
 * (manifest.ts), so a snapshot's `manifestDigest` names a stored blob like any other content.
 * Null if that digest is ever computed differently: then the snapshot simply has no such blob.
 */
function catalogManifestBlob(short: Manifest): ManifestBlob | null {
  const canonical = [short.treeId, short.head, short.branch, normalizeBlobDigests(short.blobDigests), short.sizeBytes];
  const bytes = Buffer.from(JSON.stringify(canonical), "utf8");
  const digest = createHash("sha256").update(bytes).digest("hex");
  return digest === manifestDigest(short) ? { digest, bytes } : null;
}

/** The layers of a capture: its patch chain, its bundle and its manifest, with their heads. */
export function captureLayers(
  manifest: CaptureManifest,
  blob: ManifestBlob,
): { layers: LayerDescriptor[]; heads: string[] } {
  const layers: LayerDescriptor[] = manifest.patches.map((p) => ({
    uuid: p.uuid,
    parentUuid: p.parent,
    digest: p.digest,
    sizeBytes: p.size,
    kind: LAYER_KINDS.patch,
  }));
  const heads: string[] = [];
  const top = manifest.patches.at(-1);
  if (top) heads.push(top.uuid);
  if (manifest.bundle) {
    const b = manifest.bundle;
    layers.push({ uuid: b.uuid, parentUuid: null, digest: b.digest, sizeBytes: b.size, kind: LAYER_KINDS.bundle });
    heads.push(b.uuid);
  }
  const manifestUuid = uuidForDigest(blob.digest);
  layers.push({
    uuid: manifestUuid,
    parentUuid: null,
    digest: blob.digest,
    sizeBytes: blob.bytes.length,
    kind: LAYER_KINDS.manifest,
  });
  heads.push(manifestUuid);
  return { layers, heads };
}

// --- what this checkout published last ------------------------------------------------------------------

interface PublishedRecord {
  snapshotId: string;
  manifest: CaptureManifest;
}

const publishedRecordSchema = z.object({ snapshotId: z.string().min(1), manifest: captureManifestSchema });

function recordFile(cacheDir: string, target: unknown): string {
  const key = createHash("sha256").update(JSON.stringify(target)).digest("hex").slice(0, 24);
  return join(cacheDir, `published-${key}.json`);
}

async function readRecord(file: string): Promise<PublishedRecord | null> {
  try {
    return publishedRecordSchema.parse(JSON.parse(await readFile(file, "utf8")));
  } catch {
    // Missing or damaged: the next capture is simply a full one.
    return null;
  }
}

async function writeRecord(file: string, record: PublishedRecord): Promise<void> {
  await mkdir(join(file, ".."), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(record));
  await rename(tmp, file);
}

// --- capture, then publish -------------------------------------------------------------------------------

export type CapturePublishTarget =
  | { kind: "checkpoint"; key: z.input<typeof lineageKeySchema> }
  | {
      kind: "baseline";
      key: z.input<typeof baselineKeySchema>;
      /** The remote to fetch the canonical ref from (default: the branch's, else origin). */
      remote?: string;
      /** The ready baseline the publisher saw; looked up when left out. */
      observedHeadId?: string | null;
    };

export type CapturePublishStep = "lookup" | "evidence" | "capture" | "upload" | "publish" | "layers" | "dependencies";

export interface CapturePublishOptions {
  dir: string;
  target: CapturePublishTarget;
  /** What describeCheckout(dir) said, when the caller asked already (it is not asked again). */
  checkout?: CheckoutInfo;
  capture?: Omit<CaptureOptions, "previous" | "snapshotRef" | "signal">;
  source?: Source;
  /** A baseline only: also capture these dependency directories as the cache of its envHash. */
  dependencies?: { paths: readonly string[] };
  signal?: AbortSignal;
  onProgress?: (step: CapturePublishStep, detail?: { done: number; total: number; bytes: number }) => void;
}

export interface CapturePublishResult {
  outcome: "appended" | "published" | "unchanged";
  /** The snapshot that now holds this state (for `unchanged`, the one that already did). */
  snapshotId: string;
  target: CapturePublishTarget["kind"];
  manifest: CaptureManifest;
  /** The sha256 of the stored manifest blob (null when nothing new was recorded). */
  manifestBlobDigest: string | null;
  uploaded: { blobs: number; bytes: number };
  /** Whether the content is registered as layers; when not, the blobs are still kept by the snapshot. */
  layers: { registered: true } | { registered: false; error: { code: string; message: string } };
  evidence: BaselineEvidence | null;
  /** The dependency cache captured with a baseline (null when none was asked for). */
  dependencies: CacheCaptureResult | null;
}

/**
 * A catalog that cannot be reached (a database down, a server gone) is BLOB_STORE_FAILED: the
 * capture itself succeeded and nothing was recorded. The catalog's own refusals keep their code.
 */
function storeFailed(error: unknown): StrataError {
  if (isStrataError(error) && error.code !== "UNAVAILABLE") return error;
  // The cause's own words (a driver's report, the database's address) stay in `cause`, for logs;
  // the message, which a job stores and an agent reads, names only what kind of failure it was.
  const kind = isStrataError(error) ? error.code : (error as NodeJS.ErrnoException | null)?.code;
  const reason = typeof kind === "string" && /^[A-Z0-9_]+$/.test(kind) ? ` (${kind})` : "";
  return new StrataError("BLOB_STORE_FAILED", `The catalog could not be reached${reason}.`, {
    hint: "Nothing was recorded. Check the server or database, then capture again.",
    cause: error,
  });
}

function viaStore<T>(promise: Promise<T>): Promise<T> {
  return promise.catch((error: unknown) => Promise.reject(storeFailed(error)));
}

/**
 * Captures `dir` and publishes it to `port`. Throws a StrataError when nothing could be recorded
 * (the capture's own reason, BLOB_STORE_FAILED, EVIDENCE_INVALID, FENCE_LOST, BASELINE_STALE…).
 * With `dependencies`, a published baseline's dependency directories become the cache of its
 * envHash (a failure there is thrown: the baseline itself is published).
 */
export async function captureAndPublish(port: CatalogPort, opts: CapturePublishOptions): Promise<CapturePublishResult> {
  if (opts.dependencies && opts.target.kind !== "baseline") {
    throw new StrataError("INVALID_INPUT", "Dependency directories are cached with a baseline only.", {
      hint: "Capture them with --baseline.",
    });
  }
  const result = await captureCheckoutAndPublish(port, opts);
  if (!opts.dependencies || opts.target.kind !== "baseline") return result;
  if (!port.dependencies) {
    throw new StrataError("INVALID_INPUT", "This catalog does not keep dependency caches.", {
      hint: "Capture without dependencies, or against a Strata server that has them.",
    });
  }
  opts.onProgress?.("dependencies");
  const { captureDependencies } = await import("../caches/cache-dependencies.ts");
  const dependencies = await viaStore(
    captureDependencies(port.dependencies, {
      root: result.manifest.root,
      repository: baselineKeySchema.parse(opts.target.key).repository,
      envHash: result.manifest.envHash,
      paths: opts.dependencies.paths,
      cacheDir: join(
        privateIndexDirectory((opts.checkout ?? (await describeCheckout(opts.dir))).layout, opts.capture?.cacheDir),
        "dir",
      ),
      signal: opts.signal,
    }),
  );
  return { ...result, dependencies };
}

async function captureCheckoutAndPublish(
  port: CatalogPort,
  opts: CapturePublishOptions,
): Promise<Omit<CapturePublishResult, "dependencies"> & { dependencies: null }> {
  const progress = opts.onProgress ?? (() => undefined);
  const checkout =
    opts.checkout ?? (await describeCheckout(opts.dir, { signal: opts.signal, gitPath: opts.capture?.gitPath }));
  const cacheDir = privateIndexDirectory(checkout.layout, opts.capture?.cacheDir);
  const source = opts.source ?? { workspace: checkout.layout.root, host: hostname() || "unknown" };
  const target = opts.target;

  progress("lookup");
  let observedHeadId: string | null;
  let evidence: BaselineEvidence | null = null;
  if (target.kind === "checkpoint") {
    observedHeadId = await viaStore(port.lineageHeadId(lineageKeySchema.parse(target.key)));
  } else {
    const key = baselineKeySchema.parse(target.key);
    observedHeadId =
      target.observedHeadId !== undefined ? target.observedHeadId : await viaStore(port.baselineHeadId(key));
    progress("evidence");
    const collected = await collectBaselineEvidence(opts.dir, {
      canonicalRef: key.canonicalRef,
      remote: target.remote,
      signal: opts.signal,
      gitPath: opts.capture?.gitPath,
    });
    if (collected.failed.length > 0) {
      throw new StrataError(
        "EVIDENCE_INVALID",
        `The checkout is not a clean baseline: ${collected.failed.join(", ")}.`,
        {
          hint: "Only a freshly fetched, clean checkout of the canonical branch can be a baseline.",
          data: { failedChecks: collected.failed },
        },
      );
    }
    evidence = collected.evidence;
  }

  const record = recordFile(cacheDir, target.kind === "checkpoint" ? target.key : { baseline: target.key });
  const known = target.kind === "checkpoint" ? await readRecord(record) : null;
  // Only the capture the catalog still has as this lineage's head can be built upon.
  let previous = known && observedHeadId !== null && known.snapshotId === observedHeadId ? known.manifest : null;

  const workContext = target.kind === "checkpoint" ? target.key.workContextId : "baseline";
  const capture = async () => {
    progress("capture");
    const result = await captureCheckout(opts.dir, {
      ...opts.capture,
      previous,
      signal: opts.signal,
      snapshotRef: { workContext },
      // A worktree a restore wrote only partly names the snapshot it could not fully restore.
      degradedFrom:
        checkout.restoredFrom && checkout.restoredFrom.stage !== "exact" ? checkout.restoredFrom.snapshotId : null,
    });
    if (result.outcome === "unavailable") throw result.error;
    return result;
  };

  let captured = await capture();
  if (captured.outcome === "unchanged") {
    // Only possible against `previous`, which exists only when the head was observed.
    if (observedHeadId === null) throw new StrataError("INTERNAL", "An unchanged capture without a head.");
    return {
      outcome: "unchanged",
      snapshotId: observedHeadId,
      target: target.kind,
      manifest: captured.manifest,
      manifestBlobDigest: null,
      uploaded: { blobs: 0, bytes: 0 },
      layers: { registered: true },
      evidence,
      dependencies: null,
    };
  }

  // Everything the snapshot needs must be stored. Content of the previous capture that the
  // catalog no longer has (collected) cannot be sent again: capture afresh, with a full patch.
  const prepare = async (result: typeof captured & { outcome: "captured" }) => {
    const blob = manifestBlob(result.manifest);
    const short = catalogManifest(result.manifest, blob);
    const extra = new Map<string, Buffer>([[blob.digest, blob.bytes]]);
    const shortBlob = catalogManifestBlob(short);
    if (shortBlob) extra.set(shortBlob.digest, shortBlob.bytes);
    const needed = [...manifestBlobDigests(result.manifest), ...extra.keys()];
    const missing = await viaStore(port.missingBlobs(needed));
    const bytesOf = (digest: string) => result.artifacts.get(digest) ?? extra.get(digest);
    return { result, blob, short, missing, bytesOf, lost: missing.filter((d) => !bytesOf(d)) };
  };
  let prepared = await prepare(captured);
  if (previous && prepared.lost.length > 0) {
    previous = null;
    captured = await capture();
    if (captured.outcome !== "captured") throw new StrataError("INTERNAL", "A fresh capture came back unchanged.");
    prepared = await prepare(captured);
  }
  if (prepared.lost.length > 0) {
    throw new StrataError("BLOB_MISSING", `Content ${prepared.lost.join(", ")} is neither stored nor in this capture.`);
  }
  const { blob, short, missing } = prepared;

  progress("upload", { done: 0, total: missing.length, bytes: 0 });
  let uploadedBytes = 0;
  for (const [i, digest] of missing.entries()) {
    const bytes = prepared.bytesOf(digest);
    if (!bytes) continue;
    opts.signal?.throwIfAborted();
    await viaStore(port.putBlob(digest, bytes));
    uploadedBytes += bytes.length;
    progress("upload", { done: i + 1, total: missing.length, bytes: uploadedBytes });
  }

  progress("publish");
  const manifest = prepared.result.manifest;
  // The git backend's artifact: the full manifest, stored as a blob (backends/git-backend.ts).
  const artifact = { kind: "git", ref: blob.digest };
  let published: PublishedSnapshot;
  if (target.kind === "checkpoint") {
    published = await viaStore(
      port.appendCheckpoint({ key: target.key, observedHeadId, manifest: short, source, artifact }),
    );
  } else {
    if (!evidence || manifest.head !== evidence.head || manifest.patches.length > 0) {
      throw new StrataError("EVIDENCE_INVALID", "The checkout changed between validation and capture.", {
        hint: "Capture the baseline again on a quiet checkout.",
        data: { failedChecks: ["manifest_matches_evidence"] },
      });
    }
    published = await viaStore(
      port.publishBaseline({
        key: target.key,
        commit: manifest.head,
        manifest: short,
        evidence,
        observedHeadId,
        source,
        artifact,
      }),
    );
  }

  progress("layers");
  let layers: CapturePublishResult["layers"] = { registered: true };
  if (published.outcome !== "unchanged") {
    try {
      await port.publishLayers({ snapshotId: published.snapshotId, ...captureLayers(manifest, blob) });
    } catch (error) {
      // The snapshot is recorded and its blobs are kept through its manifest; only the layer
      // view of it is missing, which a later publish of the snapshot can still add.
      const typed = isStrataError(error) ? error : null;
      layers = { registered: false, error: { code: typed?.code ?? "INTERNAL", message: (error as Error).message } };
    }
  }
  if (target.kind === "checkpoint") await writeRecord(record, { snapshotId: published.snapshotId, manifest });

  return {
    outcome: published.outcome,
    snapshotId: published.snapshotId,
    target: target.kind,
    manifest,
    manifestBlobDigest: blob.digest,
    uploaded: { blobs: missing.length, bytes: uploadedBytes },
    layers,
    evidence,
    dependencies: null,
  };
}
