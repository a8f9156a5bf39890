import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { localFolderOutputs, OutputSaveError, type OutputWriter, outputFolderProblem, rememberingFolderChecks } from "../../src/outputs/local-folder.js";

// The writer remembers each folder's leftovers from its first listing in this process, so every test uses folders
// of its own, made before the writer first looks at them.
let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "mediagate-outputs-"));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const filesIn = (folder: string) => readdirSync(folder).sort();

/** Runs `action` and returns the OutputSaveError it threw (fails the test when it threw anything else, or nothing). */
async function saveErrorOf(action: () => Promise<unknown>): Promise<OutputSaveError> {
  const error = await action().then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(OutputSaveError);
  return error as OutputSaveError;
}

describe("the output folder: prepare", () => {
  it("creates a missing folder with its parents and leaves nothing in it (its write probe is removed)", async () => {
    const folder = join(root, "a", "b", "c");
    await localFolderOutputs.prepare(folder);
    expect(filesIn(folder)).toEqual([]);
  });

  it("a folder under a regular file is refused as ENOTDIR, naming the folder and what is wrong", async () => {
    writeFileSync(join(root, "a-file"), "x");
    const folder = join(root, "a-file", "sub");
    const error = await saveErrorOf(() => localFolderOutputs.prepare(folder));
    expect(error.code).toBe("output_unwritable");
    expect(error.errno).toBe("ENOTDIR");
    expect(error.folder).toBe(folder);
    expect(error.message).toBe(`cannot create the output folder ${folder}: part of the path is a file, not a folder (ENOTDIR)`);
  });

  it("two checks making the same new folder at once both succeed (a level made by the other meanwhile is no error)", async () => {
    const folder = join(root, "a", "b", "c");
    await Promise.all([localFolderOutputs.prepare(folder), localFolderOutputs.prepare(folder)]);
    expect(filesIn(folder)).toEqual([]);
  });

  it("a folder whose name is taken by a regular file is refused as EEXIST: a file of that name is in the way", async () => {
    const folder = join(root, "taken");
    writeFileSync(folder, "x");
    const error = await saveErrorOf(() => localFolderOutputs.prepare(folder));
    expect(error.errno).toBe("EEXIST");
    expect(error.message).toBe(`cannot create the output folder ${folder}: a file of that name is in the way (EEXIST)`);
  });

  // sysfs refuses new entries even to root (EPERM for a folder, EACCES for a file here; EROFS where it is mounted
  // read-only): the one place on this machine where a folder that exists cannot take a file.
  const refusals: Record<string, string> = { EACCES: "permission denied", EPERM: "permission denied", EROFS: "the file system is read-only" };

  it("a folder the system will not create is refused with the system's code, in words, and the system's error as its cause", async () => {
    const error = await saveErrorOf(() => localFolderOutputs.prepare("/sys/mediagate-out"));
    expect(Object.keys(refusals)).toContain(error.errno);
    expect(error.message).toBe(`cannot create the output folder /sys/mediagate-out: ${refusals[error.errno]} (${error.errno})`);
    expect((error.cause as NodeJS.ErrnoException).code).toBe(error.errno);
  });

  it("a folder that exists but cannot take a file is refused by the write probe, before anything is downloaded", async () => {
    const error = await saveErrorOf(() => localFolderOutputs.prepare("/sys/kernel"));
    expect(Object.keys(refusals)).toContain(error.errno);
    expect(error.message).toBe(`cannot write in the output folder /sys/kernel: ${refusals[error.errno]} (${error.errno})`);
  });

  it("removes the write probes a process killed mid-check left (.mediagate-write-check- and 8 hex digits), and nothing else", async () => {
    const folder = join(root, "out");
    mkdirSync(folder);
    const probes = [".mediagate-write-check-0123abcd", ".mediagate-write-check-89abcdef"];
    const kept = [
      ".mediagate-write-check-0123abc",
      ".mediagate-write-check-0123abcdd",
      ".mediagate-write-check-0123ABCD",
      "x.mediagate-write-check-0123abcd",
      ".mediagate-write-check-0123abcd.tmp-89abcdef",
      "fox.png",
    ];
    for (const name of [...probes, ...kept]) writeFileSync(join(folder, name), "x");
    await localFolderOutputs.prepare(folder);
    expect(filesIn(folder)).toEqual([...kept].sort());
  });
});

