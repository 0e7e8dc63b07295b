// The OpenAPI document of the REST surface: a valid OpenAPI 3.1 document (checked by an OpenAPI
// validator), generated from the router so it names every agent procedure and no staff one, with
// the procedures' own schemas, bearer auth, the Idempotency-Key on exactly the creating calls
// docs/api.md names, and the error schema every refusal's body matches.
import { readFileSync } from "node:fs";
import { compileErrors, validate } from "@readme/openapi-parser";
import type { OpenAPIV3_1 } from "openapi-types";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { StrataError } from "../domain/errors.ts";
import { appRouter } from "../trpc/root.ts";
import { openApiDocument, strataErrorSchema } from "./openapi-document.ts";
import { queryPlan, readQueryInput } from "./query-input.ts";

type Operation = OpenAPIV3_1.OperationObject & { "x-trpc-procedure": string };

const document = openApiDocument();

/** Every operation of the document, with its method and path. */
function operations(): { method: string; path: string; operation: Operation }[] {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item ?? {}).map(([method, operation]) => ({ method, path, operation: operation as Operation })),
  );
}

const procedures = appRouter._def.procedures as unknown as Record<
  string,
  { _def: { type: string; meta?: { audience?: string }; inputs: z.ZodType[]; output?: z.ZodType } }
>;

