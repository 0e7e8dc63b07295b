// The OpenAPI 3.1 document of the REST surface, generated from the operations (rest-operations.ts):
// their schemas are the procedures' own zod schemas, so the document cannot say anything the API
// does not do. Served at /api/v1/openapi.json and rendered by the dashboard's API page.
import type { OpenAPIV3_1 } from "openapi-types";
import { z } from "zod";
import { ERROR_CODES, type ErrorCode, type StrataErrorShape } from "../domain/errors.ts";
import { KEY_FORMAT } from "../trpc/idempotency.ts";
import { JSON_INPUT_PARAMETER, queryPlan } from "./query-input.ts";
import { REST_PREFIX, restOperations, type RestOperation } from "./rest-operations.ts";

/** Where the document is served, below REST_PREFIX. */
export const OPENAPI_PATH = "/openapi.json";
/** The document's URL on the server. */
export const OPENAPI_URL = `${REST_PREFIX}${OPENAPI_PATH}`;

/** Every error answer's body: a StrataError as its toJSON() puts it. */
export const strataErrorSchema = z
  .object({
    code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]).describe("Stable: code checks this."),
    message: z.string().describe("For people."),
    hint: z.string().nullable().describe("What to do about it, for people (and models)."),
    retryable: z.boolean().describe("Whether the same call may succeed later (after re-reading state)."),
    data: z.record(z.string(), z.unknown()).nullable().describe("Machine-readable details of this code."),
  })
  .strict() satisfies z.ZodType<StrataErrorShape>;

const DESCRIPTION = `Strata's agent API as plain HTTP and JSON, for agents in any language. Each operation is one
tRPC procedure of the agent API (docs/api.md), served by the same code: the same agent token, input
rules, Idempotency-Key and typed errors.

- **Calls.** Queries are \`GET\`, their input in the query string (one parameter per field, a list
  as the parameter repeated; a nested input as one \`input\` parameter holding JSON). Mutations are
  \`POST\` with the input as a JSON body (\`Content-Type: application/json\`). Inputs are plain
  JSON, not superjson's \`{"json": …}\`. An unknown field is refused, by name.
- **Auth.** \`Authorization: Bearer <agent token>\` (\`strata agent create NAME\` prints one).
- **Answers.** The procedure's answer as JSON: a date is an ISO 8601 string (\`format: date-time\`),
  a bigint a decimal string. This is exactly the \`json\` part of the tRPC answer.
- **Errors.** A StrataError (\`code\`, \`message\`, \`hint\`, \`retryable\`, \`data\`) with the HTTP
  status the tRPC route gives its code; \`503\` (\`UNAVAILABLE\`) comes with \`Retry-After\`.
- **Retries.** Creating calls take an \`Idempotency-Key\` header: a retry with the same key and
  input answers the first call's answer and does nothing again.
- **Blobs** are not JSON: \`PUT /api/blobs/<sha256>\` with the bytes (see docs/api.md).`;

const errorContent = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };

/** One error answer, its codes named. */
function errorResponse(description: string): OpenAPIV3_1.ResponseObject {
  return { description, content: errorContent };
}

/** The codes whose HTTP status is `status`, for the responses' descriptions. */
function codesWithStatus(status: (typeof ERROR_CODES)[ErrorCode]["status"]): string {
  return (Object.keys(ERROR_CODES) as ErrorCode[])
    .filter((code) => ERROR_CODES[code].status === status)
    .map((code) => `\`${code}\``)
    .join(", ");
}

