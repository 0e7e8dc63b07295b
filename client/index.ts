// The Strata SDK (`strata/client`): everything an agent does with a Strata server, from any
// TypeScript or JavaScript program. `api` is every agent procedure, typed from the server's own
// router; the named steps are what an agent harness runs between turns: checkpoint a checkout,
// publish a baseline, acquire a workspace, resume a task on this host, restore a snapshot, verify a
// checkout, diff two snapshots. Each returns its
// typed result or throws a StrataError (code, message, hint, retryable) the caller can act on.
//
//   import { createStrataClient } from "strata/client";
//   const strata = createStrataClient({ url: "https://strata.example.com", token: process.env.STRATA_TOKEN! });
//   const saved = await strata.checkpoint("/workspaces/checkout", { context: "task-42" });
//   const resumed = await strata.acquire({ repository: "github.com/acme/app", context: "task-42" }, { into: "/workspaces/next" });
//
// Retries: reads, and the creating calls that carry an Idempotency-Key (connection.ts), are sent
// again with backoff while they fail with a transient error (the server or its database
// unavailable, a timeout); no other failure is ever retried. Uploads send only the blobs the
// server lacks.
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { captureAndPublish, type CapturePublishResult } from "../server/capture/capture-publish.ts";
import type { CaptureOptions } from "../server/capture/engine/capture.ts";
import { describeCheckout } from "../server/git/checkout-info.ts";
import {
  acquireAndRestore,
  loadCaptureManifest,
  restoreSnapshot,
  type AcquireAndRestoreResult,
  type RestoreSnapshotResult,
} from "../server/restore/restore-snapshot.ts";
import type { RestoreProgress } from "../server/restore/engine/restore.ts";
import { resumeTask, type ResumeTaskResult } from "../server/worktrees/resume-task.ts";
import { releaseWorktree } from "../server/worktrees/take-worktree.ts";
import { checkSnapshotWorktree } from "../server/worktrees/verify-worktree.ts";
import type { WorktreeVerification } from "../server/worktrees/worktree-verification.ts";
import { StrataError } from "../server/domain/errors.ts";
import type { SnapshotDiff, SnapshotDiffInput } from "../server/domain/snapshot-diff.ts";
import { remoteCatalog } from "./catalog-port.ts";
import { connectServer, type RetryPolicy, type ServerOptions } from "./connection.ts";
import { remoteRestorePort } from "./restore-port.ts";

export { isStrataError, StrataError, type ErrorCode } from "../server/domain/errors.ts";
export type { RetryPolicy } from "./connection.ts";
export type {
  ResumeTaskResult,
  CapturePublishResult,
  AcquireAndRestoreResult,
  RestoreSnapshotResult,
  SnapshotDiff,
  WorktreeVerification,
};

export interface StrataClientOptions extends ServerOptions {
  /** How transient failures are retried (default: 4 tries, 250 ms doubling). */
  retry?: Partial<RetryPolicy>;
}

/** Where a snapshot belongs: the repository and the environment it runs in. */
export interface KeyOptions {
  /** The repository's credential-free identity (default: host/path of the checkout's origin). */
  repository?: string;
  /** The backend kind of the key (default "local", as `strata capture`). */
  backendKind?: string;
  /** The immutable base image of the key (default "none", as `strata capture`). */
  baseImage?: string;
}

type CaptureLimits = Pick<CaptureOptions, "includeUntracked" | "maxFileBytes" | "maxSnapshotBytes" | "fullEvery">;

export interface CheckpointOptions extends KeyOptions, CaptureLimits {
  /** The work context (the task) whose lineage the checkpoint extends. */
  context: string;
  signal?: AbortSignal;
}

export interface PublishBaselineOptions extends KeyOptions, CaptureLimits {
  /** The canonical branch (default: the remote's HEAD, else main). */
  canonicalRef?: string;
  /** The remote the canonical branch is fetched from (default origin). */
  remote?: string;
  /** Also cache these dependency directories (node_modules…) for the checkout's envHash. */
  dependencies?: readonly string[];
  signal?: AbortSignal;
}

