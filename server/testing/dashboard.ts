// Test support for the dashboard services: a small repository history made through the
// lineage services (two baselines, two work contexts with checkpoint chains, a degraded
// restore), and dashboard users. Used by tests only.
import type { Db } from "../db/client.ts";
import { randomUUID } from "node:crypto";
import { canonicalManifestBytes, type CaptureManifest } from "../domain/capture-manifest.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import { trustUser, type UserRole, type UserScope } from "../domain/scope.ts";
import { createUser } from "../auth/dashboard-auth.ts";
import { appendCheckpoint } from "../lineage/checkpoints.ts";
import { publishSnapshot } from "../content/layers.ts";
import { storeBytes, storedLayer } from "./content.ts";
import { publishBaseline } from "../lineage/baselines.ts";
import {
  acquireFor,
  baselineKeyOf,
  cleanEvidence,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  scenario,
  uniqueName,
  type Scenario,
  type TestAgent,
} from "./lineage.ts";
import { reportRestore } from "../restore/report-restore.ts";

export async function makeUser(db: Db, role: UserRole): Promise<UserScope> {
  const created = await createUser(db, { email: `${uniqueName(role)}@example.test`, role });
  return trustUser(created.id, created.email, role);
}

const DAY = 24 * 60 * 60 * 1000;

async function publishAt(
  db: Db,
  agent: TestAgent,
  s: Scenario,
  label: string,
  observedHeadId: string | null,
  now: Date,
) {
  const commit = oid(label);
  const published = await publishBaseline(db, {
    agent: agent.scope,
    key: baselineKeyOf(s),
    commit,
    manifest: manifestOf({ head: commit, branch: "main" }),
    evidence: cleanEvidence(commit),
    observedHeadId,
    now,
  });
  return published.snapshot;
}

/**
 * b1 → b2 (supersession); work context A seeded from b1 with checkpoints a1 → a2 → a3; work
 * context B seeded from b2 with b-1; then A resumed from a3 and reported degraded (pin kept).
 */
export async function buildHistory(db: Db) {
  const agent = await makeAgent(db, "dash");
  const s = scenario("dash");
  const t0 = new Date(Date.now() - 10 * DAY);
  const at = (days: number) => new Date(t0.getTime() + days * DAY);
  const wcA = uniqueName("wc-a");
  const wcB = uniqueName("wc-b");

  const b1 = await publishAt(db, agent, s, `${wcA}-base-1`, null, at(0));
  const acquireA = await acquireFor(db, agent.scope, s, wcA, at(1));
  await reportRestore(db, { agent: agent.scope, restoreId: acquireA.restoreId, outcome: "restored", now: at(1) });
  const a: string[] = [];
  const patches: LayerDescriptor[] = [];
  const manifestLayers: LayerDescriptor[] = [];
  let head: string | null = null;
  for (let i = 1; i <= 3; i += 1) {
    const appended = await appendCheckpoint(db, {
      agent: agent.scope,
      key: lineageKeyOf(s, wcA),
      observedHeadId: head,
      manifest: manifestOf({ head: oid(`${wcA}-${i}`), branch: "task-a" }),
      source: { workspace: "/ws/a", host: "host-1" },
      now: at(1 + i * 0.1),
    });
    head = appended.snapshot.id;
    a.push(head);
    // Its content in the layer form while it is the ready head: the next patch of the chain
    // and the full capture record as a manifest layer.
    const patch = await storedLayer(db, {
      owner: agent.scope,
      parentUuid: patches.at(-1)?.uuid ?? null,
      content: `${head} patch ${i}`,
    });
    patches.push(patch);
    const record = captureManifest({
      tree: appended.snapshot.manifest.treeId!,
      head: appended.snapshot.manifest.head!,
      branch: "task-a",
      patches: patches.map((p) => ({ uuid: p.uuid, parent: p.parentUuid, digest: p.digest, size: p.sizeBytes })),
    });
    const stored = await storeBytes(db, canonicalManifestBytes(record), agent.scope);
    const manifestLayer = { uuid: randomUUID(), parentUuid: null, kind: "manifest", ...stored };
    manifestLayers.push(manifestLayer);
    await publishSnapshot(db, {
      snapshotId: head,
      layers: [...patches, manifestLayer],
      heads: [patch.uuid, manifestLayer.uuid],
    });
  }
  const b2 = await publishAt(db, agent, s, `${wcA}-base-2`, b1.id, at(2));
  const acquireB = await acquireFor(db, agent.scope, s, wcB, at(3));
  const bFirst = await appendCheckpoint(db, {
    agent: agent.scope,
    key: lineageKeyOf(s, wcB),
    observedHeadId: null,
    manifest: manifestOf({ head: oid(`${wcB}-1`), branch: "task-b" }),
    now: at(3.5),
  });
  const resumeA = await acquireFor(db, agent.scope, s, wcA, at(4));
  await reportRestore(db, {
    agent: agent.scope,
    restoreId: resumeA.restoreId,
    outcome: "degraded",
    missing: ["src/feature.ts", oid("unpushed")],
    now: at(4),
  });
  const repository = await db.repository.findUniqueOrThrow({ where: { identity: s.repository.identity } });
  return {
    agent,
    scenario: s,
    repositoryId: repository.id,
    wcA,
    wcB,
    b1: b1.id,
    b2: b2.id,
    a,
    bFirst: bFirst.snapshot.id,
    lineageA: acquireA.lineage.id,
    lineageB: acquireB.lineage.id,
    acquireB: acquireB.restoreId,
    patches,
    manifestLayers,
    degradedRestoreId: resumeA.restoreId,
    degradedPinId: resumeA.pinId!,
  };
}

/** A complete capture record for a tree, with one patch per layer given. */
function captureManifest(opts: {
  tree: string;
  head: string;
  branch: string;
  patches: { uuid: string; parent: string | null; digest: string; size: number }[];
  degradedFrom?: string | null;
}): CaptureManifest {
  return {
    version: 1,
    root: "/home/dev/checkout",
    objectFormat: "sha1",
    remotes: [{ name: "origin", url: "https://example.test/acme/app.git" }],
    branch: opts.branch,
    head: opts.head,
    tree: opts.tree,
    patches: opts.patches.map((p, i) => ({
      ...p,
      kind: i === 0 ? "full" : "incremental",
      base: i === 0 ? opts.head : oid(`tree-before-${p.uuid}`),
      tree: i === opts.patches.length - 1 ? opts.tree : oid(`tree-after-${p.uuid}`),
    })),
    bundle: null,
    omitted: [
      { path: ".env", reason: "denied" },
      { path: "node_modules/", reason: "ignored" },
    ],
    filters: { autocrlf: null, eol: null, drivers: [] },
    envHash: null,
    envFiles: [],
    snapshotRef: null,
    degradedFrom: opts.degradedFrom ?? null,
    capturedAt: new Date().toISOString(),
  };
}
