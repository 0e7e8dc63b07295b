// The REST surface's OpenAPI document, rendered: operations grouped by tag, each with its
// parameters, request body and answers, their schemas as trees. Rendered on the server from the
// document itself (no CDN, no client script: it works offline and needs nothing but HTML).
import type { OpenAPIV3_1 } from "openapi-types";
import type { ReactNode } from "react";

type Document = OpenAPIV3_1.Document;
type Schema = OpenAPIV3_1.SchemaObject & { const?: unknown };
type Ref = OpenAPIV3_1.ReferenceObject;
type Operation = OpenAPIV3_1.OperationObject & { "x-trpc-procedure"?: string };

const isRef = (value: unknown): value is Ref => typeof value === "object" && value !== null && "$ref" in value;

/** What a local `$ref` (#/components/…) points at in the document. */
function resolve<T>(document: Document, value: T | Ref): T {
  if (!isRef(value)) return value;
  let target: unknown = document;
  for (const part of value.$ref.replace(/^#\//, "").split("/")) target = (target as Record<string, unknown>)[part];
  return target as T;
}

/** Text with `code` spans and **strong** words (the document's descriptions are Markdown). */
function Prose({ text }: { text: string }) {
  const parts = text.split(/(`[^`]+`|\*\*[^*]+\*\*)/g);
  return (
    <>
      {parts.map((part, i) => {
        if (/^`[^`]+`$/.test(part)) return <code key={i}>{part.slice(1, -1)}</code>;
        if (/^\*\*[^*]+\*\*$/.test(part)) return <strong key={i}>{part.slice(2, -2)}</strong>;
        return part;
      })}
    </>
  );
}

const oneLine = (text: string) => text.trim().replace(/\s*\n\s*/g, " ");

/** A schema's type in a few words: `string (date-time)`, `"a" | "b"`, `array of object`. */
function typeLabel(schema: Schema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (branches) return branches.map(typeLabel).join(" | ");
  const type = Array.isArray(schema.type) ? schema.type.join(" | ") : (schema.type ?? "any");
  if (type === "array") return `array of ${typeLabel(("items" in schema ? schema.items : {}) as Schema)}`;
  return schema.format ? `${type} (${schema.format})` : type;
}

/** The limits worth reading next to a type: lengths, ranges, patterns, defaults. */
function constraints(schema: Schema): string {
  const parts: string[] = [];
  if (schema.minLength !== undefined || schema.maxLength !== undefined) {
    parts.push(`length ${schema.minLength ?? 0}..${schema.maxLength ?? "∞"}`);
  }
  if (schema.minimum !== undefined || schema.maximum !== undefined) {
    parts.push(`${schema.minimum ?? "−∞"}..${schema.maximum ?? "∞"}`);
  }
  if (schema.maxItems !== undefined) parts.push(`at most ${schema.maxItems} items`);
  if (schema.pattern) parts.push(`pattern ${schema.pattern}`);
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join("; ");
}

/** The object schemas under a schema that have fields to show (through arrays and unions). */
function objectsIn(schema: Schema): Schema[] {
  if (schema.properties) return [schema];
  if (schema.type === "array" && "items" in schema && schema.items) return objectsIn(schema.items as Schema);
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  return branches ? branches.flatMap(objectsIn) : [];
}

function Fields({ schema, depth }: { schema: Schema; depth: number }) {
  const required = new Set(schema.required ?? []);
  return (
    <ul className="schema-fields">
      {Object.entries(schema.properties ?? {}).map(([name, value]) => {
        const field = value as Schema;
        const limits = constraints(field);
        return (
          <li key={name}>
            <code>{name}</code>
            {required.has(name) ? <span className="schema-required"> required</span> : null}{" "}
            <span className="schema-type">{typeLabel(field)}</span>
            {limits ? <span className="muted"> · {limits}</span> : null}
            {field.description ? <span className="muted"> — {field.description}</span> : null}
            <SchemaTree schema={field} depth={depth + 1} />
          </li>
        );
      })}
    </ul>
  );
}

/** A schema's fields, nested objects within them (a union: one list per branch). */
function SchemaTree({ schema, depth = 0 }: { schema: Schema; depth?: number }): ReactNode {
  const objects = objectsIn(schema);
  if (objects.length === 0 || depth > 8) return null;
  if (objects.length === 1) return <Fields schema={objects[0]!} depth={depth} />;
  return (
    <ol className="schema-branches">
      {objects.map((branch, i) => (
        <li key={i}>
          <span className="muted">one of, {i + 1}:</span>
          <Fields schema={branch} depth={depth} />
        </li>
      ))}
    </ol>
  );
}

/** A top-level schema: its type, then its fields. */
function SchemaBlock({ schema }: { schema: Schema }) {
  return (
    <div className="schema">
      <span className="schema-type">{typeLabel(schema)}</span>
      <SchemaTree schema={schema} />
    </div>
  );
}

