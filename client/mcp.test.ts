// `strata mcp` as a harness runs it: a real child process (node cli/strata.mjs mcp --root R),
// driven over stdio by the MCP SDK's own client, against a real server on a test catalog of each
// kind. It lists its tools, checkpoints a fixture checkout, lists and reads the snapshot,
// restores it into a new directory under the root, diffs two checkpoints, acquires the task's
// workspace; refuses paths outside its roots (symbolic links too) and restores into an existing
// directory; a bad token gives a tool error carrying the code; and its stdout holds protocol
// messages only.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../server/testing/databases.ts";
import { serveApp, type TestServer } from "../server/testing/http-server.ts";
import { makeAgent, uniqueName } from "../server/testing/lineage.ts";
import { git, removeTemporaryDirectories, temporaryDirectory, write } from "../server/testing/repos.ts";

const STRATA = fileURLToPath(new URL("../cli/strata.mjs", import.meta.url));

afterAll(removeTemporaryDirectories);

/**
 * Runs `strata mcp` behind a tee that keeps every byte of its stdout (and its stderr) in files,
 * so the test can read what the harness received besides what the client parsed.
 */
function teeScript(dir: string): string {
  const tee = join(dir, "tee.mjs");
  writeFileSync(
    tee,
    `import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
const [out, err, ...command] = process.argv.slice(2);
const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
const kept = createWriteStream(out);
child.stdout.on("data", (chunk) => { kept.write(chunk); process.stdout.write(chunk); });
child.stderr.pipe(createWriteStream(err));
process.stdin.pipe(child.stdin);
child.on("exit", (code) => kept.end(() => process.exit(code ?? 0)));
`,
  );
  return tee;
}

interface ToolAnswer {
  isError?: boolean;
  content: Array<{ type: string; text: string }>;
  structuredContent?: Record<string, unknown>;
}

