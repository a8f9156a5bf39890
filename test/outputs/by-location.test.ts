import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findOutput, outputsByLocation, readOutput } from "../../src/outputs/by-location.js";
import { OutputReadError } from "../../src/outputs/read-error.js";
import { tempDir } from "../helpers/stores.js";

// The local half of the default writer and of reading saved outputs back (the bucket half is in s3.test.ts, against
// s3rver): real files in a folder of the test's own.
let root: ReturnType<typeof tempDir>;
beforeEach(() => {
  root = tempDir("mediagate-by-location-");
});
afterEach(() => {
  root.remove();
});

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("outputs by location: a local path", () => {
  it("the default writer saves a local location in the local folder: made when missing, written whole, its leftovers removed", async () => {
    const writer = outputsByLocation();
    const folder = join(root.path, "out", "run");
    await writer.prepare(folder);
    expect(readdirSync(folder)).toEqual([]);
    // Leftovers are looked for once per folder, when it is first listed: this folder has one from the start.
    const used = join(root.path, "used");
    mkdirSync(used);
    writeFileSync(join(used, "fox.png.tmp-0123abcd"), "left by a killed process");
    await writer.removeStale(used, "fox");
    expect(readdirSync(used)).toEqual([]);
    await writer.write(join(folder, "fox.png"), Buffer.from("fox"));
    expect(readdirSync(folder)).toEqual(["fox.png"]);
    expect(readFileSync(join(folder, "fox.png"), "utf8")).toBe("fox");
  });

  it("a saved file is found with its size, and streams all its bytes or one inclusive range of them", async () => {
    const path = join(root.path, "fox.png");
    const bytes = Buffer.from("0123456789abcdef");
    writeFileSync(path, bytes);
    const saved = await findOutput(path);
    expect(saved!.size).toBe(16);
    expect(await bytesOf(await saved!.stream())).toEqual(bytes);
    expect((await bytesOf(await saved!.stream({ start: 3, end: 6 }))).toString()).toBe("3456");
    expect(await readOutput(path)).toEqual(bytes);
  });

  it("nothing saved there is null: no such file, or a folder under that name", async () => {
    expect(await findOutput(join(root.path, "never-saved.png"))).toBeNull();
    mkdirSync(join(root.path, "a-folder.png"));
    expect(await findOutput(join(root.path, "a-folder.png"))).toBeNull();
  });

  it("reading a local file that is not there fails with the system's error", async () => {
    await expect(readOutput(join(root.path, "never-saved.png"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("OutputReadError", () => {
  it("is output_unreadable unless told it is output_changed, and keeps the path, the code and the cause", () => {
    const cause = new Error("refused");
    expect(new OutputReadError("s3://outputs/fox.png", "AccessDenied", "cannot read it")).toMatchObject({ code: "output_unreadable", path: "s3://outputs/fox.png", errno: "AccessDenied", message: "cannot read it" });
    expect(new OutputReadError("s3://outputs/fox.png", "AccessDenied", "cannot read it", { cause }).cause).toBe(cause);
    expect(new OutputReadError("s3://outputs/fox.png", "ObjectChanged", "replaced", { code: "output_changed" }).code).toBe("output_changed");
  });
});
