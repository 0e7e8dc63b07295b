import { describe, expect, it } from "vitest";
import { credentialFreeUrl, recordedRemotes, repositoryIdentity } from "./remotes.ts";

describe("remote URLs without credentials", () => {
  it.each([
    ["https://github.com/acme/app.git", "https://github.com/acme/app.git"],
    ["https://token123@github.com/acme/app.git", "https://github.com/acme/app.git"],
    ["https://x-access-token:ghs_abc@github.com/acme/app.git", "https://github.com/acme/app.git"],
    ["http://user:pass@host:8080/repo", "http://host:8080/repo"],
    ["https://host/repo.git?private_token=abc#frag", "https://host/repo.git"],
    ["ssh://git@github.com/acme/app.git", "ssh://git@github.com/acme/app.git"],
    ["ssh://git:secret@github.com:2222/acme/app.git", "ssh://git@github.com:2222/acme/app.git"],
    ["git@github.com:acme/app.git", "git@github.com:acme/app.git"],
    ["deploy:hunter2@host:repo.git", "deploy@host:repo.git"],
    ["git://host/repo.git", "git://host/repo.git"],
    ["file:///srv/git/repo.git", "file:///srv/git/repo.git"],
    ["/srv/git/repo.git", "/srv/git/repo.git"],
    ["../upstream", "../upstream"],
    ["ext::ssh -i /home/me/key host %S 'repo'", "ext::<redacted>"],
    ["persistent-https::https://tok@host/repo", "persistent-https::https://host/repo"],
    ["https://host/re\npo", "https://host/repo"],
  ])("%s → %s", (raw, clean) => {
    expect(credentialFreeUrl(raw)).toBe(clean);
  });

  it("takes the first URL of each remote from configuration pairs", () => {
    expect(
      recordedRemotes([
        ["remote.origin.url", "https://tok@github.com/acme/app.git"],
        ["remote.origin.url", "https://second/url"],
        ["core.autocrlf", "true"],
        ["remote.fork.name.with.dots.url", "git@host:fork.git"],
        ["remote.tunnel.url", "ext::ssh -i key host %S 'repo'"],
        ["remote.cached.url", "persistent-https::https://tok@host/repo"],
      ]),
    ).toEqual([
      { name: "origin", url: "https://github.com/acme/app.git" },
      { name: "fork.name.with.dots", url: "git@host:fork.git" },
    ]);
  });

  it("names the repository by its preferred remote", () => {
    expect(repositoryIdentity([{ name: "origin", url: "https://GitHub.com/acme/app.git" }])).toBe(
      "github.com/acme/app",
    );
    expect(repositoryIdentity([{ name: "up", url: "git@github.com:acme/app.git" }])).toBe("github.com/acme/app");
    expect(
      repositoryIdentity([
        { name: "fork", url: "https://github.com/me/app" },
        { name: "origin", url: "ssh://git@github.com/acme/app.git" },
      ]),
    ).toBe("github.com/acme/app");
    expect(repositoryIdentity([{ name: "origin", url: "file:///srv/repo.git" }])).toBe("file:///srv/repo");
    expect(repositoryIdentity([])).toBeNull();
  });
});
