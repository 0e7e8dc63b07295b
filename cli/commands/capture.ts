import type { Command } from "commander";
import type {
  CapturePublishOptions,
  CapturePublishResult,
  CapturePublishStep,
  CatalogPort,
  CapturePublishTarget,
} from "../../server/capture/capture-publish.ts";
import type { CatalogHandle } from "../../server/db/client.ts";
import { isStrataError, type ErrorCode } from "../../server/domain/errors.ts";
import type { CheckoutInfo } from "../../server/git/checkout-info.ts";
import { CliError, EXIT, emit, progress, progressDone } from "../output.ts";

/**
 * Exit codes of `strata capture`, beyond the shared ones (0 ok, 1 failure, 2 usage, 3 config,
 * 4 database): what went wrong decides what a script should do next.
 */
export const CAPTURE_EXIT = {
  ...EXIT,
  /** Nothing could be captured: not a repository, git missing, a path that cannot be read. */
  NOT_CAPTURED: 5,
  /** The catalog refused: evidence invalid, a newer baseline, a lost fence, a retired lineage. */
  REFUSED: 6,
  /** The catalog could not be reached or did not store the content; nothing was recorded. */
  STORAGE: 7,
  /** The agent token (or --agent) was not accepted. */
  UNAUTHORIZED: 8,
} as const;

export function exitCodeFor(code: ErrorCode): number {
  switch (code) {
    case "NOT_A_REPOSITORY":
    case "GIT_UNAVAILABLE":
    case "UNREADABLE_PATH":
    case "GIT_FAILED":
    case "TIMEOUT":
      return CAPTURE_EXIT.NOT_CAPTURED;
    case "EVIDENCE_INVALID":
    case "BASELINE_STALE":
    case "FENCE_LOST":
    case "SNAPSHOT_RETIRED":
    case "CONFLICT":
      return CAPTURE_EXIT.REFUSED;
    case "BLOB_STORE_FAILED":
    case "BLOB_MISSING":
    case "BLOB_CORRUPT":
    case "UNAVAILABLE":
      return CAPTURE_EXIT.STORAGE;
    case "UNAUTHORIZED":
    case "FORBIDDEN":
      return CAPTURE_EXIT.UNAUTHORIZED;
    case "INVALID_INPUT":
      return CAPTURE_EXIT.USAGE;
    default:
      return CAPTURE_EXIT.FAILURE;
  }
}

interface CaptureCliOptions {
  context?: string;
  baseline?: boolean;
  canonicalRef?: string;
  remote?: string;
  repository?: string;
  backend: string;
  baseImage: string;
  server?: string;
  agent?: string;
  untracked: boolean;
  maxFileBytes?: string;
  maxSnapshotBytes?: string;
  fullEvery?: string;
  deps?: string | boolean;
  json?: boolean;
}

/** The dependency directories `--deps` names (a comma-separated list, or the usual ones). */
async function dependencyPaths(deps: string | boolean | undefined): Promise<string[] | null> {
  if (deps === undefined || deps === false) return null;
  if (deps === true) return (await import("../../server/caches/dependency-caches.ts")).DEFAULT_CACHE_PATHS;
  const paths = deps
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  if (paths.length === 0) throw new CliError("--deps needs a comma-separated list of directories", EXIT.USAGE);
  return paths;
}

function positiveInteger(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new CliError(`--${name} must be a positive integer`, EXIT.USAGE);
  return n;
}

const STEPS: Record<CapturePublishStep, string> = {
  lookup: "looking up the current head",
  evidence: "fetching and validating the canonical branch",
  capture: "capturing",
  upload: "uploading",
  publish: "publishing",
  layers: "registering layers",
  dependencies: "capturing the dependency directories",
};

function bar(done: number, total: number): string {
  const width = 20;
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
}

function showProgress(step: CapturePublishStep, detail?: { done: number; total: number; bytes: number }): void {
  if (step === "upload" && detail) {
    const mib = (detail.bytes / (1024 * 1024)).toFixed(1);
    progress(
      `strata: ${STEPS.upload} ${bar(detail.done, detail.total)} ${detail.done}/${detail.total} blobs, ${mib} MiB`,
    );
  } else {
    progress(`strata: ${STEPS[step]}…`);
  }
}

function targetFor(checkout: CheckoutInfo, opts: CaptureCliOptions): CapturePublishTarget {
  const identity = opts.repository ?? checkout.identity;
  if (!identity) {
    throw new CliError(
      "the checkout has no remote to name its repository by: pass --repository <identity>",
      EXIT.USAGE,
    );
  }
  const where = { repository: { identity }, backendKind: opts.backend, baseImage: opts.baseImage };
  if (opts.context) return { kind: "checkpoint", key: { ...where, workContextId: opts.context } };
  return {
    kind: "baseline",
    key: { ...where, canonicalRef: opts.canonicalRef ?? checkout.remoteDefaultBranch ?? "main" },
    remote: opts.remote,
  };
}

