// Keys for what one capture may reuse from the last: each key covers everything its answer
// depends on, so a stale answer is never used. Reading a few small files is far cheaper than
// starting git, which is what this saves on every capture of a busy checkout.
import { createHash } from "node:crypto";
import { lstat, readFile, readdir } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import type { RepositoryLayout } from "../../git/commands.ts";

export const captureMemoSchema = z.object({
  config: z.object({ key: z.string(), pairs: z.array(z.tuple([z.string(), z.string()])) }).optional(),
  attributeFiles: z.array(z.string()).optional(),
  unpushed: z
    .object({
      key: z.string(),
      commits: z.array(z.string()),
      denied: z.array(z.tuple([z.string(), z.array(z.string())])),
    })
    .optional(),
  verbatim: z
    .object({
      tree: z.string(),
      key: z.string(),
      files: z.array(z.object({ path: z.string(), oid: z.string(), attributes: z.string() })),
    })
    .optional(),
});

function digest(value: unknown): string {
  return createHash("sha256").update(JSON.stringify(value)).digest("hex");
}

function configFiles(layout: RepositoryLayout, env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME ?? homedir();
  const xdg = env.XDG_CONFIG_HOME || join(home, ".config");
  const files = [join(layout.commonDir, "config"), join(layout.gitDir, "config.worktree")];
  files.push(env.GIT_CONFIG_GLOBAL ?? join(home, ".gitconfig"), join(xdg, "git", "config"));
  if (!env.GIT_CONFIG_NOSYSTEM) files.push(env.GIT_CONFIG_SYSTEM ?? "/etc/gitconfig");
  return files;
}

/**
 * The content of every configuration file git reads here, or null when one of them includes
 * others (their content is not followed, so nothing may be reused).
 */
export async function configKey(layout: RepositoryLayout, env = process.env): Promise<string | null> {
  const files = configFiles(layout, env);
  const texts = await Promise.all(files.map((f) => readFile(f, "utf8").catch(() => null)));
  if (texts.some((t) => t !== null && /^\s*\[\s*include/im.test(t))) return null;
  return digest([files, texts]);
}

async function refsSignature(dir: string, out: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await refsSignature(path, out);
    else {
      const st = await lstat(path, { bigint: true }).catch(() => null);
      out.push(`${path}:${st ? `${st.ino}:${st.size}:${st.mtimeNs}` : "gone"}`);
    }
  }
}

/** HEAD and the state of every remote-tracking ref (loose files and packed-refs). */
export async function unpushedKey(layout: RepositoryLayout, head: string): Promise<string> {
  const parts: string[] = [head];
  await refsSignature(join(layout.commonDir, "refs", "remotes"), parts);
  const packed = await lstat(join(layout.commonDir, "packed-refs"), { bigint: true }).catch(() => null);
  parts.push(packed ? `packed:${packed.ino}:${packed.size}:${packed.mtimeNs}` : "packed:none");
  return digest(parts);
}
