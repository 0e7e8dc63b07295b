// The SDK from another project, as it gets it by path (`npm install ../strata` links the
// checkout into node_modules) or in `npm pack`'s tarball: `npm run build:client` builds it, a TypeScript project type-checks
// against `strata/client` (and a call with a wrong input does not compile: the types are the
// router's, not `any`), and plain Node imports it and gets typed errors from it.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeTemporaryDirectories, temporaryDirectory } from "../server/testing/repos.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

afterAll(removeTemporaryDirectories);

describe("strata/client from another project", () => {
  let project: string;

  beforeAll(() => {
    execFileSync(process.execPath, [join(ROOT, "scripts/build-client.mjs")], { cwd: ROOT, stdio: "pipe" });
    project = temporaryDirectory("strata-sdk-consumer-");
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "harness", type: "module", private: true }));
    mkdirSync(join(project, "node_modules"));
    symlinkSync(ROOT, join(project, "node_modules", "strata"), "dir");
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "nodenext",
          moduleResolution: "nodenext",
          strict: true,
          skipLibCheck: true,
          noEmit: true,
          types: ["node"],
          typeRoots: [join(ROOT, "node_modules/@types")],
        },
        files: ["harness.ts"],
      }),
    );
  }, 600_000);

  function typeCheck(source: string) {
    writeFileSync(join(project, "harness.ts"), source);
    return spawnSync(process.execPath, [TSC, "-p", project], { cwd: project, encoding: "utf8" });
  }

  it("type-checks a harness against the router's own types", () => {
    const good = typeCheck(`
      import { createStrataClient, isStrataError, type CapturePublishResult } from "strata/client";
      const strata = createStrataClient({ url: "http://127.0.0.1:3000", token: process.env.STRATA_TOKEN ?? "" });
      export async function turn(dir: string): Promise<string> {
        const saved: CapturePublishResult = await strata.checkpoint(dir, { context: "task-1", repository: "github.com/acme/app" });
        const page = await strata.api.snapshot.list.query({ limit: 10 });
        const ids: string[] = page.items.map((s) => s.id);
        try {
          await strata.api.snapshot.get.query({ snapshotId: saved.snapshotId });
        } catch (error) {
          if (isStrataError(error, "NOT_FOUND")) return error.hint ?? error.message;
        }
        return ids.join(",");
      }
    `);
    expect(good.stdout + good.stderr).toBe("");
    expect(good.status).toBe(0);

    const bad = typeCheck(`
      import { createStrataClient } from "strata/client";
      const strata = createStrataClient({ url: "http://127.0.0.1:3000", token: "t" });
      export const wrong = strata.api.snapshot.get.query({ snapshot: 42 });
    `);
    expect(bad.status).not.toBe(0);
    expect(bad.stdout).toContain("'snapshot' does not exist in type '{ snapshotId: string;");
  }, 300_000);

  it("ships in npm pack's tarball: the SDK's JavaScript and declarations, no local state", () => {
    const packed = execFileSync("npm", ["pack", "--dry-run", "--ignore-scripts", "--json"], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, npm_config_loglevel: "silent" },
    });
    const files = (JSON.parse(packed) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining(["dist/cli/client.mjs", "dist/types/client/index.d.ts", "package.json"]),
    );
    expect(files.filter((f) => /^(node_modules|\.next|\.strata[^/]*|test-results)\//.test(f))).toEqual([]);
  }, 120_000);

  it("runs under plain Node and throws typed, retryable errors", () => {
    writeFileSync(
      join(project, "run.mjs"),
      `
      import { createStrataClient, isStrataError } from "strata/client";
      const strata = createStrataClient({ url: "http://127.0.0.1:9", token: "strata_x", retry: { attempts: 2, baseDelayMs: 10 } });
      try {
        await strata.api.lineage.list.query({});
      } catch (error) {
        console.log(JSON.stringify({ typed: isStrataError(error), code: error.code, retryable: error.retryable }));
      }
      `,
    );
    const out = execFileSync(process.execPath, ["run.mjs"], { cwd: project, encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({ typed: true, code: "UNAVAILABLE", retryable: true });
  }, 60_000);
});
