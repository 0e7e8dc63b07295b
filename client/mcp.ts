// Strata as a Model Context Protocol server (`strata mcp`, stdio): the SDK's steps as tools a
// model calls between turns — checkpoint a checkout, list snapshots, restore one into a new
// directory, acquire a workspace, diff two snapshots, verify a checkout — and each snapshot's
// manifest as a read-only resource. The agent token comes from the environment the harness starts
// the server with, never from a tool argument. Every path a tool takes must lie inside one of the
// roots the server was started for (`--root DIR`, repeatable), symbolic links resolved; anything
// else is refused before any work. A failure is an MCP tool error whose text starts with the
// Strata code and carries the hint, so a model can act on it.
import { existsSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { isStrataError, StrataError } from "../server/domain/errors.ts";
import { bigintsAsStrings } from "../server/domain/json-text.ts";
import type { StrataClient } from "./index.ts";

export interface McpServerOptions {
  /** The directories tools may read and write under (at least one). */
  roots: readonly string[];
  /** The version the server announces. */
  version: string;
}

/** The deepest existing ancestor of `path` (itself when it exists), with symbolic links resolved. */
function realAncestor(path: string): string {
  let at = path;
  while (!existsSync(at)) {
    const parent = dirname(at);
    if (parent === at) break;
    at = parent;
  }
  return resolve(realpathSync(at), relative(at, path));
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** JSON text of a result: dates as ISO strings, bigints (byte counts) as decimal strings, as in the REST API. */
function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, bigintsAsStrings, indent);
}

/** A tool's answer: the result as JSON text, and as structured content for clients that read it. */
function answer(result: unknown): CallToolResult {
  const json = JSON.parse(jsonText(result)) as Record<string, unknown>;
  return { content: [{ type: "text", text: JSON.stringify(json, null, 2) }], structuredContent: json };
}

/** A failure as an MCP tool error: the Strata code first, then the message and the hint. */
function toolError(error: unknown): CallToolResult {
  const strata = isStrataError(error)
    ? error
    : new StrataError("INTERNAL", `Strata failed: ${error instanceof Error ? error.message : String(error)}`);
  const lines = [`${strata.code}: ${strata.message}`];
  if (strata.hint) lines.push(`hint: ${strata.hint}`);
  lines.push(`retryable: ${strata.retryable}`);
  return {
    isError: true,
    content: [{ type: "text", text: lines.join("\n") }],
    structuredContent: {
      error: { code: strata.code, message: strata.message, hint: strata.hint ?? null, retryable: strata.retryable },
    },
  };
}

async function run(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return answer(await fn());
  } catch (error) {
    return toolError(error);
  }
}

const idField = z.string().min(1).max(100);
const repositoryField = z
  .string()
  .min(1)
  .max(500)
  .describe("The repository's credential-free identity, e.g. github.com/acme/app");

