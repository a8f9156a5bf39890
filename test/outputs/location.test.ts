import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config.js";
import { OutputSaveError } from "../../src/outputs/local-folder.js";
import { isBucketLocation, outputFolderOf, outputPath, resolveOutputLocation } from "../../src/outputs/location.js";
import { bucketAddress } from "../../src/outputs/s3-address.js";

describe("output locations: a local folder or an s3://bucket/prefix", () => {
  it("an s3:// address is a bucket location (any case of the scheme); anything else is a local path", () => {
    expect(isBucketLocation("s3://outputs/run")).toBe(true);
    expect(isBucketLocation("S3://outputs")).toBe(true);
    expect(isBucketLocation("./s3:/outputs")).toBe(false);
    expect(isBucketLocation("/tmp/out")).toBe(false);
    // Only at the start: a local folder whose path has s3:// further on is a folder.
    expect(isBucketLocation("backup/s3://outputs")).toBe(false);
  });

  it("a file in a bucket location is a key under its prefix (no path normalisation); in a folder, a joined path", () => {
    expect(outputPath("s3://outputs/run", "fox.png")).toBe("s3://outputs/run/fox.png");
    expect(outputPath("s3://outputs/run/", "fox.png")).toBe("s3://outputs/run/fox.png");
    expect(outputPath("s3://outputs", "fox.png")).toBe("s3://outputs/fox.png");
    expect(outputPath("s3://outputs/run///", "fox.png")).toBe("s3://outputs/run/fox.png");
    expect(outputPath("/tmp/out", "fox.png")).toBe(join("/tmp/out", "fox.png"));
    expect(outputPath("out/../run/", "fox.png")).toBe(join("run", "fox.png"));
    expect(outputFolderOf("s3://outputs/run/fox.png")).toBe("s3://outputs/run");
    expect(outputFolderOf("/tmp/out/fox.png")).toBe("/tmp/out");
    expect(outputFolderOf("s3://outputs/fox.png")).toBe("s3://outputs");
    expect(outputFolderOf("fox.png")).toBe(".");
    expect(outputFolderOf("/fox.png")).toBe("/");
    expect(outputFolderOf("s3://outputs/a/b/fox.png")).toBe("s3://outputs/a/b");
  });

  it("resolving keeps a bucket address (scheme lower-cased, trailing slashes dropped) and makes a folder absolute", () => {
    expect(resolveOutputLocation("S3://outputs/run//")).toBe("s3://outputs/run");
    expect(resolveOutputLocation("out")).toBe(resolve("out"));
    // Only the scheme is lower-cased, and only slashes at the end are dropped.
    expect(resolveOutputLocation("s3://outputs//Run")).toBe("s3://outputs//Run");
    expect(resolveOutputLocation("S3://outputs/s3://x/")).toBe("s3://outputs/s3://x");
  });

  it("MEDIAGATE_OUTPUT_DIR keeps a bucket address as written, and still makes a folder absolute against the working folder", () => {
    expect(loadConfig({ env: { MEDIAGATE_OUTPUT_DIR: "s3://outputs/run/" }, cwd: "/tmp" }).outputDir).toBe("s3://outputs/run");
    expect(loadConfig({ env: { MEDIAGATE_OUTPUT_DIR: "out" }, cwd: "/tmp" }).outputDir).toBe("/tmp/out");
  });

  it("a bucket address is a bucket name and a key prefix without empty, '.' or '..' segments", () => {
    expect(bucketAddress("s3://outputs")).toEqual({ bucket: "outputs", key: "" });
    expect(bucketAddress("s3://outputs/a//b/")).toEqual({ bucket: "outputs", key: "a/b" });
    expect(bucketAddress("s3://my.bucket-1/2026/run")).toEqual({ bucket: "my.bucket-1", key: "2026/run" });
    expect(bucketAddress("S3://outputs/Run")).toEqual({ bucket: "outputs", key: "Run" });
  });

  it("a bucket name is 3 to 63 characters of lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit", () => {
    for (const bucket of ["abc", "a-b", "a.b", "0ab", "ab9", `a${"b".repeat(61)}c`]) expect(bucketAddress(`s3://${bucket}/x`)).toEqual({ bucket, key: "x" });
    for (const bucket of ["ab", "-ab", "ab-", ".ab", "ab.", `a${"b".repeat(62)}c`, "a_b", "a b"]) {
      expect(() => bucketAddress(`s3://${bucket}/x`)).toThrow(`"${bucket}" is not a bucket name`);
    }
  });

  it("an @ in the key is part of the key (only an @ before the first slash carries a user or password)", () => {
    expect(bucketAddress("s3://outputs/fox@2x/run")).toEqual({ bucket: "outputs", key: "fox@2x/run" });
  });

  it("a key made of '.' segments is refused like '..', and a segment that only starts with a dot is a name", () => {
    expect(() => bucketAddress("s3://outputs/./x")).toThrow('"." and ".." are not allowed in the prefix');
    expect(() => bucketAddress("s3://outputs/x/..")).toThrow('"." and ".." are not allowed in the prefix');
    expect(bucketAddress("s3://outputs/.x/..y/...")).toEqual({ bucket: "outputs", key: ".x/..y/..." });
  });

  it.each([
    ["s3://", '"" is not a bucket name (3 to 63 lower-case letters, digits, dots and hyphens)'],
    ["s3://ab/x", '"ab" is not a bucket name (3 to 63 lower-case letters, digits, dots and hyphens)'],
    ["s3://Outputs/x", '"Outputs" is not a bucket name (3 to 63 lower-case letters, digits, dots and hyphens)'],
    ["s3://outputs:9000/x", '"outputs:9000" is not a bucket name (3 to 63 lower-case letters, digits, dots and hyphens)'],
    ["s3://outputs/x?versionId=1", "it must not have a query (?) or fragment (#)"],
    ["s3://outputs?list-type=2", "it must not have a query (?) or fragment (#)"],
    ["s3://outputs/x#top", "it must not have a query (?) or fragment (#)"],
    ["s3://outputs#top", "it must not have a query (?) or fragment (#)"],
    ["/tmp/outputs", "it must start with s3://"],
    ["backup/s3://someone@outputs/x", "it must start with s3://"],
    ["https://outputs.s3.amazonaws.com/x", "it must start with s3://"],
    ["s3://outputs/../x", '"." and ".." are not allowed in the prefix'],
  ])("%s is refused as InvalidLocation: %s", (location, why) => {
    let thrown: unknown;
    try {
      bucketAddress(location);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OutputSaveError);
    expect((thrown as OutputSaveError).errno).toBe("InvalidLocation");
    expect((thrown as OutputSaveError).message).toBe(`${location} is not a bucket address like s3://bucket/prefix: ${why}`);
  });

  it("a bucket address carrying a user or password is refused without echoing it", () => {
    let thrown: unknown;
    try {
      bucketAddress("s3://AKIAEXAMPLE:hunter2@outputs/x");
    } catch (error) {
      thrown = error;
    }
    expect((thrown as OutputSaveError).message).toMatch(/^s3:\/\/… is not a bucket address like s3:\/\/bucket\/prefix: it must not carry a user or password/);
    expect((thrown as OutputSaveError).message).not.toContain("hunter2");
    expect((thrown as OutputSaveError).folder).not.toContain("hunter2");
    // A user alone, or an empty one, is refused the same way.
    expect(() => bucketAddress("s3://someone@outputs/x")).toThrow(/^s3:\/\/… is not a bucket address/);
    expect(() => bucketAddress("S3://@outputs")).toThrow(/^s3:\/\/… is not a bucket address/);
  });
});
