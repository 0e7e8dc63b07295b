import { describe, expect, it } from "vitest";
import { isStrataError } from "../domain/errors.ts";
import { createGitRunner, gitEnvironment, redactCredentials, subcommandOf } from "./runner.ts";
import { git, initRepository, removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";
import { afterAll } from "vitest";

afterAll(removeTemporaryDirectories);

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (error: unknown) => error,
  );
}

describe("the git environment", () => {
  it("drops variables that would point git elsewhere and never waits for a person", () => {
    const env = gitEnvironment({
      PATH: "/usr/bin",
      HOME: "/home/me",
      GIT_DIR: "/elsewhere",
      GIT_INDEX_FILE: "/other/index",
      GIT_WORK_TREE: "/w",
      GIT_CONFIG_PARAMETERS: "'core.pager'='evil'",
      GIT_SSH_COMMAND: "ssh -i key",
      GIT_CONFIG_GLOBAL: "/g",
    });
    expect(env.GIT_DIR).toBeUndefined();
    expect(env.GIT_INDEX_FILE).toBeUndefined();
    expect(env.GIT_WORK_TREE).toBeUndefined();
    expect(env.GIT_CONFIG_PARAMETERS).toBeUndefined();
    expect(env).toMatchObject({
      PATH: "/usr/bin",
      HOME: "/home/me",
      GIT_SSH_COMMAND: "ssh -i key",
      GIT_CONFIG_GLOBAL: "/g",
      GIT_TERMINAL_PROMPT: "0",
      GIT_PAGER: "cat",
      LC_ALL: "C",
      GIT_OPTIONAL_LOCKS: "0",
    });
    expect(gitEnvironment({}, { GIT_INDEX_FILE: "/mine" }).GIT_INDEX_FILE).toBe("/mine");
  });

  it("redacts credentials in text that may hold URLs", () => {
    expect(redactCredentials("fatal: unable to access 'https://user:tok@host/r/': 403")).toBe(
      "fatal: unable to access 'https://host/r/': 403",
    );
  });

  it("names the subcommand after global options", () => {
    expect(subcommandOf(["-c", "a=b", "--git-dir=x", "status", "-z"])).toBe("status");
  });
});

describe("running git", () => {
  it("passes stdin and returns stdout byte for byte", async () => {
    const root = initRepository();
    const git = createGitRunner({ cwd: root });
    const bytes = Buffer.from([0, 255, 10, 13, 0, 128]);
    const oid = await git.run({
      args: ["hash-object", "-w", "--stdin"],
      input: bytes,
      parse: (out) => out.stdout.toString().trim(),
    });
    const back = await git.run({ args: ["cat-file", "blob", oid], parse: (out) => out.stdout });
    expect(back.equals(bytes)).toBe(true);
  });

  it("starts git before its input is known, and stops it when the input fails", async () => {
    const root = initRepository();
    const repo = createGitRunner({ cwd: root });
    let give: (text: string) => void = () => undefined;
    const later = new Promise<string>((resolve) => {
      give = resolve;
    });
    const hashing = repo.run({ args: ["hash-object", "--stdin"], input: later, parse: (o) => o.stdout.toString() });
    give("known later\n");
    expect(await hashing).toBe(git(root, ["hash-object", "--stdin"], "known later\n"));

    const reason = new Error("no input after all");
    const failed = Promise.reject(reason);
    failed.catch(() => undefined);
    expect(await failure(repo.run({ args: ["hash-object", "--stdin"], input: failed, parse: () => null }))).toBe(
      reason,
    );
  });

  it("types the failures callers tell apart", async () => {
    const outside = createGitRunner({ cwd: temporaryDirectory() });
    const notRepo = await failure(outside.run({ args: ["rev-parse", "--show-toplevel"], parse: () => null }));
    expect(isStrataError(notRepo, "NOT_A_REPOSITORY")).toBe(true);

    const missing = createGitRunner({ cwd: temporaryDirectory(), gitPath: "/nonexistent/git" });
    expect(isStrataError(await failure(missing.run({ args: ["status"], parse: () => null })), "GIT_UNAVAILABLE")).toBe(
      true,
    );

    const gone = createGitRunner({ cwd: "/nonexistent/dir" });
    expect(isStrataError(await failure(gone.run({ args: ["status"], parse: () => null })), "NOT_A_REPOSITORY")).toBe(
      true,
    );

    const repo = createGitRunner({ cwd: initRepository() });
    const bad = await failure(repo.run({ args: ["cat-file", "-p", "nope"], parse: () => null }));
    expect(isStrataError(bad, "GIT_FAILED")).toBe(true);
    expect((bad as Error).message).toMatch(/cat-file/);
    expect(
      await repo.run({ args: ["cat-file", "-e", "0".repeat(40)], okExitCodes: [0, 1, 128], parse: (o) => o.exitCode }),
    ).not.toBe(0);
  });

  it("ends a call that runs too long, or is aborted, with its whole process group", async () => {
    // `sleep` stands in for a git that hangs (a credential prompt, a slow filter).
    const slow = createGitRunner({ cwd: temporaryDirectory(), gitPath: "sleep" });
    const started = Date.now();
    const timedOut = await failure(slow.run({ args: ["5"], timeoutMs: 100, parse: () => null }));
    expect(isStrataError(timedOut, "TIMEOUT")).toBe(true);
    expect(Date.now() - started).toBeLessThan(3000);

    const controller = new AbortController();
    const aborting = createGitRunner({ cwd: temporaryDirectory(), gitPath: "sleep", signal: controller.signal });
    const pending = failure(aborting.run({ args: ["5"], parse: () => null }));
    setTimeout(() => controller.abort(), 50);
    expect(isStrataError(await pending, "ABORTED")).toBe(true);
    expect(isStrataError(await failure(aborting.run({ args: ["1"], parse: () => null })), "ABORTED")).toBe(true);
  });

  it("refuses output beyond its limit and NUL bytes in arguments", async () => {
    const repo = createGitRunner({ cwd: initRepository() });
    const tooMuch = await failure(repo.run({ args: ["log", "-p"], maxOutputBytes: 10, parse: () => null }));
    expect(isStrataError(tooMuch, "GIT_FAILED")).toBe(true);
    const nul = await failure(repo.run({ args: ["status", "a\0b"], parse: () => null }));
    expect(isStrataError(nul, "INVALID_INPUT")).toBe(true);
  });
});
