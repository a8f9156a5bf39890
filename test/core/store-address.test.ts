import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/core/errors.js";
import { maskStoreAddress, parseStoreAddress, storeSecrets } from "../../src/core/store-address.js";

describe("store addresses (MEDIAGATE_STORE)", () => {
  it("the password of a PostgreSQL address is masked; user, host, port, database and parameters stay readable", () => {
    expect(maskStoreAddress("postgres://mediagate:s3cret-pw@db.internal:6432/jobs?application_name=w1")).toBe(
      "postgres://mediagate:***@db.internal:6432/jobs?application_name=w1",
    );
    expect(maskStoreAddress("postgresql://mediagate:s3cret%40pw@db/jobs")).toBe("postgresql://mediagate:***@db/jobs");
  });

  it("a password holding an unencoded '@' or '/' is masked whole, even though the address is not a valid URL", () => {
    expect(maskStoreAddress("postgres://u:pa@ss/word@db:5432/jobs")).toBe("postgres://u:***@db:5432/jobs");
  });

  it("a password given as a password= parameter is masked too", () => {
    expect(maskStoreAddress("postgres://u@db/jobs?sslmode=require&password=s3cret-pw&application_name=x")).toBe(
      "postgres://u@db/jobs?sslmode=require&password=***&application_name=x",
    );
  });

  it("addresses without a password are shown as given", () => {
    for (const address of ["postgres://postgres@127.0.0.1:5432/test", "sqlite:./mediagate.db", "notaport"]) expect(maskStoreAddress(address)).toBe(address);
  });

  it("the store's password is a secret in both its written and decoded forms; SQLite has none", () => {
    expect(storeSecrets("postgres://u:s3cret%2Fpw@db/jobs").sort()).toEqual(["s3cret%2Fpw", "s3cret/pw"]);
    expect(storeSecrets("postgres://u@db/jobs?password=s3cret-pw")).toEqual(["s3cret-pw"]);
    expect(storeSecrets("sqlite:./mediagate.db")).toEqual([]);
  });

  it("anything but sqlite:PATH or a parseable postgres:// address is a ConfigError naming MEDIAGATE_STORE, with the password masked", () => {
    for (const address of ["notaport", "mysql://u:s3cret-pw@db/x", "postgres://u:s3cret-pw@db:notaport/x"]) {
      let error: unknown;
      try {
        parseStoreAddress(address);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe("MEDIAGATE_STORE");
      expect((error as ConfigError).message).toMatch(/^MEDIAGATE_STORE \(or --store\) /);
      expect((error as ConfigError).message).not.toContain("s3cret-pw");
    }
    expect(parseStoreAddress("sqlite:")).toEqual({ kind: "sqlite", path: "./mediagate.db" });
  });
});
