import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { parseBatchFile } from "../../src/cli/batch-file.js";
import { InputError } from "../../src/core/errors.js";
import { firstUnprintable } from "../../src/core/printable.js";
import { refProblem } from "../../src/core/ref.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import { anyValue, promptText, RUNS } from "../helpers/properties.js";

const folder = mkdtempSync(join(tmpdir(), "mediagate-batch-property-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const pngFile = join(folder, "reference.png");
writeFileSync(pngFile, renderPng(16, 16, "reference", 1));
const textFile = join(folder, "notes.txt");
writeFileSync(textFile, "not an image\n");

/** Refs: plausible ones (often repeated, to meet the uniqueness rule), and ones a terminal would act on. */
const ref = fc.oneof(
  fc.constantFrom("job-1", "job-2", "job-3", "lighthouse", "東京", "rocket 🚀"),
  fc.string({ minLength: 1, maxLength: 12 }),
  fc.constantFrom("", "  ", "a\u001b]0;pwned\u0007", "two\nlines", "tab\there", "x".repeat(201), "rtl\u202eevil"),
);

/** A batch line as a JSON object: right keys with any values, sometimes an unknown key, sometimes images. */
const jsonLine = fc
  .record(
    {
      ref: fc.oneof(ref, anyValue),
      provider: fc.oneof(fc.constantFrom("a", "b", "c", "d", "e", "f"), fc.constantFrom("g", "D", ""), anyValue),
      model: fc.oneof(fc.constantFrom("gen-2-pro", "v6"), anyValue),
      operation: fc.oneof(fc.constantFrom("generate"), anyValue),
      input: fc.oneof(fc.record({ prompt: promptText }), fc.constant({}), anyValue),
      images: fc.oneof(fc.constant([pngFile]), fc.constant([textFile]), fc.constant([join(folder, "missing.png")]), fc.constant([join(folder, "gone\u001b[2J.png")]), fc.constant(["https://images.example/a.png"]), anyValue),
      "\u001b[2Jextra": fc.constant(1),
    },
    { requiredKeys: [] },
  )
  .map((object) => JSON.stringify(object));

/** A line that is a job, but for its ref, which may repeat an earlier line's. */
const jobLine = fc
  .record({ ref: fc.constantFrom("job-1", "job-2", "job-3"), provider: fc.constantFrom("c", "d"), model: fc.constantFrom("gen-2-pro", "v6"), input: fc.record({ prompt: promptText }) })
  .map((object) => JSON.stringify(object));

/** Any line: a job, a JSON object, any JSON value, blank or comment lines, and raw text (no line breaks: those make lines). */
const line = fc.oneof(
  { weight: 3, arbitrary: jobLine },
  { weight: 5, arbitrary: jsonLine },
  { weight: 1, arbitrary: anyValue.map((value) => JSON.stringify(value) ?? "") },
  { weight: 1, arbitrary: fc.constantFrom("", "   ", "# a comment", "\t# indented comment", "{", "not json", "[]", "null") },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 30 }).map((text) => text.replace(/[\r\n]/g, " ")) },
);

/** Lines parseBatchFile reads (not blank, not a comment), by 1-based number. */
function countedLines(lines: readonly string[]): number[] {
  return lines.flatMap((text, index) => (text.trim() && !text.trim().startsWith("#") ? [index + 1] : []));
}

let fileNumber = 0;

describe("batch file parser, property-based", () => {
  it("batch property: every line that is not blank or a comment is either a job or a problem naming its line, never both; problems are printable", () => {
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 12 }), fc.constantFrom("\n", "\r\n"), (lines, separator) => {
        const file = join(folder, `batch-${fileNumber++}.jsonl`);
        writeFileSync(file, lines.join(separator));
        const counted = countedLines(lines);
        if (counted.length === 0) {
          // A file with no line to read says so, naming the file.
          expect(() => parseBatchFile(file)).toThrow(InputError);
          return;
        }
        const { lines: jobs, problems } = parseBatchFile(file);
        const problemLines = new Set(problems.map((problem) => Number(/^line (\d+): /.exec(problem)?.[1])));
        for (const problem of problems) {
          expect(problem, "a problem names its line").toMatch(/^line \d+: /);
          expect(firstUnprintable(problem), `problem quoted raw: ${JSON.stringify(problem)}`).toBeNull();
        }
        const jobLines = new Set(jobs.map((job) => job.line));
        for (const number of counted) {
          expect(jobLines.has(number) !== problemLines.has(number), `line ${number} (${JSON.stringify(lines[number - 1])}) must be a job or a problem, not both or neither`).toBe(true);
        }
        for (const number of [...jobLines, ...problemLines]) expect(counted).toContain(number);
        // Every job's ref passes the ref rule, and refs are unique in a file.
        for (const job of jobs) expect(refProblem(job.ref)).toBeNull();
        expect(new Set(jobs.map((job) => job.ref)).size).toBe(jobs.length);
      }),
      RUNS,
    );
  });
});
