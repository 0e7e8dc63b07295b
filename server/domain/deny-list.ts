// The built-in secret deny-list. Most rules judge every component of a path, as a .gitignore
// pattern would: a `.env/` or `certs.key/` directory takes its contents with it. The SSH key
// rules judge only the file's own name: they name key *files*, so a directory such as a test
// fixture's `id_expression/` is not one. Matching ignores case, so an upper-case name on a
// case-insensitive disk cannot slip through.

const SECRET_EXTENSIONS = [".pem", ".key", ".p12", ".pfx"];
const SECRET_NAMES = new Set(["credentials", "credentials.json", ".netrc", "_netrc", ".git-credentials", ".pgpass"]);
const SSH_KEY_TYPES = ["id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "id_mldsa", "id_xmss"];

/** The rules that hold for a directory and a file alike (lower-case name). */
function secretNameRule(lower: string): string | null {
  if (lower.startsWith(".env")) return ".env*";
  const extension = SECRET_EXTENSIONS.find((ext) => lower.endsWith(ext));
  if (extension) return `*${extension}`;
  if (SECRET_NAMES.has(lower)) return lower;
  return null;
}

/** The SSH private-key rules, for a file name only (lower-case name). */
function sshKeyFileRule(lower: string): string | null {
  if (!lower.startsWith("id_")) return null;
  // Public keys and their certificates (id_rsa.pub, id_rsa-cert.pub) are not secrets.
  if (lower.endsWith(".pub")) return null;
  const keyType = SSH_KEY_TYPES.find((type) => lower.startsWith(type));
  if (keyType) return `${keyType}*`;
  const dot = lower.indexOf(".");
  if (dot < 0 || dot === lower.length - 1) return "id_* without an extension";
  return null;
}

/** Why a file name is a secret, or null when it is not. */
export function deniedNameRule(name: string): string | null {
  const lower = name.toLowerCase();
  // The secret extensions win over the SSH exceptions (id_rsa.pub.key is denied).
  return secretNameRule(lower) ?? sshKeyFileRule(lower);
}

/**
 * The deny rule a repository-relative path falls under, or null. The last component is the
 * file's name unless the path ends with "/" (a directory).
 */
export function deniedPathRule(path: string): string | null {
  const components = path.split("/");
  const fileName = path.endsWith("/") ? null : components.pop();
  for (const directory of components) {
    if (directory === "") continue;
    const rule = secretNameRule(directory.toLowerCase());
    if (rule) return rule;
  }
  return fileName ? deniedNameRule(fileName) : null;
}
