// An error as a log line's `err` field: one line, whatever the error's message looked like.
import { describe, expect, it } from "vitest";
import { errorFields } from "./logger.ts";

/** Errors as Prisma 6 throws them (messages copied from real ones, paths changed). */
const prismaErrors = {
  // A model call: the excerpt of the calling code, then what happened.
  findMany: Object.assign(
    new Error(
      "\nInvalid `c.db.job.findMany()` invocation in\n/srv/strata/server/jobs/queue.ts:3:22\n\n" +
        '  1 import { openCatalog } from "./server/db/client.ts";\n' +
        '  2 const c = openCatalog("postgresql://strata:hunter2@db:5432/strata", { poolSize: 1 });\n' +
        "→ 3 try { await c.db.job.findMany(\nCan't reach database server at 127.0.0.1:1",
    ),
    { name: "PrismaClientKnownRequestError", code: "P1001" },
  ),
  // A raw query: no excerpt, the cause on the last line.
  raw: Object.assign(
    new Error(
      "\nInvalid `prisma.$queryRawUnsafe()` invocation:\n\n\nRaw query failed. Code: `N/A`. Message: `Can't reach database server at 127.0.0.1:1`",
    ),
    { name: "PrismaClientKnownRequestError", code: "P2010" },
  ),
  // Initialization errors carry their code as errorCode.
  init: Object.assign(
    new Error("\nInvalid `prisma.job.count()` invocation:\n\n\nCan't reach database server at db:5432"),
    {
      name: "PrismaClientInitializationError",
      errorCode: "P1001",
    },
  ),
};

describe("errorFields", () => {
  it("reduces Prisma's multi-line invocation text to its last meaningful line", () => {
    expect(errorFields(prismaErrors.findMany)).toEqual({
      code: "P1001",
      message: "Can't reach database server at 127.0.0.1:1",
    });
    expect(errorFields(prismaErrors.raw)).toEqual({
      code: "P2010",
      message: "Raw query failed. Code: `N/A`. Message: `Can't reach database server at 127.0.0.1:1`",
    });
    expect(errorFields(prismaErrors.init)).toEqual({
      code: "P1001",
      message: "Can't reach database server at db:5432",
    });
  });

  it("falls back to the code when nothing but the excerpt is left", () => {
    const bare = Object.assign(
      new Error("\nInvalid `prisma.job.update()` invocation in\n/srv/x.ts:1:1\n\n→ 1 db.job.update(\n"),
      {
        code: "P2025",
      },
    );
    expect(errorFields(bare)).toEqual({ code: "P2025", message: "P2025" });
  });

  it("puts any other multi-line message on one line, and an unexpected error's stack under it", () => {
    const fields = errorFields(new TypeError("first line\n  second line\n"));
    expect(fields.code).toBe("INTERNAL");
    expect(fields.message).toBe("first line / second line");
    expect(fields.stack?.split("\n")[0]).toBe("first line / second line");
    expect(
      fields.stack
        ?.split("\n")
        .slice(1)
        .every((l) => /^\s+at /.test(l)),
    ).toBe(true);
    expect(errorFields("a thrown string")).toEqual({ code: "INTERNAL", message: "a thrown string" });
  });

  it("still blanks credentials", () => {
    const e = Object.assign(new Error("connect to postgresql://strata:hunter2@db:5432/x failed"), { code: "P1001" });
    expect(errorFields(e).message).toBe("connect to postgresql://[redacted]@db:5432/x failed");
  });
});
