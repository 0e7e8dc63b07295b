// The conversion settings of the recording machine: line-ending configuration and the filter
// drivers .gitattributes names (Git LFS, for one). A restore warns when its own differ, since
// the same git content can then look different on disk.
import { readFile } from "node:fs/promises";
import { join } from "node:path";

interface FilterDriver {
  name: string;
  /** Whether this machine configures a clean, smudge or process command for it. */
  configured: boolean;
  required: boolean;
}

export interface RecordedFilters {
  autocrlf: string | null;
  eol: string | null;
  drivers: FilterDriver[];
}

/** The config pattern whose values `recordedFilters` reads (together with remote URLs). */
export const FILTER_CONFIG_PATTERN = "^(core\\.autocrlf|core\\.eol|filter\\..+\\.(clean|smudge|process|required))$";

/** Driver names a .gitattributes text assigns with `filter=<name>`. */
export function filterDriversNamed(attributes: string): string[] {
  const names = new Set<string>();
  for (const rawLine of attributes.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#")) continue;
    for (const token of line.split(/\s+/).slice(1)) {
      const match = /^filter=(.+)$/.exec(token);
      if (match?.[1]) names.add(match[1]);
    }
  }
  return [...names].sort();
}

export function recordedFilters(
  config: ReadonlyArray<readonly [string, string]>,
  attributeTexts: readonly string[],
): RecordedFilters {
  let autocrlf: string | null = null;
  let eol: string | null = null;
  const configured = new Set<string>();
  const required = new Set<string>();
  for (const [key, value] of config) {
    const lower = key.toLowerCase();
    // Later values override earlier ones, as git reads them.
    if (lower === "core.autocrlf") autocrlf = value;
    else if (lower === "core.eol") eol = value;
    else {
      const match = /^filter\.(.+)\.(clean|smudge|process|required)$/i.exec(key);
      if (!match) continue;
      const name = match[1] ?? "";
      if (match[2]?.toLowerCase() === "required") {
        if (/^(true|yes|on|1|)$/i.test(value)) required.add(name);
        else required.delete(name);
      } else if (value !== "") configured.add(name);
    }
  }
  const named = new Set(attributeTexts.flatMap(filterDriversNamed));
  const drivers = [...named].sort().map((name) => ({
    name,
    configured: configured.has(name),
    required: required.has(name),
  }));
  return { autocrlf, eol, drivers };
}

/** The texts of the attribute files that apply: the tree's .gitattributes and info/attributes. */
export async function readAttributeFiles(root: string, commonDir: string, treePaths: readonly string[]) {
  const files = [...treePaths.map((p) => join(root, p)), join(commonDir, "info", "attributes")];
  const texts = await Promise.all(files.map((file) => readFile(file, "utf8").catch(() => "")));
  return texts.filter((t) => t !== "");
}
