// The files a restore wrote with other line endings than git stores them, because of this host's
// own settings (core.autocrlf=true, core.eol=crlf in its global or system configuration): they
// verify (git reads them back as their blobs), but their bytes differ from the capturing
// checkout's, which the `filters` warning names. Files whose conversion the repository's own
// attributes ask for (`eol=…`) are converted on every host and are not listed.
import type { RestoreWarning } from "../../domain/restore-result.ts";
import { decodeUtf8, type GitCommand, type GitRunner } from "../../git/runner.ts";

/** At most this many paths are named (the warning's own limit). */
const LISTED = 1000;

/** This host's line-ending settings that convert files on checkout (`core.autocrlf=true`, `core.eol=crlf`). */
function convertingLineEndingSettings(): GitCommand<string[]> {
  return {
    args: ["config", "--get-regexp", "^core\\.(autocrlf|eol)$"],
    okExitCodes: [0, 1],
    parse: (out) => {
      const settings = new Set<string>();
      for (const line of decodeUtf8(out.stdout).split("\n")) {
        const [key = "", value = ""] = line.trim().toLowerCase().split(/\s+/);
        if (key === "core.autocrlf" && ["true", "yes", "on", "1"].includes(value)) settings.add("core.autocrlf=true");
        if (key === "core.eol" && value === "crlf") settings.add("core.eol=crlf");
      }
      return [...settings];
    },
  };
}

/**
 * Paths whose worktree line endings differ from the index's (`git ls-files --eol`), leaving out
 * binary files and those whose attributes set `eol` themselves. Pure parse, tested on its own.
 */
export function parseConvertedLineEndings(text: string): string[] {
  const paths: string[] = [];
  for (const record of text.split("\u0000")) {
    const tab = record.indexOf("\t");
    if (tab < 0) continue;
    const [index = "", worktree = "", ...attr] = record.slice(0, tab).trim().split(/\s+/);
    const attributes = attr.join(" ");
    if (!index.startsWith("i/") || !worktree.startsWith("w/")) continue;
    const i = index.slice(2);
    const w = worktree.slice(2);
    if (!i || !w || i === "-text" || w === "-text" || i === w || /\beol=/.test(attributes)) continue;
    paths.push(record.slice(tab + 1));
  }
  return paths;
}

function convertedLineEndings(indexFile: string): GitCommand<string[]> {
  return {
    args: ["ls-files", "--eol", "-z"],
    env: { GIT_INDEX_FILE: indexFile },
    parse: (out) => parseConvertedLineEndings(decodeUtf8(out.stdout)),
  };
}

/**
 * Names, in the `filters` warning, the files this host's line-ending settings wrote with other
 * bytes than git stores (adding to the warning about the capturing checkout's settings, if any).
 * Costs one `git config` call unless such a setting is on.
 */
export async function warnOfHostLineEndings(
  git: GitRunner,
  indexFile: string,
  warnings: RestoreWarning[],
): Promise<void> {
  const settings = await git.run(convertingLineEndingSettings());
  if (settings.length === 0) return;
  const paths = await git.run(convertedLineEndings(indexFile));
  if (paths.length === 0) return;
  const listed = paths.length > LISTED ? `; the first ${LISTED} are listed` : "";
  const message =
    `This host's ${settings.join(", ")} wrote ${paths.length} file(s) with other line endings than git stores ` +
    `them (git reads them back as their recorded content)${listed}.`;
  const existing = warnings.find((w) => w.kind === "filters");
  if (existing) {
    existing.message = `${existing.message} ${message}`.slice(0, 2000);
    existing.paths = paths.slice(0, LISTED);
  } else {
    warnings.push({ kind: "filters", message, paths: paths.slice(0, LISTED) });
  }
}