function describe(result: CapturePublishResult): string {
  const what = result.target === "checkpoint" ? "checkpoint" : "baseline";
  const head = result.manifest.head?.slice(0, 12) ?? "(no commit)";
  const lines = [
    result.outcome === "unchanged"
      ? `Unchanged: ${what} ${result.snapshotId} already holds this state (HEAD ${head}).`
      : `${result.outcome === "appended" ? "Appended" : "Published"} ${what} ${result.snapshotId}: ` +
        `HEAD ${head}, tree ${result.manifest.tree.slice(0, 12)}, ${result.manifest.patches.length} patch(es), ` +
        `${result.manifest.bundle ? `a bundle of ${result.manifest.bundle.commits.length} unpushed commit(s)` : "no bundle"}; ` +
        `uploaded ${result.uploaded.blobs} blob(s), ${result.uploaded.bytes} bytes.`,
  ];
  const omitted = result.manifest.omitted;
  if (omitted.length > 0) {
    const byReason = new Map<string, number>();
    for (const o of omitted) byReason.set(o.reason, (byReason.get(o.reason) ?? 0) + 1);
    lines.push(`Left out: ${[...byReason].map(([reason, n]) => `${n} ${reason}`).join(", ")}.`);
  }
  const deps = result.dependencies;
  if (deps?.outcome === "skipped") lines.push(`Dependencies not cached: ${deps.reason}.`);
  else if (deps) {
    lines.push(
      `Dependencies ${deps.outcome === "unchanged" ? "already cached" : "cached"} for envHash ${deps.envHash.slice(0, 12)}: ` +
        `${deps.paths.join(", ")}; uploaded ${deps.uploaded.blobs} blob(s), ${deps.uploaded.bytes} bytes` +
        `${deps.omitted.length > 0 ? `; left out ${deps.omitted.length} (secrets, links out of the checkout)` : ""}.`,
    );
  }
  if (!result.layers.registered) {
    lines.push(`Warning: the content was stored but not registered as layers (${result.layers.error.code}).`);
  }
  return lines.join("\n");
}

/**
 * The pooled worktree of this host's pool the checkout is, with whether the capturing task
 * still holds it; null for any other checkout (a path test; nothing of the pool is loaded), or
 * when the configuration is unusable.
 */
async function pooledCheckout(root: string, owner: string | null) {
  const [{ loadConfig }, { poolDirectory, pooledWorktreeName }] = await Promise.all([
    import("../../server/config/config.ts"),
    import("../../server/worktrees/pool-directory.ts"),
  ]);
  let config;
  try {
    config = loadConfig();
  } catch {
    return null;
  }
  const poolDir = poolDirectory(config.dataDir);
  const name = await pooledWorktreeName(root, poolDir);
  if (name === null) return null;
  const pooling = await import("../../server/worktrees/capture-pooled.ts");
  const worktree = await pooling.capturedWorktree(name, { poolDir, host: config.host, owner });
  return worktree && { ...worktree, record: pooling.recordCapturedSnapshot };
}

function warningLine(warning: { kind: string; message: string }): string {
  return `strata: warning (${warning.kind}): ${warning.message}\n`;
}

/**
 * Runs a capture against this machine's catalog. The catalog is first read over its driver
 * (quick-catalog.ts: the migration check, the agent, the lineage head); Prisma is opened only
 * when the capture has something to publish.
 */
async function captureLocally(
  agentName: string | undefined,
  run: (port: CatalogPort) => Promise<CapturePublishResult>,
): Promise<CapturePublishResult> {
  const [{ loadClientConfig, loadConfig }, { openQuickCatalog }, { lazyDependencyPort, localCatalog }] =
    await Promise.all([
      import("../../server/config/config.ts"),
      import("../quick-catalog.ts"),
      import("../../server/capture/capture-publish.ts"),
    ]);
  const url = loadConfig().databaseUrl;
  const quick = await openQuickCatalog(url);
  const prisma: { opened?: Promise<CatalogHandle> } = {};
  const catalog = () =>
    (prisma.opened ??= import("../../server/db/client.ts").then(({ openCatalog }) =>
      openCatalog(url, { poolSize: 2 }),
    ));
  try {
    const agent = await quick.agent(loadClientConfig().token, agentName);
    const full = async () => localCatalog((await catalog()).db, agent);
    return await run({
      lineageHeadId: (key) => quick.lineageHeadId(agent, key),
      baselineHeadId: async (key) => (await full()).baselineHeadId(key),
      missingBlobs: async (digests) => (await full()).missingBlobs(digests),
      putBlob: async (digest, bytes) => (await full()).putBlob(digest, bytes),
      appendCheckpoint: async (input) => (await full()).appendCheckpoint(input),
      publishBaseline: async (input) => (await full()).publishBaseline(input),
      publishLayers: async (input) => (await full()).publishLayers(input),
      dependencies: lazyDependencyPort(async () => (await full()).dependencies!),
    });
  } finally {
    await quick.close();
    if (prisma.opened) await (await prisma.opened).close();
  }
}