describeEachDatabase("strata mcp over stdio", (catalog) => {
  let server: TestServer | undefined;
  let root: string;
  let logs: string;
  beforeAll(async () => {
    server = await serveApp({ db: catalog().db });
    root = temporaryDirectory("strata-mcp-root-");
    logs = temporaryDirectory("strata-mcp-logs-");
  });
  afterAll(() => server?.close());

  async function connect(token: string, name: string): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        teeScript(logs),
        join(logs, `${name}.stdout`),
        join(logs, `${name}.stderr`),
        process.execPath,
        STRATA,
        "mcp",
        "--root",
        root,
      ],
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        STRATA_TOKEN: token,
        STRATA_SERVER_URL: server!.url,
      },
      stderr: "ignore",
    });
    const client = new Client({ name: "test-harness", version: "1.0.0" });
    await client.connect(transport);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as ToolAnswer;

  it("serves checkpoint, list, manifest, restore and diff inside its roots, and refuses the rest", async () => {
    const { token } = await makeAgent(catalog().db);
    const client = await connect(token, "session");
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        "snapshot_checkpoint",
        "snapshot_diff",
        "snapshot_list",
        "snapshot_restore",
        "workspace_acquire",
        "worktree_verify",
      ]);
      for (const tool of tools) {
        expect(tool.description?.length, tool.name).toBeGreaterThan(40);
        expect(tool.inputSchema.type).toBe("object");
        // The token comes from the environment, never from a tool argument.
        expect(Object.keys(tool.inputSchema.properties ?? {})).not.toContain("token");
      }

      const checkout = join(root, "checkout");
      mkdirSync(checkout);
      git(checkout, ["init", "--quiet", "--initial-branch=main"]);
      write(checkout, "README.md", "# mcp\n");
      git(checkout, ["add", "-A"]);
      git(checkout, ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "--quiet", "-m", "first"]);
      write(checkout, "notes.txt", "work in progress\n");
      const repository = `example.invalid/${uniqueName("mcp")}`;
      const context = uniqueName("task");

      const first = await call(client, "snapshot_checkpoint", { dir: checkout, context, repository });
      expect(first.isError ?? false).toBe(false);
      expect(first.structuredContent).toMatchObject({ outcome: "appended", snapshotId: expect.any(String) });
      const firstId = first.structuredContent!.snapshotId as string;
      expect(JSON.parse(first.content[0]!.text)).toEqual(first.structuredContent);

      const listed = await call(client, "snapshot_list", {});
      expect((listed.structuredContent!.items as Array<{ id: string }>).map((s) => s.id)).toContain(firstId);

      const resource = await client.readResource({ uri: `strata://snapshots/${firstId}/manifest` });
      const manifest = JSON.parse((resource.contents[0] as { text: string }).text) as {
        snapshot: { id: string };
        manifest: { head: string };
      };
      expect(manifest.snapshot.id).toBe(firstId);
      expect(manifest.manifest.head).toBe(git(checkout, ["rev-parse", "HEAD"]).trim());

      const restored = await call(client, "snapshot_restore", { snapshotId: firstId, into: join(root, "restored") });
      expect(restored.structuredContent).toMatchObject({ result: { status: "restored" } });
      expect(readFileSync(join(root, "restored", "notes.txt"), "utf8")).toBe("work in progress\n");
      const verified = await call(client, "worktree_verify", { dir: join(root, "restored"), snapshotId: firstId });
      expect(verified.structuredContent).toMatchObject({ matches: true });

      write(checkout, "notes.txt", "work in progress\nand more\n");
      const second = await call(client, "snapshot_checkpoint", { dir: checkout, context, repository });
      const diff = await call(client, "snapshot_diff", { from: firstId, to: second.structuredContent!.snapshotId });
      expect(diff.structuredContent).toMatchObject({ stat: { files: 1, modified: 1 } });
      expect(JSON.stringify(diff.structuredContent)).toContain("+and more");

      // The task continues elsewhere: its newest checkpoint, in a new directory.
      const acquired = await call(client, "workspace_acquire", { repository, context, into: join(root, "acquired") });
      expect(acquired.structuredContent).toMatchObject({
        workContextId: context,
        rung: "checkpoint",
        snapshotId: second.structuredContent!.snapshotId,
        reported: "restored",
      });
      expect(readFileSync(join(root, "acquired", "notes.txt"), "utf8")).toBe("work in progress\nand more\n");

      // Outside the roots: refused before any work, a symbolic link out of the root too.
      const elsewhere = temporaryDirectory("strata-mcp-elsewhere-");
      symlinkSync(elsewhere, join(root, "escape"));
      for (const dir of [elsewhere, join(root, ".."), join(root, "escape")]) {
        const refused = await call(client, "snapshot_checkpoint", { dir, context, repository });
        expect(refused.isError, dir).toBe(true);
        expect(refused.content[0]!.text).toMatch(
          /^INVALID_INPUT: dir .* is outside the directories this server may use\./,
        );
        expect(refused.content[0]!.text).toContain("hint: Use a path under");
      }
      const outside = await call(client, "snapshot_restore", { snapshotId: firstId, into: join(elsewhere, "x") });
      expect(outside.content[0]!.text).toMatch(/^INVALID_INPUT: into/);
      const existing = await call(client, "snapshot_restore", { snapshotId: firstId, into: join(root, "restored") });
      expect(existing.isError).toBe(true);
      expect(existing.content[0]!.text).toMatch(/^UNSAFE_TARGET: /);
      const unknown = await call(client, "snapshot_restore", {
        snapshotId: "no-such-snapshot",
        into: join(root, "new"),
      });
      expect(unknown.structuredContent).toMatchObject({ error: { code: "NOT_FOUND", retryable: false } });
    } finally {
      await client.close();
    }

    // Everything the harness received on stdout was a JSON-RPC message.
    const lines = readFileSync(join(logs, "session.stdout"), "utf8").split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: "2.0" });
  }, 180_000);

  it("answers a bad token with a tool error carrying the code", async () => {
    const client = await connect("strata_not-a-valid-token", "bad-token");
    try {
      const denied = await call(client, "snapshot_list", {});
      expect(denied.isError).toBe(true);
      expect(denied.content[0]!.text).toMatch(/^UNAUTHORIZED: A valid agent token is required\.\nhint: /);
    } finally {
      await client.close();
    }
  }, 60_000);
});
