// A text file known only in part. A git snapshot stores its changes on top of HEAD as patches
// (hunks with three lines of context), never HEAD's files: a file changed since HEAD is known
// where its hunks touched it and unknown in between. Unknown stretches are named by the HEAD
// lines they are, so two versions built on one HEAD can still be compared exactly: a stretch
// neither changed is the same in both, whatever it holds. Pure.
import type { Hunk } from "./patch-sections.ts";

interface KnownLine {
  text: string;
  /** The file ends here without a newline. */
  noEol: boolean;
}

/** A known line, or a run of HEAD's lines whose content is not held (`count` may be Infinity: to the end). */
type Item = { line: KnownLine } | { gap: { from: number; count: number } };
export type SparseText = Item[];

/** What the patches told of one file at HEAD: lines seen as context or removed, and where it ends. */
export interface HeadLines {
  lines: Map<number, KnownLine>;
  end: number | null;
}

export function newHeadLines(): HeadLines {
  return { lines: new Map(), end: null };
}

/** HEAD's version of a file none of whose lines is known yet. */
export function unknownHead(): SparseText {
  return [{ gap: { from: 1, count: Infinity } }];
}

export class HunkMismatch extends Error {}

/**
 * Applies a file's hunks to its previous version. The lines a hunk reads (context, removed) that
 * lay in an unknown run are learned as HEAD's (`head`). With `wholeFile` (a deletion), what
 * follows the last line read is known to be empty, so HEAD's end is learned too.
 */
export function applyHunks(text: SparseText, hunks: readonly Hunk[], head: HeadLines, wholeFile = false): SparseText {
  const out: SparseText = [];
  let i = 0;
  let offset = 0;
  let pos = 0;
  const advanceGap = (count: number, taken: number) => {
    offset += taken;
    if (offset >= count) {
      i += 1;
      offset = 0;
    }
  };
  const copy = (n: number) => {
    while (n > 0) {
      const item = text[i];
      if (!item) throw new HunkMismatch("a hunk starts beyond the end of the file");
      if ("line" in item) {
        out.push(item);
        i += 1;
        n -= 1;
        pos += 1;
      } else {
        const take = Math.min(item.gap.count - offset, n);
        out.push({ gap: { from: item.gap.from + offset, count: take } });
        n -= take;
        pos += take;
        advanceGap(item.gap.count, take);
      }
    }
  };
  const read = (expected: KnownLine) => {
    const item = text[i];
    if (!item) throw new HunkMismatch("a hunk reads beyond the end of the file");
    if ("line" in item) {
      i += 1;
    } else {
      const at = item.gap.from + offset;
      head.lines.set(at, expected);
      if (expected.noEol) head.end = at;
      advanceGap(item.gap.count, 1);
    }
    pos += 1;
  };
  for (const hunk of hunks) {
    const start = hunk.oldLines === 0 ? hunk.oldStart : hunk.oldStart - 1;
    if (start < pos) throw new HunkMismatch("hunks overlap");
    copy(start - pos);
    for (const l of hunk.lines) {
      if (l.op !== "+") read({ text: l.text, noEol: l.noEol });
      if (l.op !== "-") out.push({ line: { text: l.text, noEol: l.noEol } });
    }
  }
  for (; i < text.length; i += 1, offset = 0) {
    const item = text[i]!;
    if ("line" in item) {
      if (wholeFile) throw new HunkMismatch("a deletion leaves lines behind");
      out.push(item);
    } else if (item.gap.count - offset > 0) {
      if (wholeFile && item.gap.count === Infinity) head.end = item.gap.from + offset - 1;
      else out.push({ gap: { from: item.gap.from + offset, count: item.gap.count - offset } });
    }
  }
  return out;
}

interface Atom {
  key: string;
  line: KnownLine | null;
  /** Lines it stands for: 1 for a known line. */
  count: number;
}

function lineKey(line: KnownLine): string {
  return `${line.noEol ? "n" : "l"}${line.text}`;
}