export interface AcquireKey {
  repository: string;
  backendKind?: string;
  baseImage?: string;
  /** The canonical branch (default main). */
  canonicalRef?: string;
  /** The durable work identity to resume; omit it for new work. */
  context?: string;
}

interface RestoreLocation {
  /** The directory to create (or an empty one). */
  into: string;
  /** This host's restore state, for crash records (default ~/.strata). */
  stateDir?: string;
  /** Add the dependency cache of the snapshot's envHash (default true). */
  dependencies?: boolean;
  /** Borrow objects from this repository instead of fetching into the new one. */
  objectStore?: string;
  onProgress?: (event: RestoreProgress) => void;
  signal?: AbortSignal;
}

export interface AcquireOptions extends RestoreLocation {
  /** This worker host's name (default the machine's hostname). */
  host?: string;
}

export interface ResumeOptions {
  /** This host's Strata data directory: its pool of worktrees and its shared object stores. */
  dataDir: string;
  /** This host's name (default the machine's hostname). */
  host?: string;
  /** This host's restore state, for crash records (default ~/.strata). */
  stateDir?: string;
  /** Idle worktrees of one repository the pool keeps (default 4). */
  maxIdlePerRepository?: number;
  onProgress?: (event: RestoreProgress) => void;
}

export interface ResumedTask extends ResumeTaskResult {
  /** Gives the pooled worktrees the resume took back to the pool (call it when the task is done). */
  release(): Promise<void>;
}

export interface RestoreOptions extends RestoreLocation {
  /** Fail rather than restore less than the snapshot (no degraded ladder). */
  exact?: boolean;
}

function keyOf(identity: string | null, opts: KeyOptions) {
  const repository = opts.repository ?? identity;
  if (!repository) {
    throw new StrataError("INVALID_INPUT", "The checkout has no remote to name its repository by.", {
      hint: "Pass `repository` (its identity, e.g. github.com/acme/app).",
      data: { field: "repository" },
    });
  }
  return {
    repository: { identity: repository },
    backendKind: opts.backendKind ?? "local",
    baseImage: opts.baseImage ?? "none",
  };
}

function limitsOf(opts: CaptureLimits): CaptureLimits {
  const { includeUntracked, maxFileBytes, maxSnapshotBytes, fullEvery } = opts;
  return { includeUntracked, maxFileBytes, maxSnapshotBytes, fullEvery };
}

function restoreLocation(opts: RestoreLocation) {
  return {
    stateDir: resolve(opts.stateDir ?? join(homedir(), ".strata")),
    dependencies: opts.dependencies ?? true,
    objectStore: opts.objectStore ? resolve(opts.objectStore) : null,
    objectStores: null,
    onProgress: opts.onProgress,
    signal: opts.signal,
  };
}

