// A GET operation's input in the query string. An input of flat fields (strings, numbers,
// booleans, enums, lists of them) is one query parameter per field, read by its JSON Schema:
// `?limit=20&active=true&states=failed&states=cancelled`. Any other input (nested objects) is one
// parameter, `input`, holding the input as JSON. Nothing is guessed beyond the schema: a value the
// field's type cannot read stays a string, and the procedure's own schema refuses it, typed.

type JsonSchema = Record<string, unknown>;

interface QueryField {
  name: string;
  schema: JsonSchema;
  required: boolean;
}

/** How a GET operation's input travels: no input, one parameter per field, or `input` as JSON. */
export type QueryPlan = { kind: "none" } | { kind: "fields"; fields: QueryField[] } | { kind: "json" };

/** The parameter that carries a whole input as JSON. */
export const JSON_INPUT_PARAMETER = "input";

const SCALAR_TYPES = new Set(["string", "number", "integer", "boolean", "null"]);

/** The JSON types a schema allows (its type, its enum's or const's values, its branches'). */
function typesOf(schema: JsonSchema): Set<string> {
  const types = new Set<string>();
  const { type } = schema;
  if (typeof type === "string") types.add(type);
  if (Array.isArray(type)) for (const t of type) types.add(String(t));
  const values = Array.isArray(schema.enum) ? schema.enum : "const" in schema ? [schema.const] : [];
  for (const value of values) types.add(value === null ? "null" : typeof value === "number" ? "number" : typeof value);
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = schema[key];
    if (Array.isArray(branches))
      for (const branch of branches as JsonSchema[]) for (const t of typesOf(branch)) types.add(t);
  }
  return types;
}

const isScalar = (schema: JsonSchema) => {
  const types = typesOf(schema);
  return types.size > 0 && [...types].every((t) => SCALAR_TYPES.has(t));
};

/** A field a query parameter can carry: a scalar, or a list of scalars (the parameter repeated). */
function isQueryField(schema: JsonSchema): boolean {
  if (isScalar(schema)) return true;
  const types = typesOf(schema);
  return types.size === 1 && types.has("array") && isScalar((schema.items ?? {}) as JsonSchema);
}

/** How `input` (a GET operation's input JSON Schema, or null) travels in the query string. */
export function queryPlan(input: JsonSchema | null): QueryPlan {
  if (!input) return { kind: "none" };
  const properties = input.properties as Record<string, JsonSchema> | undefined;
  if (input.type !== "object" || !properties || JSON_INPUT_PARAMETER in properties) return { kind: "json" };
  const required = new Set((input.required as string[] | undefined) ?? []);
  const fields = Object.entries(properties).map(([name, schema]) => ({ name, schema, required: required.has(name) }));
  return fields.every((field) => isQueryField(field.schema)) ? { kind: "fields", fields } : { kind: "json" };
}

const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/;

/** One query value as the field's type reads it; a string when the type cannot read it. */
function readScalar(schema: JsonSchema, value: string): unknown {
  const types = typesOf(schema);
  if (types.has("string")) return value;
  if ((types.has("number") || types.has("integer")) && NUMBER.test(value)) return Number(value);
  if (types.has("boolean") && (value === "true" || value === "false")) return value === "true";
  if (types.has("null") && value === "null") return null;
  return value;
}

/**
 * The input a GET request's query string holds, for an operation whose input travels as `plan`
 * says; undefined when it holds none. Throws SyntaxError when `input` is not JSON.
 */
export function readQueryInput(plan: QueryPlan, params: URLSearchParams): unknown {
  const names = [...new Set(params.keys())];
  if (names.length === 1 && names[0] === JSON_INPUT_PARAMETER) {
    return JSON.parse(params.get(JSON_INPUT_PARAMETER) ?? "");
  }
  if (names.length === 0) return plan.kind === "fields" ? {} : undefined;
  const fields = new Map(plan.kind === "fields" ? plan.fields.map((field) => [field.name, field.schema]) : []);
  const input: Record<string, unknown> = {};
  for (const name of names) {
    const values = params.getAll(name);
    const schema = fields.get(name);
    // An unknown parameter is passed on as it came: the strict schema refuses it by name.
    if (!schema) input[name] = values.length === 1 ? values[0] : values;
    else if (typesOf(schema).has("array")) {
      input[name] = values.map((value) => readScalar((schema.items ?? {}) as JsonSchema, value));
    } else input[name] = values.length === 1 ? readScalar(schema, values[0]!) : values;
  }
  return input;
}
