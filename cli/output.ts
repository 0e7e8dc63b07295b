// Exit codes and output helpers shared by every command.
import { bigintsAsStrings } from "../server/domain/json-text.ts";

/** Exit codes that tell failure kinds apart. */
export const EXIT = {
  OK: 0,
  FAILURE: 1,
  USAGE: 2,
  CONFIG: 3,
  DATABASE: 4,
} as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.FAILURE,
  ) {
    super(message);
  }
}

/** Prints a value as JSON (for --json) or a human line. */
export function emit(json: boolean, value: unknown, human: string): void {
  process.stdout.write(json ? `${JSON.stringify(value, bigintsAsStrings, 2)}\n` : `${human}\n`);
}

/** A progress line on a terminal; silent when stderr is not a TTY (logs, pipes). */
export function progress(message: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\u001b[2K\r${message}`);
}
export function progressDone(message: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\u001b[2K\r${message}\n`);
  else process.stderr.write(`${message}\n`);
}
