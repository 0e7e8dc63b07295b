// Test support for the lineage services: agents, object ids, manifests and baseline evidence
// built directly (capturing real git trees comes later).
import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../db/client.ts";
import type { BaselineEvidence } from "../domain/baseline-evidence.ts";
import type { Manifest } from "../domain/manifest.ts";
import { trustAgent, type AgentScope } from "../domain/scope.ts";
import { createAgent } from "../auth/agents.ts";
import { publishBaseline } from "../lineage/baselines.ts";
import { acquireWorkspace } from "../acquire/acquire-workspace.ts";

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

/** The lineage key of a new work context of a new repository (a job's `key`). */
export function freshLineageKey(label: string) {
  return {
    repository: { identity: `example.invalid/${uniqueName(label)}` },
    backendKind: "local",
    baseImage: "test-image",
    workContextId: uniqueName("wc"),
  };
}

/** A deterministic 40-hex git object id for a label. */
export function oid(label: string): string {
  return createHash("sha1").update(label).digest("hex");
}

function blobDigest(label: string): string {
  return createHash("sha256").update(label).digest("hex");
}

export interface TestAgent {
  scope: AgentScope;
  token: string;
  name: string;
}

export async function makeAgent(db: Db, prefix = "agent"): Promise<TestAgent> {
  const issued = await createAgent(db, { name: uniqueName(prefix) });
  return { scope: trustAgent(issued.agentId, issued.agentName), token: issued.token, name: issued.agentName };
}

/** The coordinates every test of one scenario shares; a fresh repository per scenario. */
export function scenario(label = "repo") {
  const identity = `example.test/acme/${uniqueName(label)}`;
  return {
    repository: { identity },
    backendKind: "modal",
    baseImage: "sha256:" + "ab".repeat(32),
    canonicalRef: "main",
  };
}
export type Scenario = ReturnType<typeof scenario>;

export function manifestOf(opts: { head: string; branch: string | null; tree?: string; blobs?: string[] }): Manifest {
  return {
    treeId: opts.tree ?? oid(`tree:${opts.head}:${opts.branch}:${(opts.blobs ?? []).join(",")}`),
    head: opts.head,
    branch: opts.branch,
    blobDigests: (opts.blobs ?? [opts.head]).map(blobDigest),
    sizeBytes: 1024,
  };
}

/** Evidence of a freshly fetched, clean checkout of `main` at `commit`; override to dirty it. */
export function cleanEvidence(commit: string, overrides: Partial<BaselineEvidence> = {}): BaselineEvidence {
  return {
    remoteTrackingRef: "refs/remotes/origin/main",
    fetched: true,
    remoteCommit: commit,
    head: commit,
    branch: "main",
    stagedCount: 0,
    modifiedCount: 0,
    untrackedCount: 0,
    inProgress: { merge: false, rebase: false, cherryPick: false, bisect: false },
    repositoryRoot: "/home/dev/checkout",
    captureRoot: "/home/dev/checkout",
    ...overrides,
  };
}

export function baselineKeyOf(s: Scenario) {
  return { repository: s.repository, backendKind: s.backendKind, baseImage: s.baseImage, canonicalRef: s.canonicalRef };
}

export function lineageKeyOf(s: Scenario, workContextId: string) {
  return { repository: s.repository, backendKind: s.backendKind, baseImage: s.baseImage, workContextId };
}

/** Publishes a clean baseline at `commit` (a label or an id), observing `observedHeadId`. */
export async function publishClean(
  db: Db,
  agent: AgentScope,
  s: Scenario,
  commitLabel: string,
  observedHeadId: string | null,
) {
  const commit = oid(commitLabel);
  return publishBaseline(db, {
    agent,
    key: baselineKeyOf(s),
    commit,
    manifest: manifestOf({ head: commit, branch: "main" }),
    evidence: cleanEvidence(commit),
    observedHeadId,
  });
}

/** acquireFor over a given acquire implementation (the contract suites run each path). */
export function acquireForWith(acquire: typeof acquireWorkspace) {
  return (db: Db, agent: AgentScope, s: Scenario, workContextId?: string, now?: Date) =>
    acquire(db, {
      agent,
      repository: s.repository,
      backendKind: s.backendKind,
      baseImage: s.baseImage,
      canonicalRef: s.canonicalRef,
      workContextId,
      workspace: `/workspaces/${uniqueName("ws")}`,
      host: "host-1",
      now,
    });
}

/** Acquires a workspace for the scenario's key (a new work context unless one is named). */
export const acquireFor = acquireForWith(acquireWorkspace);
