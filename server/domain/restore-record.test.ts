import { describe, expect, it } from "vitest";
import { branchNameProblem, remoteNameProblem, remoteUrlProblem, worktreePathProblem } from "./restore-record.ts";

describe("remote URLs a restore accepts", () => {
  it.each([
    "/srv/git/app.git",
    "../upstream",
    "file:///srv/git/app.git",
    "git@example.invalid:acme/app.git",
    "example.invalid:acme/app.git",
    "ssh://git@example.invalid:2222/acme/app.git",
    "ssh://example.invalid/acme/app.git",
    "git://example.invalid/acme/app.git",
    "https://example.invalid/acme/app.git",
    "http://example.invalid:8080/acme/app.git",
    "/path with spaces/app.git",
  ])("accepts %s", (url) => expect(remoteUrlProblem(url)).toBeNull());

  it.each([
    ["https://user:pw@example.invalid/a.git", "credentials in the URL"],
    ["https://user@example.invalid/a.git", "credentials in the URL"],
    ["ssh://git:pw@example.invalid/a.git", "credentials in the URL"],
    ["https://example.invalid/a.git?token=x", "a query string or fragment"],
    ["https://example.invalid/a.git#frag", "a query string or fragment"],
    ["ext::sh -c x", "a git remote helper"],
    ["transport::https://example.invalid/a.git", "a git remote helper"],
    ["ftp://example.invalid/a.git", "a URL scheme other than https, http, ssh, git or file"],
    ["-u/evil", "starts with '-'"],
    ["ssh://-oProxyCommand=x/a", "a host starting with '-'"],
    ["git@-oProxy:a.git", "a bad host"],
    ["host:-path", "a path starting with '-'"],
    ["https://example.invalid/a\u0007.git", "control characters"],
    [" /srv/a.git", "surrounding whitespace"],
    ["", "empty or too long"],
  ])("refuses %s (%s)", (url, why) => expect(remoteUrlProblem(url)).toBe(why));
});

describe("names", () => {
  it("accepts branches git accepts and refuses the rest", () => {
    for (const ok of ["main", "feature/a-b", "release/1.2", "a@b"]) expect(branchNameProblem(ok)).toBeNull();
    for (const bad of ["-f", "a..b", "a b", "a/", "a.lock", ".hidden", "a/.b", "@", "x@{1}", "a:b", "a\\b"]) {
      expect(branchNameProblem(bad), bad).not.toBeNull();
    }
  });

  it("accepts plain remote names", () => {
    for (const ok of ["origin", "origin-2", "team/mirror", "a.b_c"]) expect(remoteNameProblem(ok)).toBeNull();
    for (const bad of ["-x", "a b", "a\nb", "../x", "a/../b", "x.lock", ""])
      expect(remoteNameProblem(bad), bad).not.toBeNull();
  });
});

describe("where a recorded file may be written", () => {
  it("only inside the worktree, never in .git", () => {
    for (const ok of ["a.txt", "fixtures/id_expression/input.js", "naïve café.txt", ".github/x", "a/.gitignore"]) {
      expect(worktreePathProblem(ok), ok).toBeNull();
    }
    for (const bad of [
      "",
      "/etc/passwd",
      "../x",
      "a/../../x",
      "a//b",
      "./a",
      "a/",
      ".git/config",
      "sub/.GIT/hooks/x",
      "a\0b",
    ]) {
      expect(worktreePathProblem(bad), JSON.stringify(bad)).not.toBeNull();
    }
  });
});
