// A work context of the example history whose checkpoints hold real change sets (patches as
// `git diff --full-index` writes them, a binary file carried whole), so the dashboard's snapshot
// diff has content to compare: a text change, an added and a deleted file, and a binary image
// that grew. Like the rest of the seed, nothing here runs git; the blob ids are git's own.
import { createHash, randomUUID } from "node:crypto";
import type { Db } from "../server/db/client.ts";
import { canonicalManifestBytes, type CaptureManifest, type PatchLink } from "../server/domain/capture-manifest.ts";
import type { AgentScope } from "../server/domain/scope.ts";
import { acquireWorkspace } from "../server/acquire/acquire-workspace.ts";
import { publishSnapshot } from "../server/content/layers.ts";
import { appendCheckpoint } from "../server/lineage/checkpoints.ts";
import { reportRestore } from "../server/restore/report-restore.ts";
import { storeBytes as store } from "../server/testing/content.ts";
import { oid } from "../server/testing/lineage.ts";

/** The work context the diff's browser test compares. */
const DIFF_WORK_CONTEXT = "issue-530-avatar-upload";

const ZERO = "0".repeat(40);

/** Git's blob id of some content. */
function blobId(content: string | Buffer): string {
  const bytes = typeof content === "string" ? Buffer.from(content) : content;
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

const AVATAR_HEAD = [
  'import { resize } from "../images/resize";',
  "",
  "export const AVATAR_SIZE = 256;",
  "",
  "export function avatarUrl(userId: string): string {",
  "  return `/avatars/${userId}.png`;",
  "}",
  "",
  "export async function uploadAvatar(userId: string, file: Blob) {",
  "  const image = await resize(file, AVATAR_SIZE);",
  "  return image;",
  "}",
];
const AVATAR_1 = AVATAR_HEAD.map((l, i) => (i === 5 ? "  return `/avatars/${userId}.png?v=${AVATAR_VERSION}`;" : l));
const AVATAR_2 = AVATAR_1.map((l, i) => (i === 10 ? "  return storeAvatar(userId, image);" : l));
const NOTES = "# Avatars\nUploads go through the resize step.\n";
const UPLOAD = [
  'import { uploadAvatar } from "./avatar";',
  "",
  "export async function onAvatarPicked(userId: string, file: File) {",
  '  if (file.size > 5 * 1024 * 1024) throw new Error("avatar too large");',
  "  return uploadAvatar(userId, file);",
  "}",
];
const text = (lines: string[]) => `${lines.join("\n")}\n`;

/** A placeholder image of `size` bytes (a PNG signature, then a pattern). */
function image(size: number, seed: number): Buffer {
  const bytes = Buffer.alloc(size);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes);
  for (let i = 8; i < size; i += 1) bytes[i] = (i * seed) % 251;
  return bytes;
}
const PNG_HEAD = image(11_800, 3);
const PNG_1 = image(12_595, 7);
const PNG_2 = image(13_210, 11);

function modified(path: string, from: string, to: string, hunks: string): string {
  return `diff --git a/${path} b/${path}\nindex ${from}..${to} 100644\n--- a/${path}\n+++ b/${path}\n${hunks}`;
}
function binary(path: string, from: string, to: string): string {
  return `diff --git a/${path} b/${path}\nindex ${from}..${to} 100644\nBinary files a/${path} and b/${path} differ\n`;
}
const PNG_PATH = "public/avatar-placeholder.png";

/** The full patch from HEAD: one line of avatar.ts, and the placeholder image. */
const PATCH_1 =
  modified(
    "src/profile/avatar.ts",
    blobId(text(AVATAR_HEAD)),
    blobId(text(AVATAR_1)),
    '@@ -3,7 +3,7 @@ import { resize } from "../images/resize";\n' +
      [" export const AVATAR_SIZE = 256;", " ", " export function avatarUrl(userId: string): string {"].join("\n") +
      "\n-" +
      AVATAR_HEAD[5] +
      "\n+" +
      AVATAR_1[5] +
      "\n }\n \n export async function uploadAvatar(userId: string, file: Blob) {\n",
  ) + binary(PNG_PATH, blobId(PNG_HEAD), blobId(PNG_1));