export function registerCapture(program: Command): void {
  program
    .command("capture")
    .argument("[dir]", "a directory inside the git checkout", ".")
    .description("capture a git checkout and publish it: a checkpoint of a work context, or a baseline")
    .option("--context <id>", "append a checkpoint to this work context's lineage")
    .option("--baseline", "publish a baseline of the canonical branch (fetched and validated first)")
    .option("--canonical-ref <branch>", "the canonical branch for --baseline (default: the remote's HEAD, else main)")
    .option("--remote <name>", "the remote to fetch the canonical branch from")
    .option("--repository <identity>", "the repository's identity (default: host/path of its origin remote)")
    .option("--backend <kind>", "the backend kind of the key", process.env.STRATA_BACKEND_KIND || "local")
    .option("--base-image <id>", "the base image of the key", process.env.STRATA_BASE_IMAGE || "none")
    .option("--server <url>", "publish to this Strata server with $STRATA_TOKEN (default: $STRATA_SERVER_URL)")
    .option("--agent <name>", "with the local database and no $STRATA_TOKEN: capture as this agent")
    .option("--no-untracked", "leave untracked files out")
    .option("--max-file-bytes <n>", "leave out files larger than this")
    .option("--max-snapshot-bytes <n>", "leave out content beyond this in total")
    .option("--full-every <n>", "restart the patch chain after this many links")
    .option(
      "--deps [dirs]",
      "with --baseline: also cache these dependency directories (comma-separated; default node_modules, .venv, venv, target, .next/cache, vendor/bundle) for the checkout's envHash",
    )
    .option("--json", "print the result as JSON")
    .action(async (dir: string, opts: CaptureCliOptions) => {
      const json = Boolean(opts.json);
      if (Boolean(opts.context) === Boolean(opts.baseline)) {
        throw new CliError("choose one: --context <id> (a checkpoint) or --baseline", EXIT.USAGE);
      }
      if (opts.deps !== undefined && !opts.baseline) {
        throw new CliError(
          "--deps caches the dependency directories of a baseline: use it with --baseline",
          EXIT.USAGE,
        );
      }
      try {
        const [{ describeCheckout }, { captureAndPublish }, { serverTarget }] = await Promise.all([
          import("../../server/git/checkout-info.ts"),
          import("../../server/capture/capture-publish.ts"),
          import("../connection.ts"),
        ]);
        const checkout = await describeCheckout(dir);
        const target = targetFor(checkout, opts);
        // A pooled worktree another task took meanwhile: nothing from it is recorded.
        const pooled = await pooledCheckout(checkout.layout.root, opts.context ?? null);
        if (pooled && "lost" in pooled) {
          if (json) emit(true, { outcome: "not-recorded", warnings: [pooled.lost] }, "");
          else process.stderr.write(warningLine(pooled.lost));
          process.exitCode = CAPTURE_EXIT.REFUSED;
          return;
        }
        const options: Omit<CapturePublishOptions, "target"> = {
          dir,
          checkout,
          capture: {
            includeUntracked: opts.untracked,
            maxFileBytes: positiveInteger(opts.maxFileBytes, "max-file-bytes"),
            maxSnapshotBytes: positiveInteger(opts.maxSnapshotBytes, "max-snapshot-bytes"),
            fullEvery: positiveInteger(opts.fullEvery, "full-every"),
          },
          onProgress: showProgress,
          dependencies: await dependencyPaths(opts.deps).then((paths) => (paths ? { paths } : undefined)),
        };
        const server = serverTarget(opts.server);
        const run = (port: CatalogPort) => captureAndPublish(port, { ...options, target });
        let result: CapturePublishResult;
        if (server) {
          const { remoteCatalog } = await import("../../client/catalog-port.ts");
          result = await run(remoteCatalog(server));
        } else {
          result = await captureLocally(opts.agent, run);
        }
        // The worktree's record now names this snapshot, while the task still holds it.
        const recorded = pooled
          ? await pooled.record(pooled.held, { id: result.snapshotId, manifest: result.manifest })
          : "recorded";
        const warnings: Array<{ kind: string; message: string }> = [];
        if (typeof recorded === "object") warnings.push(recorded);
        if (recorded === "busy") {
          warnings.push({
            kind: "pooled-worktree-busy",
            message: "the pooled worktree's lock stayed taken: its record does not name this snapshot",
          });
        }
        if (!json) progressDone(`strata: ${result.outcome}`);
        emit(json, warnings.length > 0 ? { ...result, warnings } : result, describe(result));
        if (!json) for (const warning of warnings) process.stderr.write(warningLine(warning));
      } catch (error) {
        if (!isStrataError(error)) throw error;
        if (json) emit(true, { outcome: "failed", error: error.toJSON() }, "");
        else {
          progressDone(`strata: capture failed`);
          process.stderr.write(
            `strata: ${error.message} [${error.code}]\n${error.hint ? `  hint: ${error.hint}\n` : ""}`,
          );
        }
        process.exitCode = exitCodeFor(error.code);
      }
    });
}
