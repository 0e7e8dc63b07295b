// The REST surface (/api/v1) is the tRPC router itself, walked: every agent procedure (and the
// public health check) is one operation, its method from its type and its URL from its path, its
// schemas its own zod .input/.output. A procedure added to the router is served and documented
// here with nothing to list; the dashboard's (staff) procedures are never part of it.
import { z } from "zod";
import type { AnyProcedure } from "@trpc/server/unstable-core-do-not-import";
import type { ProcedureMeta } from "../trpc/init.ts";
import { appRouter } from "../trpc/root.ts";

/** Where the REST surface is served; each operation's URL is this and its path. */
export const REST_PREFIX = "/api/v1";

type JsonSchema = Record<string, unknown>;

export interface RestOperation {
  /** The tRPC procedure it calls: `checkpoint.append`. */
  procedure: string;
  /** Queries are GET (input in the query string), mutations POST (input as the JSON body). */
  method: "GET" | "POST";
  /** Below REST_PREFIX: `/checkpoint/append`. */
  path: string;
  /** The router it belongs to: `checkpoint`. */
  tag: string;
  /** `public` needs no token (health); every other operation needs an agent's. */
  audience: "public" | "agent";
  /** A creating call: an Idempotency-Key header makes a retry answer the first call's answer. */
  idempotencyKey: boolean;
  /** The input's JSON Schema (as sent: defaults optional), null when it takes none. */
  input: JsonSchema | null;
  /** Whether the call may come without an input (every field optional, or none at all). */
  inputOptional: boolean;
  /** The answer's JSON Schema, as REST sends it (dates and bigints as strings). */
  output: JsonSchema;
  /** The procedure, called as tRPC's own HTTP handler calls it. */
  call: AnyProcedure;
}

interface ProcedureDef {
  type: string;
  meta?: ProcedureMeta;
  inputs: z.ZodType[];
  output?: z.ZodType;
}

/**
 * A zod schema as JSON Schema (2020-12, OpenAPI 3.1's dialect). superjson's types are sent as
 * superjson's JSON puts them: a Date as an ISO 8601 string, a bigint as a decimal string.
 */
function toJsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const converted = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: ({ zodSchema, jsonSchema }) => {
      const type = zodSchema._zod.def.type;
      if (type === "date") Object.assign(jsonSchema, { type: "string", format: "date-time" });
      if (type === "bigint") {
        Object.assign(jsonSchema, { type: "string", pattern: "^-?[0-9]+$", description: "a bigint, in decimal" });
      }
    },
  }) as JsonSchema;
  delete converted.$schema;
  return converted;
}

let operations: RestOperation[] | null = null;

/** Every REST operation, in the router's order (built once). */
export function restOperations(): RestOperation[] {
  operations ??= Object.entries(appRouter._def.procedures as unknown as Record<string, AnyProcedure>).flatMap(
    ([procedure, call]): RestOperation[] => {
      const def = call._def as unknown as ProcedureDef;
      const audience = def.meta?.audience;
      if ((audience !== "agent" && audience !== "public") || (def.type !== "query" && def.type !== "mutation")) {
        return [];
      }
      const inputSchema = def.inputs[0];
      return [
        {
          procedure,
          method: def.type === "query" ? "GET" : "POST",
          path: `/${procedure.split(".").join("/")}`,
          tag: procedure.includes(".") ? procedure.slice(0, procedure.indexOf(".")) : procedure,
          audience,
          idempotencyKey: def.meta?.idempotencyKey === true,
          input: inputSchema ? toJsonSchema(inputSchema, "input") : null,
          inputOptional: !inputSchema || inputSchema.safeParse(undefined).success,
          output: def.output ? toJsonSchema(def.output, "output") : {},
          call,
        },
      ];
    },
  );
  return operations;
}
