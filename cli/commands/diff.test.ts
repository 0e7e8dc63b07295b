// strata diff as a user runs it: a real process against a catalog of each kind (and once through
// a real HTTP server), two real captures of one checkout, real exit codes and output.
import { beforeAll, afterAll, expect, it } from "vitest";
import { captureAndPublish, localCatalog } from "../../server/capture/capture-publish.ts";
import type { SnapshotDiff } from "../../server/domain/snapshot-diff.ts";
import { describeEachDatabase } from "../../server/testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../../server/testing/lineage.ts";
import { addOrigin, initRepository, removeTemporaryDirectories, write } from "../../server/testing/repos.ts";
import { runStrata } from "../../server/testing/cli.ts";
import { serveApp } from "../../server/testing/http-server.ts";
import { RESTORE_EXIT } from "./restore.ts";

afterAll(removeTemporaryDirectories);

describeEachDatabase("strata diff", (catalog) => {
  let agent: TestAgent;
  let env: Record<string, string>;
  let first: string;
  let second: string;

  beforeAll(async () => {
    const db = catalog().db;
    agent = await makeAgent(db, "cli-differ");
    env = { DATABASE_URL: catalog().url };
    const root = initRepository({ "README.md": "# App\n\nHello.\n", "icon.bin": Buffer.from([0, 1, 2, 3]) });
    addOrigin(root);
    const target = {
      kind: "checkpoint" as const,
      key: {
        repository: { identity: `example.test/acme/${uniqueName("cli-diff")}` },
        backendKind: "local",
        baseImage: "img",
        workContextId: uniqueName("wc"),
      },
    };
    const port = localCatalog(db, agent.scope);
    write(root, "README.md", "# App\n\nHello, world.\n");
    first = (await captureAndPublish(port, { dir: root, target })).snapshotId;
    write(root, "README.md", "# App\n\nHello, everyone.\n");
    write(root, "icon.bin", Buffer.concat([Buffer.from([0, 9]), Buffer.alloc(2048, 1)]));
    write(root, "src/main.ts", "export const answer = 42;\n");
    second = (await captureAndPublish(port, { dir: root, target })).snapshotId;
  }, 120_000);

  it("prints the stat, then the unified diff, binary files named with their sizes", async () => {
    const run = await runStrata(["diff", first, second, "--agent", agent.name], env);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split("\n");
    expect(lines.slice(0, 4)).toEqual([
      " README.md   | 2 +-",
      " icon.bin    | binary, size not held -> 2.0 KiB",
      " src/main.ts | 1 +",
      " 3 file(s) changed, 2 insertion(s)(+), 1 deletion(s)(-) [1 added, 2 modified, 0 deleted]",
    ]);
    expect(run.stdout).toMatch(
      /diff --git a\/README.md b\/README.md\nindex [0-9a-f]{40}\.\.[0-9a-f]{40} 100644\n--- a\/README.md\n\+\+\+ b\/README.md\n@@ -1,3 \+1,3 @@\n # App\n \n-Hello, world.\n\+Hello, everyone.\n/,
    );
    expect(run.stdout).toMatch(/Binary files a\/icon.bin and b\/icon.bin differ \(binary, size not held -> 2.0 KiB\)/);
    expect(run.stdout).toMatch(
      /new file mode 100644\n.*\n--- \/dev\/null\n\+\+\+ b\/src\/main.ts\n@@ -0,0 \+1,1 @@\n\+export const answer = 42;/,
    );
  }, 120_000);

  it("answers --stat, --name-only and --json", async () => {
    const stat = await runStrata(["diff", first, second, "--agent", agent.name, "--stat"], env);
    expect(stat.code, stat.stderr).toBe(0);
    expect(stat.stdout).not.toContain("diff --git");
    expect(stat.stdout).toContain("3 file(s) changed");

    const names = await runStrata(["diff", first, second, "--agent", agent.name, "--name-only"], env);
    expect(names.stdout).toBe("README.md\nicon.bin\nsrc/main.ts\n");

    const json = await runStrata(["diff", first, second, "--agent", agent.name, "--json"], env);
    const answer = JSON.parse(json.stdout) as SnapshotDiff;
    expect(answer).toMatchObject({ completeness: "exact", from: { id: first }, to: { id: second } });
    expect(answer.files.map((f) => [f.path, f.change, f.content])).toEqual([
      ["README.md", "modified", "text"],
      ["icon.bin", "modified", "binary"],
      ["src/main.ts", "added", "text"],
    ]);
  }, 120_000);

  it("reads through a Strata server with STRATA_TOKEN, and refuses another agent's snapshot", async () => {
    const { url, close } = await serveApp({ db: catalog().db });
    try {
      const run = await runStrata(["diff", first, second, "--name-only"], {
        STRATA_SERVER_URL: url,
        STRATA_TOKEN: agent.token,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe("README.md\nicon.bin\nsrc/main.ts\n");
      const stranger = await makeAgent(catalog().db, "cli-stranger");
      const refused = await runStrata(["diff", first, second, "--json"], {
        STRATA_SERVER_URL: url,
        STRATA_TOKEN: stranger.token,
      });
      expect(refused.code).toBe(RESTORE_EXIT.NOT_FOUND);
      expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: "NOT_FOUND" } });
    } finally {
      await close();
    }
  }, 120_000);
});
