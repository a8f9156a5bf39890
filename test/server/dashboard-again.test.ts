import { describe, expect, it } from "vitest";
import { LOCAL_CALLER } from "../../src/app/caller.js";
import { INPUT_FILES_FACT } from "../../src/app/request-view.js";
import type { Job } from "../../src/core/job.js";
import { againPanel, curlOf } from "../../src/server/dashboard/job-view.js";
import type { Session } from "../../src/server/dashboard/session.js";

/** The job page's "run again" and "copy as curl" (issue 37, part 4); the browser test runs both for real. */

const job = { id: "job_1", ref: "r", provider: "d", model: "gen-2-pro", operation: null, body: { prompt: "it's 'quoted'", width: 512 }, facts: {}, route: null } as unknown as Job;
const session = (readOnly: boolean) => ({ caller: { ...LOCAL_CALLER, readOnly }, via: "local", formToken: "ft" }) as unknown as Session;

describe("run again and copy as curl", () => {
  it("the curl command posts the job's native request to the API, quoted for a POSIX shell, the token read from the environment", () => {
    expect(curlOf(job, "https://mg.example/")).toBe(
      [
        "curl -sS -X POST 'https://mg.example/v1/jobs' \\",
        '  -H "Authorization: Bearer $MEDIAGATE_TOKEN" \\',
        "  -H 'Content-Type: application/json' \\",
        `  --data '{"provider":"d","model":"gen-2-pro","input":{"prompt":"it'\\''s '\\''quoted'\\''","width":512}}'`,
      ].join("\n"),
    );
    expect(curlOf({ ...job, operation: "edit" } as Job, "http://127.0.0.1:8080")).toContain('"operation":"edit"');
  });

  it("a read-only session gets the curl command but no Run again; a job that carried local files gets neither, and says why", () => {
    expect(againPanel(job, session(false), "http://h").text).toContain("Run again");
    const readOnly = againPanel(job, session(true), "http://h").text;
    expect(readOnly).not.toContain("Run again");
    expect(readOnly).toContain("Copy as curl");
    const withFiles = againPanel({ ...job, facts: { [INPUT_FILES_FACT]: [{ field: "images[0]", name: "a.png", type: "image/png", bytes: 4, sha256: "ab" }] } } as Job, session(false), "http://h").text;
    expect(withFiles).toContain("This request carried local files");
    expect(withFiles).not.toContain("curl");
  });
});
