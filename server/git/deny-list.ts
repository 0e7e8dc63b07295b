// The built-in secret deny-list. A path is denied when any of its components matches (as a
// .gitignore pattern would: a denied directory takes its contents with it). Matching ignores
// case, so an upper-case name on a case-insensitive disk cannot slip through.

const SECRET_EXTENSIONS = [".pem", ".key", ".p12", ".pfx"];
const SECRET_NAMES = new Set(["credentials", "credentials.json", ".netrc", "_netrc", ".git-credentials", ".pgpass"]);
const SSH_KEY_TYPES = ["id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "id_mldsa", "id_xmss"];

/** Why one file or directory name is a secret, or null when it is not. */
export function deniedNameRule(name: string): string | null {
  const lower = name.toLowerCase();
  if (lower.startsWith(".env")) return ".env*";
  // The secret extensions win over every exception below (id_rsa.pub.key is denied).
  const extension = SECRET_EXTENSIONS.find((ext) => lower.endsWith(ext));
  if (extension) return `*${extension}`;
  if (SECRET_NAMES.has(lower)) return lower;
  if (lower.startsWith("id_")) {
    // Public keys and their certificates (id_rsa.pub, id_rsa-cert.pub) are not secrets.
    if (lower.endsWith(".pub")) return null;
    const keyType = SSH_KEY_TYPES.find((type) => lower.startsWith(type));
    if (keyType) return `${keyType}*`;
    const dot = lower.indexOf(".");
    if (dot < 0 || dot === lower.length - 1) return "id_* without an extension";
  }
  return null;
}

/** The deny rule a repository-relative path falls under, or null. */
export function deniedPathRule(path: string): string | null {
  for (const component of path.split("/")) {
    if (component === "") continue;
    const rule = deniedNameRule(component);
    if (rule) return rule;
  }
  return null;
}
