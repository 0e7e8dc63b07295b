import { describe, expect, it } from "vitest";
import { manifestDigest, manifestSchema } from "./manifest.ts";
import { canonicalRefSchema, repositoryDisplayName, repositoryRefSchema } from "./snapshot-keys.ts";

describe("snapshot keys", () => {
  it("names one baseline key for `main` and `refs/heads/main`", () => {
    expect(canonicalRefSchema.parse("main")).toBe("refs/heads/main");
    expect(canonicalRefSchema.parse("refs/heads/main")).toBe("refs/heads/main");
    expect(canonicalRefSchema.safeParse("refs/tags/v1").success).toBe(false);
    expect(canonicalRefSchema.safeParse("main..x").success).toBe(false);
  });

  it("refuses repository identities that carry credentials", () => {
    expect(repositoryRefSchema.safeParse({ identity: "https://user:secret@github.com/acme/app" }).success).toBe(false);
    expect(repositoryRefSchema.safeParse({ identity: "github.com/acme/app" }).success).toBe(true);
    expect(repositoryDisplayName({ identity: "git@github.com:acme/app.git" })).toBe("app");
  });
});

describe("manifestDigest", () => {
  it("ignores the order and repetition of blob digests", () => {
    const a = manifestSchema.parse({
      treeId: "1".repeat(40),
      head: "2".repeat(40),
      branch: "main",
      blobDigests: ["a".repeat(64), "b".repeat(64)],
    });
    const b = { ...a, blobDigests: ["b".repeat(64), "a".repeat(64), "b".repeat(64)] };
    expect(manifestDigest(a)).toBe(manifestDigest(b));
    expect(manifestDigest({ ...a, branch: null })).not.toBe(manifestDigest(a));
  });
});
