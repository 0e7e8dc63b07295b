// JSON text of results for machines (`--json`, MCP tool answers): byte counts and sizes are
// bigints in the catalog, and JSON has no bigint, so they are written as decimal strings, as the
// REST API writes them.

/** A JSON.stringify replacer writing every bigint as its decimal string. */
export function bigintsAsStrings(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}