/** The next patch, on the first capture's tree: another line, the image again, a new file, a file gone. */
const PATCH_2 =
  `diff --git a/docs/avatar-notes.md b/docs/avatar-notes.md\ndeleted file mode 100644\nindex ${blobId(NOTES)}..${ZERO}\n` +
  `--- a/docs/avatar-notes.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n${NOTES.trimEnd()
    .split("\n")
    .map((l) => `-${l}`)
    .join("\n")}\n` +
  binary(PNG_PATH, blobId(PNG_1), blobId(PNG_2)) +
  modified(
    "src/profile/avatar.ts",
    blobId(text(AVATAR_1)),
    blobId(text(AVATAR_2)),
    "@@ -8,5 +8,5 @@ export function avatarUrl(userId: string): string {\n" +
      ` \n ${AVATAR_1[8]}\n ${AVATAR_1[9]}\n-${AVATAR_1[10]}\n+${AVATAR_2[10]}\n }\n`,
  ) +
  `diff --git a/src/profile/upload.ts b/src/profile/upload.ts\nnew file mode 100644\nindex ${ZERO}..${blobId(text(UPLOAD))}\n` +
  `--- /dev/null\n+++ b/src/profile/upload.ts\n@@ -0,0 +1,${UPLOAD.length} @@\n${UPLOAD.map((l) => `+${l}`).join("\n")}\n`;

/**
 * Two checkpoints of `web` on one HEAD, started from its current baseline. Returns their ids,
 * oldest first.
 */
export async function seedDiffHistory(
  db: Db,
  opts: {
    agent: AgentScope;
    repository: string;
    backendKind: string;
    baseImage: string;
    at: (daysAgo: number) => Date;
  },
): Promise<string[]> {
  const key = {
    repository: { identity: opts.repository },
    backendKind: opts.backendKind,
    baseImage: opts.baseImage,
    workContextId: DIFF_WORK_CONTEXT,
  };
  const plan = await acquireWorkspace(db, {
    agent: opts.agent,
    ...key,
    canonicalRef: "main",
    workspace: "/workspaces/ws-530",
    host: "worker-3",
    now: opts.at(1.5),
  });
  await reportRestore(db, { agent: opts.agent, restoreId: plan.restoreId, outcome: "restored", now: opts.at(1.5) });
  // The checkout began at the baseline's commit, so its checkpoints and that baseline share a HEAD.
  const head = plan.snapshot?.manifest.head ?? oid("head:issue-530");
  const owner = { agentId: opts.agent.agentId };
  const links: PatchLink[] = [];
  const ids: string[] = [];
  let observed: string | null = null;
  const captures: [string, Buffer][] = [
    [PATCH_1, PNG_1],
    [PATCH_2, PNG_2],
  ];
  for (const [n, [patch, png]] of captures.entries()) {
    const stored = await store(db, patch, owner);
    const whole = await store(db, png, owner);
    const tree = oid(`tree:issue-530:${n + 1}`);
    links.push({
      uuid: randomUUID(),
      parent: links.at(-1)?.uuid ?? null,
      digest: stored.digest,
      size: stored.sizeBytes,
      kind: n === 0 ? "full" : "incremental",
      base: n === 0 ? head : (links.at(-1)?.tree ?? head),
      tree,
      files: [{ oid: blobId(png), digest: whole.digest, size: whole.sizeBytes }],
    });
    const record: CaptureManifest = {
      version: 1,
      root: "/workspaces/ws-530",
      objectFormat: "sha1",
      remotes: [{ name: "origin", url: `https://${opts.repository}.git` }],
      branch: "feat/avatar-upload",
      head,
      tree,
      patches: [...links],
      bundle: null,
      omitted: [{ path: ".env.local", reason: "denied" }],
      filters: { autocrlf: null, eol: null, drivers: [] },
      envHash: null,
      envFiles: [],
      snapshotRef: null,
      degradedFrom: null,
      capturedAt: opts.at(1.4 - n * 0.2).toISOString(),
    };
    const manifest = await store(db, canonicalManifestBytes(record), owner);
    const blobDigests = [...links.flatMap((l) => [l.digest, ...(l.files ?? []).map((f) => f.digest)]), manifest.digest];
    const appended = await appendCheckpoint(db, {
      agent: opts.agent,
      key,
      observedHeadId: observed,
      manifest: { treeId: tree, head, branch: "feat/avatar-upload", blobDigests, sizeBytes: 30_000 + n * 2_000 },
      source: { workspace: "/workspaces/ws-530", host: "worker-3" },
      now: opts.at(1.4 - n * 0.2),
    });
    observed = appended.snapshot.id;
    ids.push(observed);
    const manifestLayer = { uuid: randomUUID(), parentUuid: null, kind: "manifest", ...manifest };
    const patchLayers = links.map((l) => ({
      uuid: l.uuid,
      parentUuid: l.parent,
      kind: "patch",
      digest: l.digest,
      sizeBytes: l.size,
    }));
    await publishSnapshot(db, {
      snapshotId: observed,
      layers: [...patchLayers, manifestLayer],
      heads: [links.at(-1)!.uuid, manifestLayer.uuid],
    });
  }
  return ids;
}
