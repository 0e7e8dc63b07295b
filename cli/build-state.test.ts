// cli/strata.mjs rebuilds dist/cli before running when the checkout's build cannot be used as it
// is (scripts/build-cli.mjs's buildState): a source edited or deleted since the build, or a module
// of the build gone. Checked on a made-up checkout, through a real node process as strata runs it.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const BUILD_SCRIPT = fileURLToPath(new URL("../scripts/build-cli.mjs", import.meta.url));

function buildState(root: string): string | null {
  // The paths go in the environment: the script builds when it is process.argv[1].
  const out = execFileSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { buildState } = await import(process.env.BUILD_SCRIPT);
       process.stdout.write(JSON.stringify(buildState(process.env.CHECKOUT)));`,
    ],
    {
      encoding: "utf8",
      env: { ...process.env, BUILD_SCRIPT: pathToFileURL(BUILD_SCRIPT).href, CHECKOUT: `${root}${path.sep}` },
    },
  );
  return JSON.parse(out) as string | null;
}

describe("the CLI's build check", () => {
  let root: string;
  const builtAt = new Date(Date.now() - 60_000);
  const at = (...parts: string[]) => path.join(root, ...parts);

  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), "strata-build-state-"));
    mkdirSync(at("dist", "cli"), { recursive: true });
    mkdirSync(at("cli", "commands"), { recursive: true });
    for (const source of ["cli/main.ts", "cli/commands/capture.ts"]) {
      writeFileSync(at(source), "export {};\n");
      utimesSync(at(source), new Date(builtAt.getTime() - 60_000), new Date(builtAt.getTime() - 60_000));
    }
    for (const output of ["main.mjs", "main.mjs.map", "capture-ABC.mjs", "capture-ABC.mjs.map"]) {
      writeFileSync(at("dist", "cli", output), "\n");
    }
    writeFileSync(
      at("dist", "cli", "build-info.json"),
      JSON.stringify({
        files: ["capture-ABC.mjs", "capture-ABC.mjs.map", "main.mjs", "main.mjs.map"],
        inputs: ["cli/commands/capture.ts", "cli/main.ts"],
      }),
    );
    utimesSync(at("dist", "cli", "build-info.json"), builtAt, builtAt);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("uses a build newer than every source, even with a source map gone", () => {
    expect(buildState(root)).toBeNull();
    rmSync(at("dist", "cli", "capture-ABC.mjs.map"));
    expect(buildState(root)).toBeNull();
  });

  it("rebuilds after a source was edited or deleted", () => {
    const now = new Date();
    utimesSync(at("cli", "commands", "capture.ts"), now, now);
    expect(buildState(root)).toBe("stale");
    rmSync(at("cli", "commands", "capture.ts"));
    expect(buildState(root)).toBe("stale");
  });

  it("builds when a module of the build or its record is gone", () => {
    rmSync(at("dist", "cli", "capture-ABC.mjs"));
    expect(buildState(root)).toBe("missing");
    rmSync(at("dist", "cli", "build-info.json"));
    expect(buildState(root)).toBe("missing");
  });
});