describe("the output folder: write", () => {
  it("writes the bytes under the name and leaves no temporary file", async () => {
    const folder = join(root, "out");
    mkdirSync(folder);
    const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    await localFolderOutputs.write(join(folder, "fox.png"), bytes);
    expect(readFileSync(join(folder, "fox.png")).equals(bytes)).toBe(true);
    expect(filesIn(folder)).toEqual(["fox.png"]);
  });

  it("replaces an existing file whole", async () => {
    const folder = join(root, "out");
    mkdirSync(folder);
    writeFileSync(join(folder, "fox.png"), "an older, longer file that must not show through");
    await localFolderOutputs.write(join(folder, "fox.png"), Buffer.from("new"));
    expect(readFileSync(join(folder, "fox.png"), "utf8")).toBe("new");
    expect(filesIn(folder)).toEqual(["fox.png"]);
  });

  it("a write into a missing folder is an OutputSaveError naming the file, with the system's own words for a code it has no sentence for", async () => {
    const path = join(root, "missing", "fox.png");
    const error = await saveErrorOf(() => localFolderOutputs.write(path, Buffer.from("x")));
    expect(error.errno).toBe("ENOENT");
    expect(error.folder).toBe(path);
    expect(error.message).toMatch(new RegExp(`^cannot write ${path}: ENOENT: no such file or directory, open '.*fox\\.png\\.tmp-[0-9a-f]{8}' \\(ENOENT\\)$`));
  });

  it("a write whose rename fails (a folder has the file's name) removes its temporary file and leaves the folder as it was", async () => {
    const folder = join(root, "out");
    mkdirSync(join(folder, "fox.png"), { recursive: true });
    const error = await saveErrorOf(() => localFolderOutputs.write(join(folder, "fox.png"), Buffer.from("x")));
    expect(error.errno).toBe("EISDIR");
    expect(filesIn(folder)).toEqual(["fox.png"]);
  });
});

describe("the output folder: removeStale", () => {
  it("removes this stem's temporary files (any output number, any extension chain) and only those", async () => {
    const folder = join(root, "out");
    mkdirSync(folder);
    const stale = ["fox.png.tmp-0123abcd", "fox-2.png.tmp-89abcdef", "fox-12.mp4.tmp-00000000", "fox.png.json.tmp-00ff00ff"];
    const kept = [
      "fox.png",
      "fox.png.tmp-0123abc", // 7 hex digits: not ours
      "fox.png.tmp-0123ABCD", // upper case: not ours
      "fox.png.tmp-0123abcd.bak",
      "fox.tmp-0123abcd", // no extension before .tmp-
      "fox-a.png.tmp-0123abcd", // another stem
      "foxes.png.tmp-0123abcd",
      "a-fox.png.tmp-0123abcd",
      "fox-.png.tmp-0123abcd",
      "fox.PNG.tmp-0123abcd",
    ];
    for (const name of [...stale, ...kept]) writeFileSync(join(folder, name), "x");
    await localFolderOutputs.removeStale(folder, "fox");
    expect(filesIn(folder)).toEqual([...kept].sort());
  });

  it("reads the stem literally: regular-expression characters in it match only themselves", async () => {
    const folder = join(root, "out");
    mkdirSync(folder);
    const stale = ["a.b+(c)$[d]-3f2a1b.png.tmp-0123abcd"];
    const kept = ["aXb+(c)$[d]-3f2a1b.png.tmp-0123abcd", "a.bb(c)$[d]-3f2a1b.png.tmp-0123abcd", "a.b+c$[d]-3f2a1b.png.tmp-0123abcd"];
    for (const name of [...stale, ...kept]) writeFileSync(join(folder, name), "x");
    await localFolderOutputs.removeStale(folder, "a.b+(c)$[d]-3f2a1b");
    expect(filesIn(folder)).toEqual([...kept].sort());
  });

  it("a folder that does not exist is no error (nothing to remove)", async () => {
    await expect(localFolderOutputs.removeStale(join(root, "never-made"), "fox")).resolves.toBeUndefined();
  });

  it("lists each folder once per process: a leftover removed is forgotten, a later one for the same folder is not looked for again", async () => {
    const folder = join(root, "out");
    mkdirSync(folder);
    writeFileSync(join(folder, "fox.png.tmp-0123abcd"), "x");
    await localFolderOutputs.removeStale(folder, "fox");
    expect(filesIn(folder)).toEqual([]);
    // A file that appears later (another process writing now) is not touched: it is not a leftover of a killed one.
    writeFileSync(join(folder, "fox.png.tmp-89abcdef"), "x");
    await localFolderOutputs.removeStale(folder, "fox");
    expect(filesIn(folder)).toEqual(["fox.png.tmp-89abcdef"]);
  });
});

