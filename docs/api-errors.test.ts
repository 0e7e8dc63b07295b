// docs/api.md's errors agree with the code: one "Errors by procedure" row per procedure of
// appRouter, every code named is a real one with the status and retryability the code gives
// it, every code the API can answer is in the Errors table, and each procedure section's
// "Errors:" paragraph agrees with its row.
import { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, type ErrorCode } from "../server/domain/errors.ts";
import { USER_ROLES } from "../server/domain/scope.ts";
import { appRouter } from "../server/trpc/root.ts";
import { documentedErrors } from "./api-errors.ts";

const doc = documentedErrors();
const procedures = Object.keys(appRouter._def.procedures).sort();
const known = new Set(Object.keys(ERROR_CODES));
const AUTH = new Set(["UNAUTHORIZED", "FORBIDDEN"]);

describe("docs/api.md errors", () => {
  it("has one Errors by procedure row for every procedure of appRouter, and no other", () => {
    expect(procedures.length).toBeGreaterThan(30);
    expect([...doc.byProcedure.keys()].sort()).toEqual(procedures);
  });

  it("names only codes that exist", () => {
    const named = [
      ...doc.codes.keys(),
      ...doc.common,
      ...doc.notApi,
      ...doc.blobRoutes,
      ...[...doc.byProcedure.values()].flatMap((r) => r.codes),
      ...[...doc.errorsParagraphs.values()].flat(),
    ];
    expect(named.filter((c) => !known.has(c))).toEqual([]);
  });

  it("gives each code the tRPC code, HTTP status and retryability of server/domain/errors.ts", () => {
    for (const [code, documented] of doc.codes) {
      const { status, retryable } = ERROR_CODES[code as ErrorCode];
      expect({ code, ...documented }).toEqual({
        code,
        trpcCode: status,
        httpStatus: getHTTPStatusCodeFromError(new TRPCError({ code: status })),
        retryable,
      });
    }
  });

  it("lists every code a procedure or blob route can answer in the Errors table, and says where the others go", () => {
    const answerable = new Set([
      ...doc.common,
      ...doc.blobRoutes,
      ...[...doc.byProcedure.values()].flatMap((r) => r.codes),
      // tRPC's own refusals of an unknown procedure.
      "NOT_FOUND",
    ]);
    expect([...answerable].filter((c) => !doc.codes.has(c))).toEqual([]);
    // Every code of ERROR_CODES is either an API answer (in the table) or named as never one.
    expect(doc.notApi.filter((c) => doc.codes.has(c))).toEqual([]);
    expect([...doc.codes.keys(), ...doc.notApi].sort()).toEqual([...known].sort());
    // A code in the table no procedure or route answers would be a stale row.
    expect([...doc.codes.keys()].filter((c) => !answerable.has(c))).toEqual([]);
  });

  it("states the common codes once, not per row", () => {
    expect(doc.common.sort()).toEqual(["INTERNAL", "INVALID_INPUT", "METHOD_NOT_ALLOWED", "UNSUPPORTED_MEDIA_TYPE"]);
    for (const [path, row] of doc.byProcedure) {
      expect({ path, repeated: row.codes.filter((c) => doc.common.includes(c)) }).toEqual({ path, repeated: [] });
      expect({ path, duplicates: row.codes.length - new Set(row.codes).size }).toEqual({ path, duplicates: 0 });
    }
  });

  it("gives each caller kind its authentication codes", () => {
    for (const [path, { caller, codes }] of doc.byProcedure) {
      const auth = codes.filter((c) => AUTH.has(c)).sort();
      let expected: string[];
      if (caller === "anyone") expected = [];
      else if (caller === "agent") expected = ["UNAUTHORIZED"];
      else {
        const roles = caller.split(",").map((r) => r.trim());
        expect({ path, unknownRoles: roles.filter((r) => !(USER_ROLES as readonly string[]).includes(r)) }).toEqual({
          path,
          unknownRoles: [],
        });
        expected = roles.length === USER_ROLES.length ? ["UNAUTHORIZED"] : ["FORBIDDEN", "UNAUTHORIZED"];
      }
      // restore.discardDegraded checks its roles in the service as well (FORBIDDEN all the same).
      expect({ path, auth }).toEqual({ path, auth: expected });
    }
  });

  it("keeps each procedure section's Errors: paragraph consistent with its row", () => {
    expect(doc.errorsParagraphs.size).toBeGreaterThan(10);
    for (const [path, named] of doc.errorsParagraphs) {
      const row = doc.byProcedure.get(path);
      expect({ path, hasRow: row !== undefined }).toEqual({ path, hasRow: true });
      const allowed = new Set([...(row?.codes ?? []), ...doc.common]);
      const specific = (row?.codes ?? []).filter((c) => !AUTH.has(c));
      expect({ path, notInRow: named.filter((c) => !allowed.has(c)) }).toEqual({ path, notInRow: [] });
      expect({ path, notInParagraph: specific.filter((c) => !named.includes(c)) }).toEqual({
        path,
        notInParagraph: [],
      });
    }
  });
});
