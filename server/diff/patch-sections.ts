// Reading a stored patch (server/capture/engine/patch-chain.ts: `git diff -p --full-index --no-renames`) back
// into its files: per file the blob ids and modes on each side, whether git called it binary,
// and its hunks. Pure; nothing here runs git.

/** One line of a hunk: ' ' context, '-' removed, '+' added; `noEol` when "\ No newline" followed it. */
interface HunkLine {
  op: " " | "-" | "+";
  text: string;
  noEol: boolean;
}

export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: HunkLine[];
}

export interface PatchSection {
  path: string;
  /** The blob ids of the index line; null when the section has none (a mode change only). */
  oldOid: string | null;
  newOid: string | null;
  /** Octal modes as git prints them ("100644"); null for the side that does not exist. */
  oldMode: string | null;
  newMode: string | null;
  /** Added (new file mode) or deleted (deleted file mode) by this patch. */
  added: boolean;
  deleted: boolean;
  /** "Binary files … differ": the patch carries the file whole (its new blob is stored by id). */
  binary: boolean;
  hunks: Hunk[];
}

const ZERO_OID = /^0+$/;

/** A C-quoted git path ("a/caf\303\251 x") as its bytes read in UTF-8. */
function unquote(quoted: string): string {
  const bytes: number[] = [];
  for (let i = 1; i < quoted.length - 1; i += 1) {
    const c = quoted[i]!;
    if (c !== "\\") {
      bytes.push(...Buffer.from(c, "utf8"));
      continue;
    }
    const next = quoted[i + 1] ?? "";
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(quoted.slice(i + 1, i + 4), 8));
      i += 3;
      continue;
    }
    const escapes: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '"': 34, "\\": 92 };
    bytes.push(escapes[next] ?? next.charCodeAt(0));
    i += 1;
  }
  return Buffer.from(bytes).toString("utf8");
}

/** The path of a "diff --git a/P b/P" line (both sides name the same path: --no-renames). */
function headerPath(rest: string): string | null {
  if (rest.startsWith('"')) {
    const end = rest.search(/(?<!\\)" /);
    if (end < 0) return null;
    const a = unquote(rest.slice(0, end + 1));
    return a.startsWith("a/") ? a.slice(2) : null;
  }
  if (!rest.startsWith("a/")) return null;
  const length = (rest.length - 5) / 2;
  if (!Number.isInteger(length) || length < 1) return null;
  const a = rest.slice(2, 2 + length);
  return rest.slice(2 + length) === ` b/${a}` ? a : null;
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/**
 * The files of a patch, in order. Sections this reader does not understand are skipped, and
 * their paths returned in `unreadable`, never guessed at.
 */
export function parsePatch(bytes: Buffer): { sections: PatchSection[]; unreadable: string[] } {
  const lines = bytes.toString("utf8").split("\n");
  if (lines.at(-1) === "") lines.pop();
  const sections: PatchSection[] = [];
  const unreadable: string[] = [];
  let current: PatchSection | null = null;
  let hunk: Hunk | null = null;
  let broken = false;
  let oldSeen = 0;
  let newSeen = 0;
  const finish = () => {
    if (current && !broken) sections.push(current);
    else if (current) unreadable.push(current.path);
    current = null;
    hunk = null;
    broken = false;
  };
  for (const line of lines) {
    if (line.startsWith("diff --git ")) {
      finish();
      const path = headerPath(line.slice("diff --git ".length));
      if (path === null) {
        unreadable.push(line.slice("diff --git ".length, 300));
        continue;
      }
      current = {
        path,
        oldOid: null,
        newOid: null,
        oldMode: null,
        newMode: null,
        added: false,
        deleted: false,
        binary: false,
        hunks: [],
      };
      continue;
    }
    if (!current) continue;
    const section: PatchSection = current;
    if (hunk) {
      const h: Hunk = hunk;
      if (line.startsWith("\\")) {
        const last = h.lines.at(-1);
        if (last) last.noEol = true;
        continue;
      }
      if (oldSeen < h.oldLines || newSeen < h.newLines) {
        const op = line[0];
        if (op === " " || op === "-" || op === "+") {
          h.lines.push({ op, text: line.slice(1), noEol: false });
          if (op !== "+") oldSeen += 1;
          if (op !== "-") newSeen += 1;
        } else broken = true;
        continue;
      }
      hunk = null;
    }
    const header = HUNK_HEADER.exec(line);
    if (header) {
      hunk = {
        oldStart: Number(header[1]),
        oldLines: header[2] === undefined ? 1 : Number(header[2]),
        newStart: Number(header[3]),
        newLines: header[4] === undefined ? 1 : Number(header[4]),
        lines: [],
      };
      oldSeen = 0;
      newSeen = 0;
      section.hunks.push(hunk);
      continue;
    }
    if (line.startsWith("index ")) {
      const m = /^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$/.exec(line);
      if (!m) {
        broken = true;
        continue;
      }
      section.oldOid = ZERO_OID.test(m[1]!) ? null : m[1]!;
      section.newOid = ZERO_OID.test(m[2]!) ? null : m[2]!;
      if (m[3]) section.oldMode = section.newMode = m[3];
    } else if (line.startsWith("new file mode ")) {
      section.added = true;
      section.newMode = line.slice("new file mode ".length);
    } else if (line.startsWith("deleted file mode ")) {
      section.deleted = true;
      section.oldMode = line.slice("deleted file mode ".length);
    } else if (line.startsWith("old mode ")) {
      section.oldMode = line.slice("old mode ".length);
    } else if (line.startsWith("new mode ")) {
      section.newMode = line.slice("new mode ".length);
    } else if (line.startsWith("Binary files ") || line === "GIT binary patch") {
      section.binary = true;
    }
  }
  finish();
  for (const s of sections) {
    // Each hunk must hold the lines its header counts, or the section is not used.
    const counted = s.hunks.every(
      (h) =>
        h.lines.filter((l) => l.op !== "+").length === h.oldLines &&
        h.lines.filter((l) => l.op !== "-").length === h.newLines,
    );
    if (!counted) unreadable.push(s.path);
  }
  return { sections: sections.filter((s) => !unreadable.includes(s.path)), unreadable };
}
