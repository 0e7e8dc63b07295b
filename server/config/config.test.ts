import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, describeDatabase, loadClientConfig, loadConfig } from "./config.ts";

/** The ConfigError a call throws (the test fails when it throws nothing or something else). */
function configErrorOf(load: () => unknown): ConfigError {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError, but the configuration loaded");
}

describe("configuration", () => {
  it("defaults to an SQLite file under ./.strata and port 3000", () => {
    const config = loadConfig({});
    expect(config.dataDir).toBe(path.resolve(".strata"));
    expect(config.databaseUrl).toBe(`file:${path.resolve(".strata", "strata.db")}`);
    expect(config.port).toBe(3000);
  });

  it("puts the default database under STRATA_DATA_DIR", () => {
    expect(loadConfig({ STRATA_DATA_DIR: "/srv/strata" }).databaseUrl).toBe("file:/srv/strata/strata.db");
  });

  it("takes a PostgreSQL DATABASE_URL as given", () => {
    const url = "postgresql://strata@db.internal:5432/catalog";
    expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
  });

  it("treats an empty variable as unset", () => {
    expect(loadConfig({ PORT: "", DATABASE_URL: "" }).port).toBe(3000);
  });

  it.each([
    ["PORT", "abc"],
    ["PORT", "70000"],
    ["DATABASE_URL", "mysql://localhost/x"],
    ["STRATA_LOG_LEVEL", "loud"],
  ])("stops on a bad %s and names it", (variable, value) => {
    const error = configErrorOf(() => loadConfig({ [variable]: value }));
    expect(error.problems.map((p) => p.variable)).toEqual([variable]);
    expect(error.message).toContain(variable);
  });

  it("describes a database without its credentials", () => {
    const text = describeDatabase("postgresql://strata:s3cret-pass@db.internal:5432/catalog");
    expect(text).toBe("PostgreSQL at db.internal:5432/catalog");
    expect(text).not.toContain("s3cret");
  });

  it("reads the CLI's server address and token, without a trailing slash", () => {
    expect(
      loadClientConfig({ STRATA_SERVER_URL: "https://strata.example.test/base/", STRATA_TOKEN: " strata_x " }),
    ).toEqual({ serverUrl: "https://strata.example.test/base", token: "strata_x" });
    expect(loadClientConfig({ STRATA_SERVER_URL: "", STRATA_TOKEN: "" })).toEqual({
      serverUrl: undefined,
      token: undefined,
    });
  });

  it.each([
    ["STRATA_SERVER_URL", "strata.example.test"],
    ["STRATA_SERVER_URL", "ftp://strata.example.test"],
    ["STRATA_SERVER_URL", "https://agent:s3cret-pass@strata.example.test"],
    ["STRATA_TOKEN", "strata_a strata_b"],
  ])("refuses %s=%s, naming the variable and not the value", (variable, value) => {
    const error = configErrorOf(() => loadClientConfig({ [variable]: value }));
    expect(error.problems.map((p) => p.variable)).toEqual([variable]);
    expect(error.message).not.toContain(value);
  });
});
