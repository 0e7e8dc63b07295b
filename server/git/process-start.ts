// Whether a process still runs, told well enough that a later process with the same pid is not
// taken for it: on Linux a pid is paired with its start time (/proc/<pid>/stat, field 22).
// Used by the restore engine's crash records and by the worktree pool's leases.
import { readFile } from "node:fs/promises";

/** Field 22 of /proc/<pid>/stat (starttime, clock ticks after boot); null where it cannot be read. */
export async function processStartTime(pid: number): Promise<string | null> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) is parenthesized and may hold spaces and parentheses itself.
  const fields = stat
    .trim()
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ");
  return fields[19] ?? null;
}

/** Whether a process with this pid exists (EPERM: it runs, as another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
