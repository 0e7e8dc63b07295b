import { describe, expect, it } from "vitest";
import { deniedNameRule, deniedPathRule } from "./deny-list.ts";

describe("the secret deny-list", () => {
  it.each([
    // .env*
    [".env", ".env*"],
    [".env.local", ".env*"],
    [".env.production", ".env*"],
    [".envrc", ".env*"],
    // secret extensions, on every name
    ["server.pem", "*.pem"],
    ["tls.key", "*.key"],
    ["bundle.p12", "*.p12"],
    ["bundle.pfx", "*.pfx"],
    ["id_server.pem", "*.pem"],
    ["id_rsa.pub.key", "*.key"],
    ["SERVER.PEM", "*.pem"],
    // SSH keys by name
    ["id_rsa", "id_rsa*"],
    ["id_rsa.bak", "id_rsa*"],
    ["id_rsa_old", "id_rsa*"],
    ["id_ed25519", "id_ed25519*"],
    ["id_ecdsa", "id_ecdsa*"],
    ["id_ecdsa_sk", "id_ecdsa*"],
    ["id_dsa", "id_dsa*"],
    ["id_mldsa", "id_mldsa*"],
    ["id_xmss", "id_xmss*"],
    ["ID_RSA", "id_rsa*"],
    ["id_deploy", "id_* without an extension"],
    ["id_github", "id_* without an extension"],
    // credential files
    ["credentials", "credentials"],
    ["credentials.json", "credentials.json"],
    [".netrc", ".netrc"],
    ["_netrc", "_netrc"],
    [".git-credentials", ".git-credentials"],
    [".pgpass", ".pgpass"],
  ])("denies %s (%s)", (name, rule) => {
    expect(deniedNameRule(name)).toBe(rule);
  });

  it.each([
    "id_rsa.pub",
    "id_ed25519.pub",
    "id_rsa-cert.pub",
    "id_utils.ts",
    "id_card.md",
    "identity.ts",
    "environment.md",
    "my.env",
    "keys.ts",
    "credentials.md",
    "credential",
    "README.md",
    "netrc",
    "pem",
  ])("keeps %s", (name) => {
    expect(deniedNameRule(name)).toBeNull();
  });

  it("judges every component of a path, as a .gitignore pattern would", () => {
    expect(deniedPathRule("config/.env.production")).toBe(".env*");
    expect(deniedPathRule(".env/bin/python")).toBe(".env*");
    expect(deniedPathRule("home/.ssh/id_ed25519")).toBe("id_ed25519*");
    expect(deniedPathRule("keys/ci.key/README")).toBe("*.key");
    expect(deniedPathRule("src/id_utils.ts")).toBeNull();
    expect(deniedPathRule("docs/env/setup.md")).toBeNull();
  });

  it("judges SSH key rules on the file's own name, never on a directory", () => {
    // Tracked test fixtures of a parser (babel has thousands): directories, not keys.
    for (const path of [
      "packages/babel-parser/test/fixtures/placeholders/expression/id_expression/input.js",
      "fixtures/id_statement/output.json",
      "fixtures/id_declaration/options.json",
      "fixtures/id_rsa/README.md",
      "fixtures/id_expression/",
      "id_deploy/",
    ]) {
      expect(deniedPathRule(path), path).toBeNull();
    }
    // Real key files stay denied wherever they are, .ssh/ included.
    expect(deniedPathRule(".ssh/id_rsa")).toBe("id_rsa*");
    expect(deniedPathRule("home/.ssh/id_ed25519")).toBe("id_ed25519*");
    expect(deniedPathRule(".ssh/id_deploy")).toBe("id_* without an extension");
    expect(deniedPathRule("deploy/keys/id_ecdsa_sk.old")).toBe("id_ecdsa*");
    expect(deniedPathRule("fixtures/id_expression/id_rsa")).toBe("id_rsa*");
    expect(deniedPathRule(".ssh/id_ed25519.pub")).toBeNull();
    // The other rules still take a directory's contents.
    expect(deniedPathRule("id_expression/.env/token")).toBe(".env*");
    expect(deniedPathRule("secrets.pem/readme.txt")).toBe("*.pem");
    expect(deniedPathRule("aws/credentials/config")).toBe("credentials");
  });
});