/** The MCP server for `strata`, over the SDK client `strata` (stdio is connected by the caller). */
export function createStrataMcpServer(strata: StrataClient, opts: McpServerOptions): McpServer {
  if (opts.roots.length === 0) throw new StrataError("INVALID_INPUT", "Give at least one root directory (--root DIR).");
  const roots = opts.roots.map((r) => realpathSync(resolve(r)));

  /** `path`, absolute and inside a root; refused (PATH_OUTSIDE_ROOTS) otherwise. */
  const confined = (path: string, field: string): string => {
    const absolute = resolve(roots[0]!, path);
    const real = realAncestor(absolute);
    if (!roots.some((root) => inside(root, real))) {
      throw new StrataError(
        "INVALID_INPUT",
        `${field} ${JSON.stringify(path)} is outside the directories this server may use.`,
        {
          hint: `Use a path under ${roots.join(" or ")}.`,
          data: { field, roots },
        },
      );
    }
    return absolute;
  };
  /** A directory the tool will create: inside a root, and not there yet. */
  const newDirectory = (path: string, field: string): string => {
    const target = confined(path, field);
    if (existsSync(target)) {
      throw new StrataError(
        "UNSAFE_TARGET",
        `${field} ${JSON.stringify(path)} already exists; restores go into a new directory only.`,
        {
          hint: "Choose a path that does not exist yet.",
          data: { field },
        },
      );
    }
    return target;
  };

  const server = new McpServer(
    { name: "strata", version: opts.version },
    {
      instructions:
        "Strata saves and restores coding-agent workspaces. Checkpoint the checkout after each meaningful step " +
        "(snapshot_checkpoint with your task's work context id); to continue a task elsewhere, workspace_acquire " +
        `restores its newest checkpoint into a new directory. Paths must lie under: ${roots.join(", ")}.`,
    },
  );

  server.registerTool(
    "snapshot_checkpoint",
    {
      title: "Checkpoint a checkout",
      description:
        "Capture the git checkout at `dir` exactly as it is (HEAD, branch, staged, unstaged and untracked files, " +
        "unpushed commits; secrets such as .env are left out) and append it to the lineage of work context `context`. " +
        "Returns the snapshot id; `unchanged` when the newest checkpoint already holds this state.",
      inputSchema: {
        dir: z.string().min(1).describe("The checkout (a directory inside a git repository), under a root"),
        context: idField.describe("Your task's durable work context id; the same id continues the same lineage"),
        repository: repositoryField.optional().describe("The repository identity (default: from the origin remote)"),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    ({ dir, context, repository }) =>
      run(async () => {
        const result = await strata.checkpoint(confined(dir, "dir"), { context, repository });
        return {
          outcome: result.outcome,
          snapshotId: result.snapshotId,
          head: result.manifest.head,
          branch: result.manifest.branch,
          tree: result.manifest.tree,
          uploaded: result.uploaded,
          leftOut: result.manifest.omitted.map((o) => ({ path: o.path, reason: o.reason })),
        };
      }),
  );

  server.registerTool(
    "snapshot_list",
    {
      title: "List snapshots",
      description: "List your snapshots, newest first (checkpoints and baselines), one page at a time.",
      inputSchema: {
        limit: z.number().int().min(1).max(200).optional().describe("How many (default 50)"),
        cursor: z.string().max(200).optional().describe("The `nextCursor` of the previous page"),
        includeRetired: z.boolean().optional().describe("Also list retired snapshots"),
      },
      annotations: { readOnlyHint: true },
    },
    (input) => run(() => strata.api.snapshot.list.query(input)),
  );

  server.registerTool(
    "snapshot_restore",
    {
      title: "Restore a snapshot into a new directory",
      description:
        "Restore snapshot `snapshotId` into `into`, a directory that must not exist yet (under a root), verified to " +
        "the recorded git tree. When it cannot be exact, the best reachable state is restored and the answer says " +
        "precisely what is missing (status `degraded`).",
      inputSchema: {
        snapshotId: idField,
        into: z.string().min(1).describe("A new directory to create, under a root"),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    ({ snapshotId, into }) =>
      run(async () => {
        const report = await strata.restore(snapshotId, { into: newDirectory(into, "into") });
        return { snapshotId: report.snapshot.id, path: report.path, result: report.result };
      }),
  );

  server.registerTool(
    "workspace_acquire",
    {
      title: "Acquire a workspace",
      description:
        "Start or resume work: decides where a workspace starts (your work context's newest checkpoint, else the " +
        "repository's clean baseline, else cold) and restores it into `into`, a new directory under a root. " +
        "Without `context` it starts new work and returns its new work context id.",
      inputSchema: {
        repository: repositoryField,
        into: z.string().min(1).describe("A new directory to create, under a root"),
        context: idField.optional().describe("The work context to resume; omit for new work"),
        canonicalRef: z.string().max(200).optional().describe("The canonical branch (default main)"),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    ({ repository, into, context, canonicalRef }) =>
      run(async () => {
        const done = await strata.acquire({ repository, context, canonicalRef }, { into: newDirectory(into, "into") });
        const last = done.steps.at(-1);
        return {
          workContextId: done.workContextId,
          path: done.path,
          rung: last?.plan.rung ?? null,
          snapshotId: last?.plan.snapshot?.id ?? null,
          reported: last?.reported ?? null,
          missing: last?.result?.status === "restored" ? null : (last?.result?.missing ?? null),
          steps: done.steps.map((s) => ({ rung: s.plan.rung, reported: s.reported, error: s.error })),
        };
      }),
  );

  server.registerTool(
    "snapshot_diff",
    {
      title: "Diff two snapshots",
      description:
        "The files that differ between two of your snapshots of one repository, with a unified diff per text file. " +
        "Sizes are bounded (what was cut is said); binary files are named, not dumped; secrets are never shown.",
      inputSchema: { from: idField, to: idField },
      annotations: { readOnlyHint: true },
    },
    ({ from, to }) => run(() => strata.diff(from, to)),
  );

  server.registerTool(
    "worktree_verify",
    {
      title: "Verify a checkout against a snapshot",
      description:
        "Whether the checkout at `dir` is still exactly what snapshot `snapshotId` recorded (HEAD and every file); " +
        "lists the drifted paths when not. Reads only.",
      inputSchema: { dir: z.string().min(1).describe("The checkout, under a root"), snapshotId: idField },
      annotations: { readOnlyHint: true },
    },
    ({ dir, snapshotId }) => run(() => strata.verify(confined(dir, "dir"), snapshotId)),
  );

  server.registerResource(
    "snapshot-manifest",
    new ResourceTemplate("strata://snapshots/{snapshotId}/manifest", { list: undefined }),
    {
      title: "Snapshot manifest",
      description: "What a snapshot recorded: HEAD, branch, tree, change sets, unpushed commits, files left out.",
      mimeType: "application/json",
    },
    async (uri, { snapshotId }) => {
      const { snapshot, manifest } = await strata.manifest(String(snapshotId));
      return {
        contents: [{ uri: uri.href, mimeType: "application/json", text: jsonText({ snapshot, manifest }, 2) }],
      };
    },
  );

  return server;
}
