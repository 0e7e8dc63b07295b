import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  findExecutable,
  forkStarter,
  posixSpawnStarter,
  startProcess,
  type ProcessStarter,
  type StartOptions,
} from "./process.ts";
import { removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";

afterAll(removeTemporaryDirectories);

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

function run(
  start: ProcessStarter,
  file: string,
  args: string[],
  options: Partial<StartOptions> & { input?: Buffer | string; onStart?: (pid: number | undefined) => void } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = start(file, args, {
      cwd: options.cwd ?? process.cwd(),
      env: options.env ?? { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    options.onStart?.(child.pid);
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.stdin.on("error", () => undefined);
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout: Buffer.concat(out), stderr }));
    child.stdin.end(options.input ?? "");
  });
}

const node = process.execPath;

const starters: Array<[string, ProcessStarter]> = [["fork", forkStarter]];
if (posixSpawnStarter) starters.push(["posix_spawn", posixSpawnStarter]);

describe("how git is started", () => {
  it("uses posix_spawn on Linux (the native module is built by npm install)", () => {
    if (process.platform !== "linux") return;
    expect(posixSpawnStarter).not.toBeNull();
    expect(startProcess).toBe(posixSpawnStarter);
  });

  it("falls back to Node's spawn when STRATA_NATIVE_SPAWN=0", () => {
    const module = new URL("./process.ts", import.meta.url).href;
    const script = `const m = await import(${JSON.stringify(module)}); console.log(m.startProcess === m.forkStarter)`;
    const run = (env: Record<string, string>) =>
      execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        env: { ...process.env, ...env },
      })
        .toString()
        .trim();
    expect(run({ STRATA_NATIVE_SPAWN: "0" })).toBe("true");
    if (process.platform === "linux") expect(run({ STRATA_NATIVE_SPAWN: "1" })).toBe("false");
  });

  it("finds a bare program name in the child's PATH, not this process's", () => {
    const dir = temporaryDirectory();
    const tool = join(dir, "my-tool");
    writeFileSync(tool, "#!/bin/sh\n");
    chmodSync(tool, 0o755);
    mkdirSync(join(dir, "not-a-file"));
    expect(findExecutable("my-tool", { PATH: `/nonexistent:${dir}` }, "/")).toBe(tool);
    expect(findExecutable("my-tool", { PATH: "/usr/bin" }, "/")).toBeNull();
    expect(findExecutable("not-a-file", { PATH: dir }, "/")).toBeNull();
    expect(findExecutable("./my-tool", { PATH: "" }, dir)).toBe(tool);
  });
});

describe.each(starters)("a program started by %s", (_name, start) => {
  it("passes stdin and stdout byte for byte, and reports the exit code", async () => {
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
    const done = await run(start, node, ["-e", "process.stdin.pipe(process.stdout); process.exitCode = 3"], {
      input: bytes,
    });
    expect(done.code).toBe(3);
    expect(done.signal).toBeNull();
    expect(done.stdout.equals(bytes)).toBe(true);
  });

  it("keeps stderr apart and delivers output larger than a pipe holds before `close`", async () => {
    const done = await run(start, node, [
      "-e",
      "process.stderr.write('warning'); process.stdout.write(Buffer.alloc(3 << 20, 97))",
    ]);
    expect(done.code).toBe(0);
    expect(done.stderr).toBe("warning");
    expect(done.stdout.length).toBe(3 << 20);
  });

  it("runs in the given directory with exactly the given environment", async () => {
    const dir = temporaryDirectory();
    const done = await run(start, node, ["-e", "console.log(process.cwd(), process.env.ONLY, process.env.HOME)"], {
      cwd: dir,
      env: { ONLY: "this" },
    });
    expect(done.stdout.toString().trim()).toBe(`${dir} this undefined`);
  });

  it("gives the child a process group of its own, and reports a kill as a signal", async () => {
    let pid: number | undefined;
    const done = run(start, node, ["-e", "setTimeout(() => {}, 60_000)"], { onStart: (p) => (pid = p) });
    expect(pid).toBeGreaterThan(0);
    // The group's id is the child's pid: killing the group ends it.
    process.kill(-(pid as number), "SIGKILL");
    expect(await done).toMatchObject({ code: null, signal: "SIGKILL" });
  });

  it("starts the child in a session of its own, with no terminal to prompt on", async () => {
    // Fields 5 and 6 of /proc/<pid>/stat: process group and session; 7: the controlling terminal.
    const done = await run(start, "/bin/sh", [
      "-c",
      "read -r pid comm state ppid pgrp sid tty rest < /proc/$$/stat; echo $pid $pgrp $sid $tty",
    ]);
    const [pid, pgrp, sid, tty] = done.stdout.toString().trim().split(" ");
    expect(pgrp).toBe(pid);
    expect(sid).toBe(pid);
    expect(tty).toBe("0");
  });

  it("starts the child with default signal handling (SIGPIPE is not inherited as ignored)", async () => {
    // Node ignores SIGPIPE; a child that inherited that would see `yes` complain of a broken pipe.
    const done = await run(start, "/bin/sh", ["-c", "yes | head -n 1"]);
    expect(done).toMatchObject({ code: 0, stderr: "" });
    expect(done.stdout.toString()).toBe("y\n");
  });

  it("survives a child that exits without reading its input", async () => {
    const done = await run(start, node, ["-e", "process.exit(0)"], { input: Buffer.alloc(1 << 20) });
    expect(done.code).toBe(0);
  });

  it("refuses a NUL byte in an argument or the environment before starting anything", () => {
    const options = { cwd: process.cwd(), env: { PATH: "/usr/bin" } };
    expect(() => start(node, ["-e", "0\u0000rm"], options)).toThrow(TypeError);
    expect(() => start(node, ["-e", "0"], { ...options, env: { A: "b\u0000c" } })).toThrow(TypeError);
  });

  it("runs the program PATH names now, after the one it found before is removed", async () => {
    const [first, second] = [temporaryDirectory(), temporaryDirectory()];
    for (const [dir, says] of [
      [first, "first"],
      [second, "second"],
    ] as const) {
      writeFileSync(join(dir, "strata-tool"), `#!/bin/sh\necho ${says}\n`);
      chmodSync(join(dir, "strata-tool"), 0o755);
    }
    const env = { PATH: `${first}:${second}:/usr/bin:/bin` };
    expect((await run(start, "strata-tool", [], { env })).stdout.toString()).toBe("first\n");
    rmSync(join(first, "strata-tool"));
    expect((await run(start, "strata-tool", [], { env })).stdout.toString()).toBe("second\n");
    rmSync(join(second, "strata-tool"));
    await expect(run(start, "strata-tool", [], { env })).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("reports a program that does not exist, or a directory that does not, as ENOENT", async () => {
    await expect(run(start, "strata-no-such-program", [])).rejects.toMatchObject({ code: "ENOENT" });
    await expect(run(start, node, ["-e", "0"], { cwd: "/nonexistent/strata" })).rejects.toMatchObject({
      code: "ENOENT",
    });
  });
});