describe("outputFolderProblem", () => {
  it("is null for a usable folder (and makes it)", async () => {
    expect(await outputFolderProblem(join(root, "new"))).toBeNull();
    expect(filesIn(join(root, "new"))).toEqual([]);
  });

  it("is the OutputSaveError for a folder that cannot be made", async () => {
    writeFileSync(join(root, "f"), "x");
    const problem = await outputFolderProblem(join(root, "f", "out"));
    expect(problem).toBeInstanceOf(OutputSaveError);
    expect(problem!.errno).toBe("ENOTDIR");
  });

  it("issue 36, finding 4: a folder under /proc (where Node's recursive mkdir never returns) is refused as not creatable, naming the folder", async () => {
    const problem = await outputFolderProblem("/proc/mediagate-check/out");
    expect(problem).toBeInstanceOf(OutputSaveError);
    expect(problem!.errno).toBe("ENOENT");
    expect(problem!.message).toBe("cannot create the output folder /proc/mediagate-check/out: the file system there does not allow creating folders (ENOENT)");
  });

  it("issue 36, finding 4: a check that never answers (a hung network mount) is reported once its deadline passes, naming the folder", async () => {
    const hung: OutputWriter = { ...localFolderOutputs, prepare: () => new Promise<void>(() => undefined) };
    const problem = await outputFolderProblem(join(root, "hung"), hung, 50);
    expect(problem!.errno).toBe("ETIMEDOUT");
    expect(problem!.message).toBe(`cannot use ${join(root, "hung")}: checking that it can be written took more than 0.05 s`);
  });

  it("makes every missing level of a deep folder, and a folder that exists is used as it is", async () => {
    expect(await outputFolderProblem(join(root, "a", "b", "c"))).toBeNull();
    expect(await outputFolderProblem(join(root, "a", "b", "c"))).toBeNull();
    expect(filesIn(join(root, "a", "b"))).toEqual(["c"]);
  });

  it("lets any other error through: it is a bug, not a folder problem", async () => {
    const broken: OutputWriter = { ...localFolderOutputs, prepare: () => Promise.reject(new TypeError("a bug")) };
    await expect(outputFolderProblem(join(root, "out"), broken)).rejects.toThrow(TypeError);
  });
});

describe("rememberingFolderChecks", () => {
  /** The real writer, counting the folder checks that reach it. */
  function counting(): OutputWriter & { prepared: string[] } {
    const prepared: string[] = [];
    return {
      prepared,
      prepare: async (folder) => {
        prepared.push(folder);
        await localFolderOutputs.prepare(folder);
      },
      write: (path, bytes) => localFolderOutputs.write(path, bytes),
      removeStale: (folder, stem) => localFolderOutputs.removeStale(folder, stem),
    };
  }

  it("checks a folder once within a second (under any spelling of its path), and again from the second on", async () => {
    const inner = counting();
    let now = 1_000_000;
    const writer = rememberingFolderChecks(inner, () => now);
    const folder = join(root, "out");
    await writer.prepare(folder);
    await writer.prepare(`${folder}/../out/`);
    now += 999;
    await writer.prepare(folder);
    expect(inner.prepared).toEqual([folder]);
    now += 1;
    await writer.prepare(folder);
    expect(inner.prepared).toEqual([folder, folder]);
    // Another folder is checked on its own.
    await writer.prepare(join(root, "other"));
    expect(inner.prepared).toHaveLength(3);
  });

  it("a folder whose check failed is checked again at once", async () => {
    const inner = counting();
    const writer = rememberingFolderChecks(inner, () => 5);
    writeFileSync(join(root, "f"), "x");
    await expect(writer.prepare(join(root, "f", "out"))).rejects.toBeInstanceOf(OutputSaveError);
    await expect(writer.prepare(join(root, "f", "out"))).rejects.toBeInstanceOf(OutputSaveError);
    expect(inner.prepared).toHaveLength(2);
  });

  it("a failed write makes the next check of its folder real, at once; a good write does not", async () => {
    const inner = counting();
    const writer = rememberingFolderChecks(inner, () => 5);
    const folder = join(root, "out");
    await writer.prepare(folder);
    await writer.write(join(folder, "fox.png"), Buffer.from("x"));
    await writer.prepare(folder);
    expect(inner.prepared).toHaveLength(1);
    mkdirSync(join(folder, "taken.png"));
    await expect(writer.write(join(folder, "taken.png"), Buffer.from("x"))).rejects.toBeInstanceOf(OutputSaveError);
    await writer.prepare(folder);
    expect(inner.prepared).toHaveLength(2);
    expect(readFileSync(join(folder, "fox.png"), "utf8")).toBe("x");
  });

  it("removeStale goes to the writer it wraps", async () => {
    const folder = join(root, "out");
    mkdirSync(folder);
    writeFileSync(join(folder, "fox.png.tmp-0123abcd"), "x");
    await rememberingFolderChecks(localFolderOutputs, () => 0).removeStale(folder, "fox");
    expect(filesIn(folder)).toEqual([]);
  });
});
