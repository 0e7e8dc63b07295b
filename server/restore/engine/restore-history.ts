// Getting commits into a restore's repository: from the host's object store (borrowed through
// alternates), from the snapshot's bundle of unpushed commits, or by a non-interactive fetch
// from the recorded remotes (the commit alone first, the remote's branches when the remote
// refuses to hand out a commit by id). With this host's shared store of the repository
// (host-object-store.ts), fetches go into the store, under its lock, so every restore of the
// repository borrows them.
import { existsSync } from "node:fs";
import { open, rm } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import type { CaptureManifest } from "../../domain/capture-manifest.ts";
import { isStrataError, StrataError } from "../../domain/errors.ts";
import { copyBlobToFile, type BlobSource } from "./restore-blobs.ts";
import {
  BATCH_SSH_COMMAND,
  configuredSshCommand,
  fetchRefspecs,
  hasCommit,
  refCommit,
  unbundle,
} from "../../git/restore-commands.ts";
import {
  adoptShallowCut,
  PUSHED_REF_PREFIX,
  pushedTipInStore,
  pushedTipRef,
  type HostObjectStore,
} from "./host-object-store.ts";
import type { GitRunner } from "../../git/runner.ts";

export interface FetchableRemote {
  name: string;
  /** The URL as recorded, configured in the restored repository. */
  url: string;
  /** What git fetches from: a relative local path resolved against the recorded root. */
  fetchUrl: string;
}

const SCHEME_OR_SCP = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/|^(?:[^@/:]+@)?[^@/:]+:/;

export function fetchableRemotes(manifest: CaptureManifest): FetchableRemote[] {
  return manifest.remotes.map((r) => ({
    name: r.name,
    url: r.url,
    fetchUrl: SCHEME_OR_SCP.test(r.url) || isAbsolute(r.url) ? r.url : resolve(manifest.root, r.url),
  }));
}

/** What a bundle file's header says: the commits it needs and the refs it carries. */
export interface BundleHeader {
  prerequisites: string[];
  refs: Array<{ oid: string; name: string }>;
}