/**
 * Both versions as atoms: known lines, and unknown runs cut at the same HEAD line numbers on both
 * sides (every run's ends, every learned line), so equal stretches have equal keys.
 */
function atomize(versions: readonly SparseText[], head: HeadLines): Atom[][] {
  const marks = new Set<number>();
  for (const n of head.lines.keys()) marks.add(n).add(n + 1);
  for (const v of versions)
    for (const item of v) if ("gap" in item && item.gap.count !== Infinity) marks.add(item.gap.from + item.gap.count);
  for (const v of versions) for (const item of v) if ("gap" in item) marks.add(item.gap.from);
  const sorted = [...marks].sort((a, b) => a - b);
  const firstAbove = (n: number) => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid]! <= n) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return versions.map((v) => {
    const atoms: Atom[] = [];
    for (const item of v) {
      if ("line" in item) {
        atoms.push({ key: lineKey(item.line), line: item.line, count: 1 });
        continue;
      }
      const end =
        item.gap.count === Infinity ? (head.end === null ? Infinity : head.end + 1) : item.gap.from + item.gap.count;
      let cur = item.gap.from;
      for (let m = firstAbove(cur); cur < end; m += 1) {
        const next = Math.min(sorted[m] ?? Infinity, end);
        const known = head.lines.get(cur);
        if (known && next === cur + 1) atoms.push({ key: lineKey(known), line: known, count: 1 });
        else atoms.push({ key: `\0${cur}:${next - cur}`, line: null, count: next - cur });
        cur = next;
      }
    }
    return atoms;
  });
}

type Op = "=" | "-" | "+";

/** Myers' shortest edit script between two key sequences; null when it would cost too much. */
function editScript(a: readonly string[], b: readonly string[], maxCost: number): [Op, number][] | null {
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix += 1;
  let suffix = 0;
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  )
    suffix += 1;
  const x0 = a.slice(prefix, a.length - suffix);
  const y0 = b.slice(prefix, b.length - suffix);
  const n = x0.length;
  const m = y0.length;
  const max = n + m;
  const middle: [Op, number][] = [];
  if (n === 0 || m === 0) {
    for (let k = 0; k < n; k += 1) middle.push(["-", prefix + k]);
    for (let k = 0; k < m; k += 1) middle.push(["+", prefix + k]);
  } else {
    const offset = max;
    const v = new Int32Array(2 * max + 2);
    // The frontier before each round d, only where round d reads it (k in -d-1 … d+1).
    const trace: Int32Array[] = [];
    let found = false;
    for (let d = 0; d <= max && !found; d += 1) {
      if (d > maxCost) return null;
      trace.push(v.slice(offset - d - 1 < 0 ? 0 : offset - d - 1, offset + d + 2));
      for (let k = -d; k <= d; k += 2) {
        let x =
          k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!)
            ? v[offset + k + 1]!
            : v[offset + k - 1]! + 1;
        let y = x - k;
        while (x < n && y < m && x0[x] === y0[y]) {
          x += 1;
          y += 1;
        }
        v[offset + k] = x;
        if (x >= n && y >= m) {
          found = true;
          break;
        }
      }
    }
    // Walk back from the end through the saved frontiers.
    let x = n;
    let y = m;
    const reversed: [Op, number][] = [];
    for (let d = trace.length - 1; d >= 0 && (x > 0 || y > 0); d -= 1) {
      const frontier = trace[d]!;
      const base = offset - d - 1 < 0 ? offset : d + 1;
      const at = (k: number) => frontier[base + k]!;
      const k = x - y;
      const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
      const prevX = d === 0 ? 0 : at(prevK);
      const prevY = prevX - prevK;
      while (x > prevX && y > prevY) {
        x -= 1;
        y -= 1;
        reversed.push(["=", prefix + x]);
      }
      if (d === 0) break;
      if (x === prevX) reversed.push(["+", prefix + prevY]);
      else reversed.push(["-", prefix + prevX]);
      x = prevX;
      y = prevY;
    }
    middle.push(...reversed.reverse());
  }
  const script: [Op, number][] = [];
  for (let k = 0; k < prefix; k += 1) script.push(["=", k]);
  script.push(...middle);
  for (let k = 0; k < suffix; k += 1) script.push(["=", a.length - suffix + k]);
  return script;
}

