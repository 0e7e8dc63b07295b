// The one input boundary of the API: every raw input (tRPC and blob routes) is scanned once,
// without recursion, before superjson or zod walk it. Deep nesting, huge strings, NUL and
// unpaired surrogates are refused cheaply with INVALID_INPUT naming where they are.
import type { z } from "zod";
import { StrataError } from "../domain/errors.ts";
import { TEXT_PROBLEM_SENTENCES, textProblem } from "../domain/text.ts";
import { knownKeysAt } from "./strict-schema.ts";

const INPUT_LIMITS = { depth: 32, values: 100_000, stringChars: 1_000_000 } as const;

export interface InputIssue {
  path: (string | number)[];
  problem: string;
  expected: string | null;
  message: string;
  key?: string;
  suggestion?: string | null;
}

function pathLabel(path: readonly PropertyKey[]): string {
  let label = "";
  for (const part of path) label += typeof part === "number" ? `[${part}]` : `${label ? "." : ""}${String(part)}`;
  return label || "input";
}

export function invalidInput(issues: InputIssue[]): StrataError {
  return new StrataError("INVALID_INPUT", issues.map((i) => i.message).join(" "), {
    hint: "Fix the fields named and send the call again.",
    data: { issues },
  });
}

// Inputs already scanned in their raw form: over HTTP the transformer scans the JSON it is
// handed and marks what superjson makes of it, so the procedure's boundary does not walk it again.
const scanned = new WeakSet<object>();

/** Marks the deserialized form of an input whose raw form was scanned; returns it. */
export function markScanned<T>(value: T): T {
  if (typeof value === "object" && value !== null) scanned.add(value);
  return value;
}

/** Throws INVALID_INPUT when `raw` is too deep or too big, or holds text no field may hold. */
export function assertSafeInput(raw: unknown): void {
  if (typeof raw === "object" && raw !== null && scanned.has(raw)) return;
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: raw, path: [] }];
  let values = 0;
  const refuse = (path: (string | number)[], problem: string, expected: string, sentence: string): never => {
    throw invalidInput([{ path, problem, expected, message: `${pathLabel(path)} ${sentence}.` }]);
  };
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (++values > INPUT_LIMITS.values) {
      refuse(
        [],
        "too_many_values",
        `at most ${INPUT_LIMITS.values} values`,
        `holds more than ${INPUT_LIMITS.values} values`,
      );
    }
    if (typeof value === "string") {
      if (value.length > INPUT_LIMITS.stringChars) {
        refuse(
          path,
          "too_long",
          `at most ${INPUT_LIMITS.stringChars} characters`,
          `is longer than ${INPUT_LIMITS.stringChars} characters`,
        );
      }
      const problem = textProblem(value);
      if (problem) refuse(path, problem, "text without NUL or unpaired surrogates", TEXT_PROBLEM_SENTENCES[problem]);
      continue;
    }
    if (value === null || typeof value !== "object") continue;
    if (path.length >= INPUT_LIMITS.depth) {
      refuse(
        path,
        "too_deep",
        `at most ${INPUT_LIMITS.depth} levels of nesting`,
        `is nested more than ${INPUT_LIMITS.depth} levels deep`,
      );
    }
    if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push({ value: v, path: [...path, i] }));
      continue;
    }
    for (const [key, v] of Object.entries(value)) {
      const problem = textProblem(key);
      if (problem)
        refuse(
          path,
          problem,
          "keys without NUL or unpaired surrogates",
          `has a key that ${TEXT_PROBLEM_SENTENCES[problem]}`,
        );
      stack.push({ value: v, path: [...path, key] });
    }
  }
}

/** Case-insensitive equality or a small edit distance: the field a misspelt key most likely meant. */
function closestKey(key: string, known: readonly string[]): string | null {
  const lower = key.toLowerCase();
  let best: { key: string; distance: number } | null = null;
  for (const candidate of known) {
    const distance = candidate.toLowerCase() === lower ? 0 : editDistance(lower, candidate.toLowerCase());
    if (distance <= Math.max(1, Math.floor(candidate.length / 4)) && (!best || distance < best.distance)) {
      best = { key: candidate, distance };
    }
  }
  return best?.key ?? null;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return 99;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

type ZodIssueLike = z.core.$ZodIssue;

function expectedOf(issue: ZodIssueLike): string | null {
  switch (issue.code) {
    case "invalid_type":
      return issue.expected;
    case "too_big":
      return `${issue.inclusive === false ? "<" : "<="} ${String(issue.maximum)}${issue.origin === "string" ? " characters" : issue.origin === "array" ? " items" : ""}`;
    case "too_small":
      return `${issue.inclusive === false ? ">" : ">="} ${String(issue.minimum)}${issue.origin === "string" ? " characters" : issue.origin === "array" ? " items" : ""}`;
    case "invalid_value":
      return issue.values.map((v) => JSON.stringify(v)).join(" | ");
    case "invalid_format":
      return issue.format;
    default:
      return null;
  }
}

/** One sentence per zod issue (path and what was expected), with unknown keys named and matched. */
export function describeZodIssues(
  issues: readonly ZodIssueLike[],
  opts: { procedure: string | undefined; schema: z.ZodType | undefined },
): InputIssue[] {
  const where = opts.procedure ? `${opts.procedure}'s input` : "the input";
  return issues.flatMap((issue): InputIssue[] => {
    const path = issue.path.map((p) => (typeof p === "number" ? p : String(p)));
    if (issue.code === "unrecognized_keys") {
      const known = opts.schema ? knownKeysAt(opts.schema, path) : [];
      return issue.keys.map((key) => {
        const suggestion = closestKey(key, known);
        const at = path.length > 0 ? ` at ${pathLabel(path)}` : "";
        const message = `${key} is not a field of ${where}${at}${suggestion ? `; did you mean ${suggestion}?` : "."}`;
        return { path: [...path, key], problem: "unknown_key", expected: null, message, key, suggestion };
      });
    }
    const text = issue.message.replace(/\.$/, "");
    return [{ path, problem: issue.code, expected: expectedOf(issue), message: `${pathLabel(path)}: ${text}.` }];
  });
}
