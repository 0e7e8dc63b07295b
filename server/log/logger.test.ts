// The log's own guarantee, apart from the end-to-end search for seeded secrets in
// observability.test.ts: a secret field is blanked wherever a caller puts it in a line's fields,
// in a child logger's bindings, or in the headers of a request it logs, and the caller's objects
// are left as they were.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configureLogging, logger } from "./logger.ts";

const lines: string[] = [];

beforeAll(async () => {
  await configureLogging({
    level: "info",
    pretty: false,
    destination: new Writable({ write: (c: Buffer, _e, done) => done(void lines.push(c.toString())) }),
  });
});
// Back to the silent logger tests run with.
afterAll(async () => {
  await configureLogging({ level: "silent" });
});

function lastLine(): Record<string, unknown> {
  return JSON.parse(lines.at(-1)!) as Record<string, unknown>;
}

describe("the process log", () => {
  it("blanks secret fields at the top of a line and below it, in any case", () => {
    logger().info(
      {
        token: "t-1",
        Password: "p-1",
        cookie: "c-1",
        authorization: "Bearer a-1",
        secret: "s-1",
        body: "b-1",
        content: "k-1",
        job: { id: "job-7", token: "t-2", spec: { repository: { secret: "s-2" } } },
        attempts: [{ n: 1, Authorization: "a-2" }, "second"],
        agentId: "agent-3",
      },
      "with secrets",
    );
    const line = lastLine();
    for (const key of ["token", "Password", "cookie", "authorization", "secret", "body", "content"]) {
      expect(line[key]).toBe("[redacted]");
    }
    expect(line.job).toEqual({ id: "job-7", token: "[redacted]", spec: { repository: { secret: "[redacted]" } } });
    expect(line.attempts).toEqual([{ n: 1, Authorization: "[redacted]" }, "second"]);
    expect(line.agentId).toBe("agent-3");
    expect(line.msg).toBe("with secrets");
    expect(lines.join("")).not.toMatch(/t-1|p-1|c-1|a-1|s-1|b-1|k-1|t-2|s-2|a-2/);
  });

  it("blanks the credentials among logged headers and keeps the rest", () => {
    logger().info(
      {
        headers: { "Set-Cookie": ["sid=1"], accept: "application/json" },
        req: { headers: { Authorization: "Basic x", cookie: "sid=2", "set-cookie": "sid=3", host: "strata.test" } },
      },
      "headers",
    );
    expect(lastLine().headers).toEqual({ "Set-Cookie": "[redacted]", accept: "application/json" });
    expect(lastLine().req).toEqual({
      headers: { Authorization: "[redacted]", cookie: "[redacted]", "set-cookie": "[redacted]", host: "strata.test" },
    });
  });

  it("blanks a child logger's bindings", () => {
    logger().child({ token: "bound-secret", worker: "host-1" }).info("child line");
    expect(lastLine()).toMatchObject({ token: "[redacted]", worker: "host-1", msg: "child line" });
    expect(lines.at(-1)).not.toContain("bound-secret");
  });

  it("leaves the caller's objects unchanged, an error keeping its message", () => {
    const job = { id: "job-8", token: "t-3", tags: ["a", "b"] };
    const error = Object.assign(new Error("upload refused"), { body: "response body" });
    const fields = { job, err: error };
    logger().warn(fields, "refused");
    expect(fields).toEqual({ job: { id: "job-8", token: "t-3", tags: ["a", "b"] }, err: error });
    expect(error.body).toBe("response body");
    const line = lastLine();
    expect(line.job).toEqual({ id: "job-8", token: "[redacted]", tags: ["a", "b"] });
    expect(line.err).toMatchObject({ type: "Error", message: "upload refused", body: "[redacted]" });
    expect(String((line.err as { stack: string }).stack)).toContain("upload refused");
  });

  it("writes a line with nothing to blank as it was given", () => {
    const fields = { reqId: "r-1", procedures: ["workspace.acquire"], status: 200, durationMs: 3.2 };
    logger().info(fields, "request");
    expect(lastLine()).toMatchObject({ ...fields, level: "info", msg: "request" });
  });
});