export interface RenderedDiff {
  /** The unified diff's hunks ("@@ -a,b +c,d @@" and their lines), cut at `maxBytes`. */
  text: string;
  additions: number;
  deletions: number;
  /** False when the versions hold the same lines. */
  changed: boolean;
  /** The hunks were cut at `maxBytes`. */
  truncated: boolean;
  /** Some changed lines are not held (a run of HEAD's lines one side removed unseen). */
  partial: boolean;
}

const CONTEXT = 3;
/** Above this many changed atoms the diff is not worked out line by line. */
const MAX_EDIT_COST = 2_000;

/** The unified diff of two versions of a file built on one HEAD (`head`: what is known of it). */
export function renderDiff(from: SparseText, to: SparseText, head: HeadLines, maxBytes: number): RenderedDiff {
  const [a, b] = atomize([from, to], head) as [Atom[], Atom[]];
  const script = editScript(
    a.map((x) => x.key),
    b.map((x) => x.key),
    MAX_EDIT_COST,
  ) ?? [...a.map((_, k): [Op, number] => ["-", k]), ...b.map((_, k): [Op, number] => ["+", k])];
  const rows = script.map(([op, k]) => ({ op, atom: (op === "+" ? b : a)[k]! }));
  // Context: known unchanged lines within CONTEXT rows of a change, never across an unknown run.
  const keep = rows.map((r) => r.op !== "=");
  for (let r = 0; r < rows.length; r += 1) {
    if (rows[r]!.op === "=") continue;
    for (const dir of [-1, 1]) {
      for (let s = 1, t = r + dir; s <= CONTEXT && t >= 0 && t < rows.length; s += 1, t += dir) {
        const row = rows[t]!;
        if (row.op !== "=") break;
        if (!row.atom.line) break;
        keep[t] = true;
      }
    }
  }
  let oldNo = 0;
  let newNo = 0;
  let additions = 0;
  let deletions = 0;
  let partial = false;
  let bytes = 0;
  let truncated = false;
  const out: string[] = [];
  for (let r = 0; r < rows.length;) {
    if (!keep[r]) {
      const { op, atom } = rows[r]!;
      if (op !== "+") oldNo += atom.count;
      if (op !== "-") newNo += atom.count;
      r += 1;
      continue;
    }
    let end = r;
    while (end < rows.length && keep[end]) end += 1;
    const hunk: string[] = [];
    const oldStart = oldNo;
    const newStart = newNo;
    let oldLen = 0;
    let newLen = 0;
    for (let t = r; t < end; t += 1) {
      const { op, atom } = rows[t]!;
      if (op !== "+") oldLen += atom.count;
      if (op !== "-") newLen += atom.count;
      if (op === "+") additions += atom.line ? 1 : 0;
      if (op === "-") deletions += atom.line ? 1 : 0;
      if (!atom.line) {
        partial = true;
        hunk.push(`${op}… ${atom.count} line(s) whose content the catalog does not hold`);
        continue;
      }
      hunk.push(`${op === "=" ? " " : op}${atom.line.text}`);
      if (atom.line.noEol) hunk.push("\\ No newline at end of file");
    }
    oldNo += oldLen;
    newNo += newLen;
    const header = `@@ -${oldLen === 0 ? oldStart : oldStart + 1},${oldLen} +${newLen === 0 ? newStart : newStart + 1},${newLen} @@`;
    for (const line of [header, ...hunk]) {
      if (truncated) break;
      const size = Buffer.byteLength(line, "utf8") + 1;
      if (bytes + size > maxBytes) {
        truncated = true;
        break;
      }
      bytes += size;
      out.push(line);
    }
    r = end;
  }
  return {
    text: out.length > 0 ? `${out.join("\n")}\n` : "",
    additions,
    deletions,
    changed: rows.some((r) => r.op !== "="),
    truncated,
    partial,
  };
}
