// Reads the error codes docs/api.md documents: the codes table under "## Errors", the codes
// every procedure can answer, the "Errors by procedure" table, the codes that are never an API
// answer, the blob routes' codes and each procedure section's "Errors:" paragraph. Tests use it
// to hold the page to the code (docs/api-errors.test.ts) and to the answers the server gives
// (server/trpc/hostile-input.test.ts).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const API_DOC_PATH = fileURLToPath(new URL("./api.md", import.meta.url));

interface DocumentedCode {
  trpcCode: string;
  httpStatus: number;
  retryable: boolean;
}

interface ProcedureRow {
  caller: string;
  codes: string[];
}

export interface DocumentedErrors {
  /** The "## Errors" table: every code a client of the API can receive. */
  codes: Map<string, DocumentedCode>;
  /** The codes "every procedure can also answer". */
  common: string[];
  /** The codes the page says are never an API answer (job and CLI codes). */
  notApi: string[];
  /** The codes the blob routes answer. */
  blobRoutes: string[];
  /** The "Errors by procedure" table, by procedure path. */
  byProcedure: Map<string, ProcedureRow>;
  /** The codes each single-procedure section's "Errors:" paragraph names. */
  errorsParagraphs: Map<string, string[]>;
}

const CODE = /`([A-Z][A-Z_]+)`/g;

function codesIn(text: string): string[] {
  return [...text.matchAll(CODE)].map((m) => m[1]!);
}

/** The text from the line `heading` to the next heading of the same or a higher level. */
function section(markdown: string, heading: string): string {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => l === heading);
  if (start < 0) throw new Error(`docs/api.md has no "${heading}"`);
  const level = heading.indexOf(" ");
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && l.indexOf(" ") <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

/** The paragraph (blank-line separated) that starts with `prefix`. */
function paragraph(text: string, prefix: string): string {
  const found = text.split(/\n\s*\n/).find((p) => p.trimStart().startsWith(prefix));
  if (!found) throw new Error(`docs/api.md has no paragraph starting "${prefix}"`);
  return found;
}

function tableRows(text: string): string[][] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("| `"))
    .map((l) =>
      l
        .slice(1, -1)
        .split("|")
        .map((c) => c.trim()),
    );
}

function unquote(cell: string): string {
  const m = /^`([^`]+)`$/.exec(cell);
  if (!m) throw new Error(`docs/api.md: expected a \`name\` cell, found "${cell}"`);
  return m[1]!;
}

function parseDocumentedErrors(markdown: string): DocumentedErrors {
  const errors = section(markdown, "## Errors");
  const [codeTable] = errors.split("### ");
  const codes = new Map<string, DocumentedCode>();
  for (const [code, trpc, retryable] of tableRows(codeTable ?? "")) {
    const m = /^`([A-Z_]+)` \((\d{3})\)$/.exec(trpc ?? "");
    if (!m) throw new Error(`docs/api.md: unreadable tRPC code cell "${trpc}" for ${code}`);
    codes.set(unquote(code!), { trpcCode: m[1]!, httpStatus: Number(m[2]), retryable: retryable === "yes" });
  }

  const byProcedureText = section(markdown, "### Errors by procedure");
  const byProcedure = new Map<string, ProcedureRow>();
  for (const [name, caller, cell] of tableRows(byProcedureText)) {
    const path = unquote(name!);
    if (byProcedure.has(path)) throw new Error(`docs/api.md: ${path} has two rows in "Errors by procedure"`);
    byProcedure.set(path, { caller: caller!, codes: codesIn(cell!) });
  }

  const errorsParagraphs = new Map<string, string[]>();
  for (const block of markdown.split(/\n(?=### )/)) {
    const heading = /^### `([a-zA-Z.]+)` \((?:query|mutation)\)\n/.exec(block);
    if (!heading) continue;
    const found = block.split(/\n\s*\n/).find((p) => p.trimStart().startsWith("Errors:"));
    if (found) errorsParagraphs.set(heading[1]!, codesIn(found));
  }

  return {
    codes,
    common: codesIn(paragraph(byProcedureText, "Every procedure can also answer")),
    notApi: codesIn(paragraph(errors, "The other codes of `server/domain/errors.ts`")),
    blobRoutes: codesIn(paragraph(byProcedureText, "The blob routes answer")),
    byProcedure,
    errorsParagraphs,
  };
}

let cached: DocumentedErrors | null = null;

/** docs/api.md's documented errors (read once). */
export function documentedErrors(): DocumentedErrors {
  cached ??= parseDocumentedErrors(readFileSync(API_DOC_PATH, "utf8"));
  return cached;
}

/** Every code the page says `procedure` can answer (its row and the common ones); null: no row. */
export function documentedCodesOf(procedure: string): Set<string> | null {
  const doc = documentedErrors();
  const row = doc.byProcedure.get(procedure);
  return row ? new Set([...row.codes, ...doc.common]) : null;
}
