// Remote URLs as a snapshot may record them: without credentials. A token can hide in the user
// part of an https URL (https://x-access-token:TOKEN@host/...), in a password, or in a query
// string; all of those go. An ssh user name (git@host:org/repo) is kept, since fetching over ssh
// needs it and it is not a secret.

export interface RecordedRemote {
  name: string;
  url: string;
}

const SCHEME_URL = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(.*)$/i;
const HELPER_URL = /^([a-z][a-z0-9+.-]*)::(.*)$/i;
// user@host:path, where host has no slash before the colon (git's scp-like syntax).
const SCP_LIKE = /^([^@/]+)@([^/:]+):(.*)$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/g;

function isSshScheme(scheme: string): boolean {
  return ["ssh", "git+ssh", "ssh+git"].includes(scheme.toLowerCase());
}

export function credentialFreeUrl(raw: string): string {
  const url = raw.trim().replace(CONTROL, "");
  const helper = HELPER_URL.exec(url);
  if (helper) {
    const [, name = "", address = ""] = helper;
    // `ext::` and other helpers take whole command lines; only a plain URL is worth keeping.
    return SCHEME_URL.test(address) ? `${name}::${credentialFreeUrl(address)}` : `${name}::<redacted>`;
  }
  const parsed = SCHEME_URL.exec(url);
  if (parsed) {
    const [, scheme = "", authority = "", rest = ""] = parsed;
    const at = authority.lastIndexOf("@");
    const host = at >= 0 ? authority.slice(at + 1) : authority;
    const user = at >= 0 ? (authority.slice(0, at).split(":")[0] ?? "") : "";
    const keptUser = isSshScheme(scheme) && user !== "" ? `${user}@` : "";
    const path = rest.replace(/[?#].*$/, "");
    return `${scheme}://${keptUser}${host}${path}`;
  }
  const scp = SCP_LIKE.exec(url);
  if (scp) {
    const [, user = "", host = "", path = ""] = scp;
    return `${user.split(":")[0]}@${host}:${path}`;
  }
  // A local path (or something git will read as one).
  return url;
}

/**
 * Remotes from `remote.<name>.url` configuration pairs, first URL per remote, in file order.
 * Remotes reached through a remote helper (`ext::…`, `persistent-https::…`) are left out: a
 * restore never runs a helper, so a record naming one could not be restored at all.
 */
export function recordedRemotes(config: ReadonlyArray<readonly [string, string]>): RecordedRemote[] {
  const remotes: RecordedRemote[] = [];
  const seen = new Set<string>();
  for (const [key, value] of config) {
    const match = /^remote\.(.+)\.url$/i.exec(key);
    if (!match) continue;
    const name = match[1] ?? "";
    if (seen.has(name)) continue;
    seen.add(name);
    if (HELPER_URL.test(value.trim())) continue;
    remotes.push({ name, url: credentialFreeUrl(value) });
  }
  return remotes;
}

/**
 * A credential-free identity of the repository a set of remotes names: host and path of the
 * preferred remote (origin first), without scheme, user or `.git`. Null without remotes.
 */
export function repositoryIdentity(remotes: readonly RecordedRemote[]): string | null {
  const remote = remotes.find((r) => r.name === "origin") ?? remotes[0];
  if (!remote) return null;
  const url = remote.url;
  const parsed = SCHEME_URL.exec(url);
  let identity: string;
  if (parsed && !/^file$/i.test(parsed[1] ?? "")) {
    const authority = parsed[2] ?? "";
    const host = authority.slice(authority.lastIndexOf("@") + 1).toLowerCase();
    identity = `${host}${parsed[3] ?? ""}`;
  } else if (SCP_LIKE.test(url)) {
    const [, , host = "", path = ""] = SCP_LIKE.exec(url) ?? [];
    identity = `${host.toLowerCase()}/${path.replace(/^\/+/, "")}`;
  } else {
    identity = parsed ? `file://${parsed[2] ?? ""}${parsed[3] ?? ""}` : url;
  }
  return identity.replace(/\/+$/, "").replace(/\.git$/i, "");
}
