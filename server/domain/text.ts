// Text at the input boundary. Every string a client sends is refused if it holds a NUL or an
// unpaired UTF-16 surrogate (PostgreSQL cannot store either); identifier-like fields (ids,
// names, refs, hosts) also refuse every other control character.
import { z } from "zod";

// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** What is wrong with a text value anywhere in an input, or null. */
export function textProblem(text: string): "nul_character" | "lone_surrogate" | null {
  if (text.includes("\u0000")) return "nul_character";
  // isWellFormed is Node 20+; it is false exactly when a surrogate is unpaired.
  if (!(text as string & { isWellFormed(): boolean }).isWellFormed()) return "lone_surrogate";
  return null;
}

export const TEXT_PROBLEM_SENTENCES = {
  nul_character: "must not contain a NUL character (\\u0000)",
  lone_surrogate: "must be well-formed Unicode (it holds an unpaired UTF-16 surrogate)",
} as const;

/** A trimmed, bounded identifier-like string with no control characters. */
export function identifierText(opts: { max: number; min?: number }) {
  return z
    .string()
    .trim()
    .min(opts.min ?? 1)
    .max(opts.max)
    .refine((s) => !hasControlCharacter(s), { message: "must not contain control characters" });
}

/** Whether `text` holds a control character (C0, DEL or C1), which no identifier-like field holds. */
export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text);
}

/**
 * A machine's name made a worker host name (letters, digits, '.', '_' and '-', starting with a
 * letter or digit, at most 100 characters): the default of STRATA_HOST.
 */
export function hostNameOfMachine(machineName: string): string {
  const name = machineName
    .replace(/[^A-Za-z0-9._-]/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 100);
  return name || "localhost";
}
