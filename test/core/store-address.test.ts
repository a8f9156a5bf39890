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

  it("sqlite:PATH is a SQLite file at PATH", () => {
    expect(parseStoreAddress("sqlite:./jobs.db")).toEqual({ kind: "sqlite", path: "./jobs.db" });
    expect(parseStoreAddress("sqlite:/data/a@b.db")).toEqual({ kind: "sqlite", path: "/data/a@b.db" });
  });

  it("a postgres:// or postgresql:// address, in any case, is kept as given for the driver", () => {
    for (const address of ["postgres://u:pw@db:5432/jobs", "postgresql://u:pw@db/jobs?sslmode=require", "POSTGRES://u:pw@db/jobs"]) {
      expect(parseStoreAddress(address)).toEqual({ kind: "postgres", connectionString: address });
    }
  });

  it("a PostgreSQL address without a host (a Unix socket given as host=) is accepted, and its password is a secret", () => {
    const address = "postgres://u:pw-1234@/jobs?host=/var/run/postgresql";
    expect(parseStoreAddress(address)).toEqual({ kind: "postgres", connectionString: address });
    expect(storeSecrets(address)).toEqual(["pw-1234"]);
  });

  it("the refusals say what is expected, in one sentence naming the setting", () => {
    expect(() => parseStoreAddress("postgres://u:s3cret-pw@db:notaport/x")).toThrow(
      "MEDIAGATE_STORE (or --store) postgres://u:***@db:notaport/x is not a valid PostgreSQL address: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE, with a numeric port and special characters of the password %-encoded",
    );
    expect(() => parseStoreAddress("jdbc:postgresql://u:s3cret-pw@db/x")).toThrow(
      'MEDIAGATE_STORE (or --store) must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE, got "jdbc:postgresql://u:***@db/x"',
    );
    expect(() => parseStoreAddress("./mediagate.db")).toThrow('got "./mediagate.db"');
  });

  it("a password without a user is masked; an address without a user part is shown as given, port included", () => {
    expect(maskStoreAddress("postgres://:s3cret-pw@db/jobs")).toBe("postgres://:***@db/jobs");
    expect(maskStoreAddress("postgres://db.internal:5432/jobs")).toBe("postgres://db.internal:5432/jobs");
    expect(maskStoreAddress("//u:s3cret-pw@db/jobs")).toBe("//u:***@db/jobs");
  });

  it("an '@' in the query does not end the user part", () => {
    expect(maskStoreAddress("postgres://u:s3cret-pw@db/jobs?options=a@b")).toBe("postgres://u:***@db/jobs?options=a@b");
  });

  it("a SQLite path holding '@' and ':' is shown as given", () => {
    expect(maskStoreAddress("sqlite:/data/a:b@c.db")).toBe("sqlite:/data/a:b@c.db");
  });

  it("a password that is not valid %-encoding is a secret as written", () => {
    expect(storeSecrets("postgres://u:100%@db/x")).toEqual(["100%"]);
  });

  it("reading the secrets of an address that is not a valid URL does not fail", () => {
    expect(() => storeSecrets("postgres://u:s3cret-pw@db:notaport/x")).not.toThrow();
  });
});