/** A client of one Strata server, acting as the agent whose token it holds. */
export function createStrataClient(opts: StrataClientOptions) {
  if (!/^https?:\/\//.test(opts.url)) {
    throw new StrataError("INVALID_INPUT", `The server address ${JSON.stringify(opts.url)} is not an http(s) URL.`, {
      data: { field: "url" },
    });
  }
  if (!opts.token) {
    throw new StrataError("UNAUTHORIZED", "An agent token is required.", {
      hint: "`strata agent create NAME` prints one; pass it as `token`.",
    });
  }
  const connection = connectServer(opts);
  const catalog = remoteCatalog(connection);
  const restorePort = remoteRestorePort(connection);

  return {
    /** Every agent procedure, typed from the server's router, with the retries above. */
    api: connection.api,
    /** The ports the capture and restore steps run against (the CLI's `--server` mode uses them). */
    ports: { catalog, restore: restorePort },

    /** Captures the checkout at `dir` and appends it to the lineage of the work context. */
    async checkpoint(dir: string, options: CheckpointOptions): Promise<CapturePublishResult> {
      const checkout = await describeCheckout(dir);
      const key = { ...keyOf(checkout.identity, options), workContextId: options.context };
      return captureAndPublish(catalog, {
        dir,
        checkout,
        target: { kind: "checkpoint", key },
        capture: limitsOf(options),
        signal: options.signal,
      });
    },

    /** Publishes the clean checkout at `dir` as its repository's baseline (validated against the remote). */
    async publishBaseline(dir: string, options: PublishBaselineOptions = {}): Promise<CapturePublishResult> {
      const checkout = await describeCheckout(dir);
      const canonicalRef = options.canonicalRef ?? checkout.remoteDefaultBranch ?? "main";
      return captureAndPublish(catalog, {
        dir,
        checkout,
        target: {
          kind: "baseline",
          key: { ...keyOf(checkout.identity, options), canonicalRef },
          remote: options.remote,
        },
        capture: limitsOf(options),
        dependencies: options.dependencies ? { paths: options.dependencies } : undefined,
        signal: options.signal,
      });
    },

    /**
     * Decides where a workspace starts (the work context's checkpoint, the baseline, or cold) and
     * restores it into `into`, falling down the ladder when a rung cannot be restored.
     */
    acquire(key: AcquireKey, options: AcquireOptions): Promise<AcquireAndRestoreResult> {
      return acquireAndRestore(restorePort, {
        acquire: {
          repository: { identity: key.repository },
          backendKind: key.backendKind ?? "local",
          baseImage: key.baseImage ?? "none",
          canonicalRef: key.canonicalRef ?? "main",
          workContextId: key.context,
        },
        into: resolve(options.into),
        host: options.host ?? hostname(),
        ...restoreLocation(options),
      });
    },

    /**
     * Resumes a task on this host: each checkout it recorded continues in place when it is still
     * its snapshot, else is restored into this host's pool (an idle clean worktree reused when
     * there is one). The worktrees taken stay held by this process until `release()`.
     */
    async resume(target: { context: string } | { snapshot: string }, options: ResumeOptions): Promise<ResumedTask> {
      const result = await resumeTask(
        {
          port: restorePort,
          plan: (input) => connection.read(() => connection.client.workspace.resume.query(input)),
          endHold: async (holdId) => {
            await connection.call(() => connection.client.workspace.releaseHold.mutate({ holdId, reason: "resumed" }));
          },
        },
        {
          target: "context" in target ? { workContextId: target.context } : { snapshotId: target.snapshot },
          dataDir: resolve(options.dataDir),
          host: options.host ?? hostname(),
          stateDir: resolve(options.stateDir ?? join(homedir(), ".strata")),
          maxIdlePerRepository: options.maxIdlePerRepository,
          onProgress: options.onProgress,
        },
      );
      return {
        ...result,
        release: async () => {
          await Promise.all(result.held.map((held) => releaseWorktree(held)));
        },
      };
    },

    /** Restores one snapshot into a new (or empty) directory, verified to its recorded tree. */
    restore(snapshotId: string, options: RestoreOptions): Promise<RestoreSnapshotResult> {
      return restoreSnapshot(restorePort, {
        snapshotId,
        into: resolve(options.into),
        exactOnly: Boolean(options.exact),
        hold: true,
        ...restoreLocation(options),
      });
    },

    /** A snapshot's record and the manifest its capture stored (HEAD, branch, tree, patches, omissions). */
    async manifest(snapshotId: string, options: { signal?: AbortSignal } = {}) {
      const snapshot = await restorePort.getSnapshot(snapshotId);
      const { manifest } = await loadCaptureManifest(restorePort, snapshot, options.signal);
      return { snapshot, manifest };
    },

    /**
     * The files that differ between two of the agent's snapshots of one repository, with a
     * unified diff per text file (sizes bounded: what was cut is said; binary files named).
     */
    diff(from: string, to: string, options: Omit<SnapshotDiffInput, "from" | "to"> = {}): Promise<SnapshotDiff> {
      return connection.api.snapshot.diff.query({ ...options, from, to });
    },

    /** Whether the checkout at `dir` is still exactly what the snapshot recorded (read only). */
    verify(dir: string, snapshotId: string, options: { signal?: AbortSignal } = {}): Promise<WorktreeVerification> {
      return checkSnapshotWorktree(restorePort, { snapshotId, dir: resolve(dir), signal: options.signal });
    },
  };
}

export type StrataClient = ReturnType<typeof createStrataClient>;