const byProcedure = (name: string) => operations().find((o) => o.operation["x-trpc-procedure"] === name)!;

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    expect(document.openapi).toBe("3.1.0");
    // The validator may dereference what it is given: hand it a copy.
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? "valid" : compileErrors(result)).toBe("valid");
  });

  it("has one operation per agent procedure (and health), none for the dashboard's", () => {
    const served = operations().map((o) => o.operation["x-trpc-procedure"]);
    const agentOrPublic = Object.entries(procedures)
      .filter(([, p]) => p._def.meta?.audience === "agent" || p._def.meta?.audience === "public")
      .map(([name]) => name);
    expect(served.sort()).toEqual(agentOrPublic.sort());
    expect(served).toContain("snapshot.diff");
    expect(served).toContain("health");
    expect(served.some((name) => name.startsWith("dashboard.") || name.startsWith("browse."))).toBe(false);
    expect(Object.keys(procedures).filter((name) => name.startsWith("dashboard.")).length).toBeGreaterThan(0);
    const ids = operations().map((o) => o.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("serves queries as GET and mutations as POST, under a path of the procedure's name, tagged by router", () => {
    for (const { method, path, operation } of operations()) {
      const procedure = operation["x-trpc-procedure"];
      expect({ procedure, method }).toEqual({
        procedure,
        method: procedures[procedure]!._def.type === "query" ? "get" : "post",
      });
      expect(path).toBe(`/${procedure.replace(".", "/")}`);
      expect(operation.tags).toEqual([procedure.split(".")[0]]);
    }
    expect(byProcedure("checkpoint.append").operation.operationId).toBe("checkpointAppend");
    expect(document.tags?.map((t) => t.name)).toContain("workspace");
  });

  it("describes inputs and answers with the procedures' own schemas", () => {
    const append = byProcedure("checkpoint.append").operation;
    const body = (append.requestBody as OpenAPIV3_1.RequestBodyObject).content["application/json"]!.schema;
    const { $schema: _, ...own } = z.toJSONSchema(procedures["checkpoint.append"]!._def.inputs[0]!, { io: "input" });
    expect(body).toEqual(own);
    expect(body).toMatchObject({ type: "object", additionalProperties: false });
    expect((body as { required: string[] }).required).toEqual(expect.arrayContaining(["key", "manifest"]));
    // A date is sent as an ISO 8601 string, a bigint as a decimal string.
    const get = byProcedure("snapshot.get").operation;
    type Schema = { type?: unknown; format?: string; pattern?: string; properties: Record<string, Schema> };
    const answer = (get.responses!["200"] as OpenAPIV3_1.ResponseObject).content!["application/json"]!.schema as Schema;
    expect(answer.properties.createdAt).toEqual({ type: "string", format: "date-time" });
    expect(answer.properties.manifest!.properties.sizeBytes).toMatchObject({ type: "string", pattern: "^-?[0-9]+$" });
  });

  it("gives a flat query one parameter per field and a nested one an input parameter of JSON", () => {
    const list = byProcedure("pin.list").operation.parameters as OpenAPIV3_1.ParameterObject[];
    expect(list.map((p) => [p.name, p.in, p.required])).toEqual([
      ["snapshotId", "query", false],
      ["active", "query", false],
      ["limit", "query", false],
    ]);
    const head = byProcedure("baseline.head").operation.parameters as OpenAPIV3_1.ParameterObject[];
    expect(head.map((p) => [p.name, p.in, p.required, Object.keys(p.content ?? {})])).toEqual([
      ["input", "query", true, ["application/json"]],
    ]);
  });

  it("asks for the agent token, except on health", () => {
    expect(document.components?.securitySchemes?.agentToken).toMatchObject({ type: "http", scheme: "bearer" });
    expect(document.security).toEqual([{ agentToken: [] }]);
    expect(byProcedure("health").operation.security).toEqual([]);
    expect(byProcedure("workspace.acquire").operation.security).toBeUndefined();
    expect(byProcedure("workspace.acquire").operation.responses!["401"]).toEqual({
      $ref: "#/components/responses/Unauthorized",
    });
  });

  it("takes an Idempotency-Key on exactly the creating calls docs/api.md names", () => {
    const docs = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
    const sentence = /The procedures that take one are those that create something: ([^(]+)\(/.exec(docs)![1]!;
    const documented = [...sentence.matchAll(/`([a-zA-Z.]+)`/g)].map((m) => m[1]!);
    expect(documented).toHaveLength(6);
    const keyed = operations()
      .filter(({ operation }) =>
        (operation.parameters ?? []).some((p) => "$ref" in p && p.$ref === "#/components/parameters/IdempotencyKey"),
      )
      .map(({ operation }) => operation["x-trpc-procedure"]);
    expect(keyed.sort()).toEqual(documented.sort());
    expect(document.components?.parameters?.IdempotencyKey).toMatchObject({ name: "Idempotency-Key", in: "header" });
  });

  it("describes every error body: a StrataError as the API sends it", () => {
    const error = new StrataError("FENCE_LOST", "The lineage moved.", { hint: "Acquire again.", data: { head: "x" } });
    expect(strataErrorSchema.parse(error.toJSON())).toEqual(error.toJSON());
    expect(strataErrorSchema.safeParse({ ...error.toJSON(), code: "NOPE" }).success).toBe(false);
    const unavailable = document.components?.responses?.Unavailable as OpenAPIV3_1.ResponseObject;
    expect(Object.keys(unavailable.headers ?? {})).toEqual(["Retry-After"]);
  });
});

describe("a GET operation's query string", () => {
  const plan = queryPlan({
    type: "object",
    properties: {
      limit: { type: "integer" },
      active: { type: "boolean" },
      states: { type: "array", items: { type: "string", enum: ["failed", "cancelled"] } },
      cursor: { type: "string" },
    },
    required: [],
  });

  it("reads each field by its schema's type", () => {
    const params = new URLSearchParams("limit=20&active=true&states=failed&states=cancelled&cursor=42");
    expect(readQueryInput(plan, params)).toEqual({
      limit: 20,
      active: true,
      states: ["failed", "cancelled"],
      cursor: "42",
    });
    expect(readQueryInput(plan, new URLSearchParams("states=failed"))).toEqual({ states: ["failed"] });
    expect(readQueryInput(plan, new URLSearchParams(""))).toEqual({});
  });

  it("leaves what a type cannot read, and unknown parameters, as strings for the schema to refuse", () => {
    expect(readQueryInput(plan, new URLSearchParams("limit=ten&active=yes&colour=red"))).toEqual({
      limit: "ten",
      active: "yes",
      colour: "red",
    });
  });

  it("reads a whole input from the input parameter as JSON", () => {
    const nested = queryPlan({ type: "object", properties: { key: { type: "object" } } });
    expect(nested).toEqual({ kind: "json" });
    expect(readQueryInput(nested, new URLSearchParams({ input: '{"key":{"a":1}}' }))).toEqual({ key: { a: 1 } });
    expect(() => readQueryInput(nested, new URLSearchParams({ input: "{" }))).toThrow(SyntaxError);
  });
});
