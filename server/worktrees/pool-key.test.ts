// Which checkouts share a pool: the repository their remotes name, relative remotes taken as the
// absolute path they reach from the checkout, and no pool for a checkout without remotes. The
// last tests read real checkouts' configuration with git.
import { basename, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { git, initRepository, removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";
import { poolKeyOf, poolKeyOfCheckout, type PoolKey } from "./pool-key.ts";

afterAll(removeTemporaryDirectories);

const origin = (url: string) => [{ name: "origin", url }];

function identityOf(key: PoolKey): string {
  if (!key.pooled) throw new Error(`not pooled: ${key.message}`);
  return key.repository.identity;
}

describe("the pool a checkout belongs to", () => {
  it("is the repository its remotes name, however the URL spells it", () => {
    const https = poolKeyOf(origin("https://github.com/acme/app.git"), "/checkouts/a");
    const scp = poolKeyOf(origin("git@github.com:acme/app.git"), "/elsewhere/b");
    const ssh = poolKeyOf(origin("ssh://git@GitHub.com/acme/app"), "/c");
    expect(https).toEqual({ pooled: true, repository: { identity: "github.com/acme/app", name: "app" } });
    expect(scp).toEqual(https);
    expect(ssh).toEqual(https);
    // Another repository of the same name is another pool (its worktrees are named app-<n> too).
    expect(identityOf(poolKeyOf(origin("https://github.com/other/app.git"), "/checkouts/a"))).toBe(
      "github.com/other/app",
    );
  });

  it("takes origin first, then the first remote", () => {
    const remotes = [
      { name: "fork", url: "https://github.com/me/app.git" },
      { name: "origin", url: "https://github.com/acme/app.git" },
    ];
    expect(identityOf(poolKeyOf(remotes, "/w"))).toBe("github.com/acme/app");
    expect(identityOf(poolKeyOf(remotes.slice(0, 1), "/w"))).toBe("github.com/me/app");
  });

  it("resolves a relative remote against the checkout, so the same upstream is one pool and the same relative path is not", () => {
    const viaParent = poolKeyOf(origin("../upstream"), "/srv/team/work");
    const viaAbsolute = poolKeyOf(origin("/srv/team/upstream/"), "/home/me/clone");
    const viaDot = poolKeyOf(origin("./../../team/upstream.git"), "/srv/other/x");
    expect(identityOf(viaParent)).toBe("/srv/team/upstream");
    expect(viaAbsolute).toEqual(viaParent);
    expect(viaDot).toEqual(viaParent);
    expect(identityOf(poolKeyOf(origin("../upstream"), "/srv/elsewhere/work"))).toBe("/srv/elsewhere/upstream");
    // A scp-like remote is not a relative path.
    expect(identityOf(poolKeyOf(origin("host:team/app.git"), "/w"))).toBe("host:team/app");
  });

  it("names worktrees after the repository, in characters any filesystem takes", () => {
    const name = (url: string) => {
      const key = poolKeyOf(origin(url), "/w");
      return key.pooled ? key.repository.name : null;
    };
    expect(name("https://host/group/My Repo (copy).git")).toBe("My-Repo-copy");
    expect(name("/srv/.hidden")).toBe("hidden");
    expect(name("https://host/")).toBe("host");
    expect(name(`https://host/${"x".repeat(100)}`)).toHaveLength(64);
  });

  it("is none for a checkout without remotes, and says why", () => {
    const key = poolKeyOf([], "/checkouts/scratch");
    expect(key).toMatchObject({ pooled: false, reason: "no-remote" });
    expect(key.pooled ? "" : key.message).toMatch(/\/checkouts\/scratch has no remote.*Add a remote/);
  });

  it("reads a real checkout's remotes, relative ones resolved from its root", async () => {
    const base = temporaryDirectory("strata-pool-key-");
    const upstream = join(base, "upstream");
    git(base, ["init", "--quiet", "--bare", upstream]);
    const a = initRepository();
    const b = initRepository();
    git(a, ["remote", "add", "origin", upstream]);
    // b reaches the same upstream by a path relative to itself (both are in the temporary directory).
    git(b, ["remote", "add", "origin", join("..", basename(base), "upstream")]);
    const local = initRepository();

    expect(identityOf(await poolKeyOfCheckout(a))).toBe(upstream);
    expect(identityOf(await poolKeyOfCheckout(b))).toBe(upstream);
    expect(await poolKeyOfCheckout(local)).toMatchObject({ pooled: false, reason: "no-remote" });
  });
});