function OperationView({
  document,
  method,
  path,
  operation,
}: {
  document: Document;
  method: string;
  path: string;
  operation: Operation;
}) {
  const base = document.servers?.[0]?.url ?? "";
  const parameters = (operation.parameters ?? []).map((p) => resolve(document, p));
  const body = operation.requestBody ? resolve(document, operation.requestBody) : null;
  const bodySchema = body?.content["application/json"]?.schema as Schema | undefined;
  const idempotent = parameters.some((p) => p.name === "Idempotency-Key");
  const open = Array.isArray(operation.security) && operation.security.length === 0;
  return (
    <details className="api-op" id={operation.operationId}>
      <summary>
        <span className={`api-method ${method}`}>{method.toUpperCase()}</span>{" "}
        <code className="api-path">
          {base}
          {path}
        </code>{" "}
        <span className="muted">{operation.summary}</span>
        {idempotent ? <span className="badge">Idempotency-Key</span> : null}
        {open ? <span className="badge">no token</span> : null}
      </summary>
      <div className="api-op-body">
        {operation.description ? (
          <p>
            <Prose text={operation.description} />
          </p>
        ) : null}
        {parameters.length > 0 ? (
          <>
            <h3>Parameters</h3>
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">In</th>
                  <th scope="col">Schema</th>
                </tr>
              </thead>
              <tbody>
                {parameters.map((p) => {
                  const schema = (p.schema ?? p.content?.["application/json"]?.schema ?? {}) as Schema;
                  return (
                    <tr key={`${p.in}:${p.name}`}>
                      <td>
                        <code>{p.name}</code>
                        {p.required ? <span className="schema-required"> required</span> : null}
                      </td>
                      <td>{p.in}</td>
                      <td>
                        {p.content ? <span className="muted">JSON: </span> : null}
                        <SchemaBlock schema={schema} />
                        {p.description ? (
                          <p className="muted">
                            <Prose text={p.description} />
                          </p>
                        ) : null}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </>
        ) : null}
        {bodySchema ? (
          <>
            <h3>Request body {body?.required ? "" : "(optional)"}</h3>
            <div data-testid="request-body">
              <SchemaBlock schema={bodySchema} />
            </div>
          </>
        ) : null}
        <h3>Responses</h3>
        <table>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Answer</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(operation.responses ?? {}).map(([status, value]) => {
              const response = resolve(document, value);
              const schema = response.content?.["application/json"]?.schema;
              const isError = isRef(schema) && schema.$ref.endsWith("/Error");
              return (
                <tr key={status}>
                  <td className="mono">{status}</td>
                  <td>
                    <Prose text={response.description} />
                    {isError ? (
                      <span className="muted">
                        {" "}
                        (an <a href="#error-schema">Error</a>)
                      </span>
                    ) : schema ? (
                      <SchemaBlock schema={resolve(document, schema) as Schema} />
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </details>
  );
}

/** The whole document: its description, then one section per tag, then the error schema. */
export function ApiDocsView({ document }: { document: Document }) {
  const operations = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    (["get", "post", "put", "patch", "delete"] as const).flatMap((method) => {
      const operation = item?.[method];
      return operation ? [{ method, path, operation: operation as Operation }] : [];
    }),
  );
  const tags = document.tags?.map((t) => t.name) ?? [];
  const errorSchema = document.components?.schemas?.Error as Schema | undefined;
  // The description is a paragraph and a list of "- " items.
  const [intro, ...items] = (document.info.description ?? "").split("\n- ");
  return (
    <div className="api-docs">
      <section className="panel section" aria-labelledby="api-about">
        <h2 id="api-about">
          {document.info.title} <span className="muted">OpenAPI {document.openapi}</span>
        </h2>
        <p className="api-intro">
          <Prose text={oneLine(intro ?? "")} />
        </p>
        <ul className="api-about">
          {items.map((item) => (
            <li key={item}>
              <Prose text={oneLine(item)} />
            </li>
          ))}
        </ul>
        <nav aria-label="API sections">
          <ul className="api-tags">
            {tags.map((tag) => (
              <li key={tag}>
                <a href={`#tag-${tag}`}>{tag}</a>
              </li>
            ))}
          </ul>
        </nav>
      </section>
      {tags.map((tag) => (
        <section key={tag} className="api-tag" aria-labelledby={`tag-${tag}`}>
          <h2 id={`tag-${tag}`}>{tag}</h2>
          {operations
            .filter(({ operation }) => operation.tags?.includes(tag))
            .map(({ method, path, operation }) => (
              <OperationView key={path} document={document} method={method} path={path} operation={operation} />
            ))}
        </section>
      ))}
      {errorSchema ? (
        <section className="panel section" aria-labelledby="error-schema">
          <h2 id="error-schema">Error</h2>
          <p className="muted">The body of every refusal, with the HTTP status of its code.</p>
          <SchemaBlock schema={errorSchema} />
        </section>
      ) : null}
    </div>
  );
}