/** Parses a v2 or v3 bundle header (everything before the blank line). Pure. */
export function parseBundleHeader(text: string): BundleHeader | null {
  const end = text.indexOf("\n\n");
  if (end < 0) return null;
  const lines = text.slice(0, end).split("\n");
  if (!/^# v[23] git bundle$/.test(lines[0] ?? "")) return null;
  const header: BundleHeader = { prerequisites: [], refs: [] };
  for (const line of lines.slice(1)) {
    if (line.startsWith("@")) continue;
    const prerequisite = /^-([0-9a-f]{40}|[0-9a-f]{64})(?: .*)?$/.exec(line);
    if (prerequisite?.[1]) {
      header.prerequisites.push(prerequisite[1]);
      continue;
    }
    const ref = /^([0-9a-f]{40}|[0-9a-f]{64}) (.+)$/.exec(line);
    if (!ref?.[1] || !ref[2]) return null;
    header.refs.push({ oid: ref[1], name: ref[2] });
  }
  return header;
}

async function readBundleHeader(file: string): Promise<BundleHeader | null> {
  const handle = await open(file, "r");
  try {
    const buffer = Buffer.alloc(1024 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return parseBundleHeader(buffer.subarray(0, bytesRead).toString("latin1"));
  } finally {
    await handle.close();
  }
}

export interface HistoryOptions {
  blobs: BlobSource;
  /** A scratch directory inside the staging repository. */
  scratch: string;
  fetchTimeoutMs: number;
  baseEnv: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
  /** This host's shared store of the repository: fetches go there (the restore borrows it). */
  store?: HostObjectStore | null;
}

/** Where a commit came from. */
export type CommitSource = "object-store" | "bundle" | "remote";

/**
 * The commits one restore gets, remembering what it tried: each remote is fetched whole at
 * most once, and the bundle is read at most once.
 */
export class RestoreHistory {
  private readonly remotes: FetchableRemote[];
  private sshCommand: string | null | undefined;
  private readonly fullyFetched = new Set<string>();
  private bundleRead: Promise<BundleHeader | null> | null = null;
  /** Why the bundle could not be used, once it was tried. */
  bundleFailure: StrataError | null = null;
  /** Commits fetched from a remote (so known to be pushed). */
  readonly fetched = new Set<string>();
  /** Branch tips fetched from a remote, by the ref they are kept under in a shared store. */
  readonly fetchedTips = new Map<string, string>();
  /** The remote each fetched commit came from. */
  readonly fetchedFrom = new Map<string, string>();
  /** The last fetch failure, for the message of COMMITS_UNAVAILABLE. */
  lastFetchFailure: StrataError | null = null;
  /**
   * The bundle's prerequisites (the pushed commits it builds on) that could not be fetched,
   * once it was tried: then the bundle holds the unpushed commits and only these are missing.
   */
  readonly missingBase: string[] = [];
  shallow = false;

  constructor(
    private readonly git: GitRunner,
    private readonly manifest: CaptureManifest,
    private readonly opts: HistoryOptions,
  ) {
    this.remotes = fetchableRemotes(manifest);
  }

  has(oid: string): Promise<boolean> {
    return this.git.run(hasCommit(oid));
  }

  /** GIT_SSH_COMMAND for downloads from the remotes, or null when the user configured their own. */
  async ssh(): Promise<string | null> {
    if (this.sshCommand !== undefined) return this.sshCommand;
    // The user's own ssh command wins; otherwise ssh must never wait for a key or a host prompt.
    const own =
      this.opts.baseEnv.GIT_SSH_COMMAND || this.opts.baseEnv.GIT_SSH
        ? "env"
        : await this.git.run(configuredSshCommand()).catch(() => null);
    this.sshCommand = own ? null : BATCH_SSH_COMMAND;
    return this.sshCommand;
  }

  /**
   * Fetches refspecs from a remote into this repository, or into the shared store under its
   * lock (skipped when `wanted` got there meanwhile, fetched by a concurrent restore). A full
   * fetch into a shallow store also fetches the history behind its cut.
   */
  private async tryFetch(
    remote: FetchableRemote,
    refspecs: string[],
    shallow: boolean,
    wanted?: string,
  ): Promise<boolean> {
    const store = this.opts.store;
    const settings = { shallow, timeoutMs: this.opts.fetchTimeoutMs, sshCommand: await this.ssh() };
    try {
      if (store) {
        await store.withLock(async () => {
          if (wanted && (await store.git.run(hasCommit(wanted)))) return;
          const unshallow = !shallow && existsSync(join(store.dir, "shallow"));
          await store.git.run(fetchRefspecs(remote.fetchUrl, refspecs, { ...settings, unshallow, wholePack: true }));
        });
      } else {
        await this.git.run(fetchRefspecs(remote.fetchUrl, refspecs, settings));
      }
      if (shallow) this.shallow = true;
      return true;
    } catch (error) {
      if (isStrataError(error, "ABORTED") || this.opts.signal?.aborted) throw error;
      if (!isStrataError(error)) throw error;
      this.lastFetchFailure = error;
      return false;
    }
  }

  /**
   * Fetches one commit from the recorded remotes: by id (shallow), else the remote's branches
   * in full (for servers that refuse a commit by id). True once the commit is here.
   */
  async fetchCommit(oid: string): Promise<boolean> {
    if (await this.has(oid)) return true;
    for (const remote of this.remotes) {
      if (await this.tryFetch(remote, [`${oid}:${PUSHED_REF_PREFIX}${oid}`], true, oid)) {
        if (await this.has(oid)) {
          this.fetched.add(oid);
          this.fetchedFrom.set(oid, remote.name);
          return true;
        }
      }
    }
    for (const remote of this.remotes) {
      if (this.fullyFetched.has(remote.name)) continue;
      this.fullyFetched.add(remote.name);
      if (!(await this.tryFetch(remote, [`+refs/heads/*:refs/remotes/${remote.name}/*`], false))) continue;
      if (await this.has(oid)) {
        this.fetched.add(oid);
        this.fetchedFrom.set(oid, remote.name);
        return true;
      }
    }
    return false;
  }

  /**
   * The tip of a branch (or of the remote's HEAD when `branch` is null) on the first remote that
   * has it; when no remote answers, the tip the shared store knows pushed to one of them.
   */
  async fetchBranchTip(branch: string | null): Promise<string | null> {
    const store = this.opts.store;
    for (const [i, remote] of this.remotes.entries()) {
      const ref = `${PUSHED_REF_PREFIX}tip-${i}`;
      const source = branch === null ? "HEAD" : `refs/heads/${branch}`;
      if (!(await this.tryFetch(remote, [`+${source}:${ref}`], true))) continue;
      const tip = await (store?.git ?? this.git).run(refCommit(ref));
      if (tip) {
        this.fetched.add(tip);
        this.fetchedTips.set(pushedTipRef(remote.name, branch), tip);
        return tip;
      }
    }
    if (!store) return null;
    const known = await pushedTipInStore(
      store,
      this.remotes.map((r) => r.name),
      branch,
    );
    return known && (await this.has(known)) ? known : null;
  }

  /** Reads the bundle (once): its header, or null when it cannot be had (see bundleFailure). */
  readBundle(): Promise<BundleHeader | null> {
    this.bundleRead ??= this.readBundleOnce();
    return this.bundleRead;
  }

  private bundleFile(): string {
    return join(this.opts.scratch, "unpushed.bundle");
  }

  private async readBundleOnce(): Promise<BundleHeader | null> {
    const bundle = this.manifest.bundle;
    if (!bundle) return null;
    try {
      await copyBlobToFile(this.opts.blobs, bundle.digest, this.bundleFile(), {
        size: bundle.size,
        signal: this.opts.signal,
      });
    } catch (error) {
      if (isStrataError(error, "BLOB_MISSING") || isStrataError(error, "BLOB_CORRUPT")) {
        const what = error.code === "BLOB_MISSING" ? "is not stored" : "is damaged";
        this.bundleFailure = new StrataError(
          error.code,
          `The bundle of unpushed commits (blob ${bundle.digest}) ${what}.`,
          { data: { digest: bundle.digest }, cause: error },
        );
        return null;
      }
      throw error;
    }
    const header = await readBundleHeader(this.bundleFile());
    if (!header) {
      this.bundleFailure = new StrataError("BLOB_CORRUPT", `Blob ${bundle.digest} is not a git bundle.`, {
        data: { digest: bundle.digest },
      });
    }
    return header;
  }

  /** The pushed commits the bundle's commits were built on (readable bundle only). */
  async pushedBase(): Promise<string[]> {
    return (await this.readBundle())?.prerequisites ?? [];
  }

  /** Unpacks the bundle once its prerequisites are here; true when it held `head`. */
  async fromBundle(head: string): Promise<boolean> {
    const header = await this.readBundle();
    if (!header) return false;
    for (const prerequisite of header.prerequisites) {
      if (!(await this.fetchCommit(prerequisite))) this.missingBase.push(prerequisite);
    }
    if (this.missingBase.length > 0) {
      this.bundleFailure = new StrataError(
        "COMMITS_UNAVAILABLE",
        `The pushed commit ${this.missingBase.join(", ")} the unpushed commits were built on cannot be fetched.`,
        { data: { commits: this.missingBase, reason: "base-unavailable" }, cause: this.lastFetchFailure },
      );
      return false;
    }
    // Its base may be at the cut of a shallow store: this repository must know the cut too.
    if (this.opts.store) await adoptShallowCut(join(this.git.cwd, ".git"), this.opts.store);
    try {
      await this.git.run(unbundle(this.bundleFile()));
    } catch (error) {
      if (!isStrataError(error, "GIT_FAILED")) throw error;
      this.bundleFailure = new StrataError("COMMITS_UNAVAILABLE", "The bundle of unpushed commits did not unpack.", {
        data: { reason: "bundle-unusable" },
        cause: error,
      });
      return false;
    }
    return this.has(head);
  }

  /** Gets the recorded HEAD: object store, then bundle, then remotes. Throws the reason it cannot. */
  async obtainHead(head: string): Promise<CommitSource> {
    if (await this.has(head)) return "object-store";
    if (this.manifest.bundle && (await this.fromBundle(head))) return "bundle";
    if (await this.fetchCommit(head)) return "remote";
    throw this.headUnavailable(head);
  }

  private headUnavailable(head: string): StrataError {
    if (
      this.bundleFailure &&
      (this.bundleFailure.code === "BLOB_MISSING" || this.bundleFailure.code === "BLOB_CORRUPT")
    ) {
      return this.bundleFailure;
    }
    if (this.missingBase.length > 0) {
      // The bundle holds HEAD and every unpushed commit: what is missing is what it builds on.
      const unpushed = this.manifest.bundle?.commits.length ?? 1;
      const base = this.missingBase.join(", ");
      return new StrataError(
        "COMMITS_UNAVAILABLE",
        `Commit ${head} cannot be had on this host: the snapshot's bundle holds its ${unpushed} unpushed ` +
          `commit(s), HEAD included, but they build on the pushed commit ${base}, which no recorded remote could provide.`,
        {
          hint: `Make a recorded remote that has commit ${base} reachable from this host, then restore again.`,
          data: { commit: head, base: this.missingBase, reason: "base-unavailable" },
          cause: this.bundleFailure ?? this.lastFetchFailure ?? undefined,
        },
      );
    }
    const omitted = this.manifest.omitted.filter(
      (o) => o.reason === "unpushed-denied" || o.reason === "bundle-too-large",
    );
    const reason =
      omitted.length > 0
        ? "bundle-omitted"
        : this.remotes.length === 0
          ? "no-remotes"
          : this.bundleFailure
            ? "bundle-unusable"
            : "not-fetched";
    const why =
      reason === "bundle-omitted"
        ? "its unpushed commits were left out of the snapshot (they touch denied paths or were too large)"
        : reason === "no-remotes"
          ? "the snapshot records no remote to fetch it from"
          : "no recorded remote could provide it";
    return new StrataError("COMMITS_UNAVAILABLE", `Commit ${head} cannot be had on this host: ${why}.`, {
      hint: "Push the commit (with its history) to a recorded remote, then restore again.",
      data: { commit: head, reason },
      cause: this.bundleFailure ?? this.lastFetchFailure ?? undefined,
    });
  }

  async cleanup(): Promise<void> {
    await rm(this.bundleFile(), { force: true });
  }
}
