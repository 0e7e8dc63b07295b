// Backends: how a workspace's files become an immutable artifact and back. The catalog decides
// which artifact a task may restore (lineage, classes, keys, pins); a backend only mints,
// restores, deletes and describes artifacts, named by an opaque reference that carries no
// lineage field. The catalog stores the reference with the kind of the backend that minted it,
// and every later operation on the artifact goes to that backend through `backendFor(kind)`.
//
// Two kinds live on this host today, both keeping their bytes in a content store (the catalog's
// blob store, or one in memory):
// - `git`: a checkout's HEAD, branch, dirty and untracked files and unpushed commits, through a
//   private index (server/capture/engine); ignored files are left out.
// - `dir`: a whole directory, ignored dependency and build caches included (backends/dir).
import type { DegradableCause } from "../domain/restore-result.ts";
import type { StrataError } from "../domain/errors.ts";
import type { BlobSource } from "../restore/engine/restore-blobs.ts";
import type { ContentStore } from "./content-store.ts";

interface BackendCapabilities {
  /** Mints immutable artifacts; a kind without them cold-starts when no live workspace is held. */
  snapshots: boolean;
  /** Keeps a paused workspace's files while idle, so a live hold may last 14 days, not one hour. */
  idlePersistentHolds: boolean;
  /** Captures ignored dependency and build directories (node_modules, .venv, target…). */
  dependencyCaches: boolean;
}

/** What a capture needs of a content store (an HTTP client of the catalog has just this). */
export type CaptureStore = Pick<ContentStore, "missing" | "put" | "open">;

interface CaptureContext {
  store: CaptureStore;
  /** The reference of the last capture of this workspace (an artifact is built on it), or null. */
  previous?: string | null;
  /** Backend state kept between captures on this host (stat caches, private indexes). */
  cacheDir?: string;
  /** `dir`: capture only these paths below the workspace (its dependency directories). */
  include?: readonly string[] | null;
  signal?: AbortSignal;
}

interface CapturedArtifact {
  /** `unchanged`: the workspace is what `previous` holds; `ref` is `previous`. */
  outcome: "captured" | "unchanged";
  ref: string;
  /** The bytes the artifact holds (its content, not what was uploaded). */
  sizeBytes: number;
  uploaded: { blobs: number; bytes: number };
  /** What the capture left out and why (secrets, links out of the tree, …). */
  omitted: { path: string; reason: string }[];
}

interface RestoreContext {
  /** Where content is read (a ContentStore reads small pieces many at a time). */
  source: BlobSource & Partial<Pick<ContentStore, "readMany">>;
  /** This host's restore state (crash records of interrupted restores). */
  stateDir: string;
  /** Fail on the first missing or damaged content instead of restoring what can be. */
  exactOnly?: boolean;
  /** The catalog's name for the artifact, recorded in the restored workspace where the kind can. */
  snapshotId?: string;
  signal?: AbortSignal;
}

interface RestoreMissing {
  /** Files that do not have their recorded content. */
  paths: string[];
  /** False when the content that is missing was needed to know which files it held. */
  pathsComplete: boolean;
  /** Everything missing, one line each (`path:…`, `change-set:…`, `commit:…`). */
  entries: string[];
  cause: DegradableCause | null;
  message: string | null;
}

/**
 * What a restore gave. `restored`: exactly the artifact, verified (`verified` is the digest or
 * tree id it was verified against); `degraded`: less, verified as what it holds, with what is
 * missing; `unrestored`: nothing was written, and why (UNSAFE_TARGET, INVALID_SNAPSHOT, …).
 */
export type BackendRestoreOutcome =
  | { status: "restored"; path: string; verified: string; detail?: unknown }
  | { status: "degraded"; path: string; verified: string; missing: RestoreMissing; detail?: unknown }
  | { status: "unrestored"; error: StrataError };

interface ArtifactDescription {
  kind: string;
  ref: string;
  /** False once deleted (or never stored here). */
  exists: boolean;
  sizeBytes: number | null;
  files: number | null;
  capturedAt: string | null;
  /** One line for the dashboard. */
  summary: string;
}

/** The description of an artifact the backend no longer has. */
export function goneArtifact(kind: string, ref: string): ArtifactDescription {
  return { kind, ref, exists: false, sizeBytes: null, files: null, capturedAt: null, summary: "deleted" };
}

export interface SnapshotBackend {
  readonly kind: string;
  readonly capabilities: BackendCapabilities;
  capture(workspace: string, ctx: CaptureContext): Promise<CapturedArtifact>;
  restore(ref: string, into: string, ctx: RestoreContext): Promise<BackendRestoreOutcome>;
  /**
   * Ends the artifact: afterwards it no longer restores. Idempotent (`deleted: false` when it was
   * already gone). Content shared by digest with other artifacts is left to garbage collection.
   */
  delete(ref: string, ctx: { store: ContentStore }): Promise<{ deleted: boolean }>;
  describe(ref: string, ctx: { source: BlobSource }): Promise<ArtifactDescription>;
  /**
   * The stored blobs the artifact needs, read from its own records: for a layered artifact, down
   * to the first earlier artifact that `known` says is kept already (`base`), whose content is not
   * listed again. What the catalog protects from collection while it names the artifact.
   */
  content(ref: string, ctx: { source: BlobSource; known(ref: string): Promise<boolean> }): Promise<ArtifactContent>;
}

interface ArtifactContent {
  digests: string[];
  /** The earlier artifact the rest of the content is kept by, or null. */
  base: string | null;
}