function operationObject(operation: RestOperation): OpenAPIV3_1.OperationObject {
  const parameters: OpenAPIV3_1.ParameterObject[] = [];
  if (operation.method === "GET") {
    const plan = queryPlan(operation.input);
    if (plan.kind === "fields") {
      for (const field of plan.fields) {
        parameters.push({ name: field.name, in: "query", required: field.required, schema: field.schema });
      }
    } else if (plan.kind === "json") {
      parameters.push({
        name: JSON_INPUT_PARAMETER,
        in: "query",
        required: !operation.inputOptional,
        description: "The input, as JSON.",
        content: { "application/json": { schema: operation.input ?? {} } },
      });
    }
  }
  const idempotent = operation.idempotencyKey
    ? [{ $ref: "#/components/parameters/IdempotencyKey" } as OpenAPIV3_1.ReferenceObject]
    : [];
  const responses: OpenAPIV3_1.ResponsesObject = {
    "200": {
      description: "The procedure's answer.",
      content: { "application/json": { schema: operation.output } },
    },
    "400": { $ref: "#/components/responses/InvalidInput" },
  };
  if (operation.audience === "agent") responses["401"] = { $ref: "#/components/responses/Unauthorized" };
  responses["503"] = { $ref: "#/components/responses/Unavailable" };
  responses.default = { $ref: "#/components/responses/Error" };
  return {
    operationId: operation.procedure.replace(/\.(.)/g, (_, c: string) => c.toUpperCase()),
    summary: operation.procedure,
    description:
      `The tRPC procedure \`${operation.procedure}\` (a ${operation.method === "GET" ? "query" : "mutation"}).` +
      (operation.idempotencyKey ? " A creating call: send an Idempotency-Key to retry it safely." : ""),
    tags: [operation.tag],
    ...(operation.audience === "public" ? { security: [] } : {}),
    parameters: [...parameters, ...idempotent],
    ...(operation.method === "POST" && operation.input
      ? {
          requestBody: {
            required: !operation.inputOptional,
            content: { "application/json": { schema: operation.input } },
          },
        }
      : {}),
    responses,
    "x-trpc-procedure": operation.procedure,
  } as OpenAPIV3_1.OperationObject;
}

let document: OpenAPIV3_1.Document | null = null;

/** The document (built once: the router does not change while the server runs). */
export function openApiDocument(): OpenAPIV3_1.Document {
  if (document) return document;
  const operations = restOperations();
  const paths: OpenAPIV3_1.PathsObject = {};
  for (const operation of operations) {
    paths[operation.path] = { [operation.method.toLowerCase()]: operationObject(operation) };
  }
  const errorSchema = z.toJSONSchema(strataErrorSchema) as Record<string, unknown>;
  delete errorSchema.$schema;
  document = {
    openapi: "3.1.0",
    info: { title: "Strata agent API", version: "1", description: DESCRIPTION },
    servers: [{ url: REST_PREFIX }],
    security: [{ agentToken: [] }],
    tags: [...new Set(operations.map((operation) => operation.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        agentToken: {
          type: "http",
          scheme: "bearer",
          description: "An agent token (`strata agent create NAME` prints one): `Authorization: Bearer strata_…`.",
        },
      },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description:
            "A new random key (a UUID) per logical operation: a retry with the same key and input within 24 h " +
            "answers the first call's answer and does nothing again; with another input it is IDEMPOTENCY_CONFLICT.",
          schema: { type: "string", pattern: KEY_FORMAT.source },
        },
      },
      headers: {
        RetryAfter: { description: "Seconds to wait before retrying.", schema: { type: "integer", minimum: 0 } },
      },
      schemas: { Error: errorSchema as OpenAPIV3_1.SchemaObject },
      responses: {
        InvalidInput: errorResponse(`The input was refused, nothing done: ${codesWithStatus("BAD_REQUEST")}.`),
        Unauthorized: errorResponse("`UNAUTHORIZED`: no agent token, or not a valid one."),
        Unavailable: {
          description: "`UNAVAILABLE`: the catalog cannot be reached; retry after Retry-After (with the same key).",
          headers: { "Retry-After": { $ref: "#/components/headers/RetryAfter" } },
          content: errorContent,
        },
        Error: errorResponse(
          "Any other refusal, with the status of its code (docs/api.md, Errors): `NOT_FOUND` 404, `CONFLICT` and " +
            "`FENCE_LOST` 409, `SNAPSHOT_RETIRED` 412, …",
        ),
      },
    },
  };
  return document;
}
