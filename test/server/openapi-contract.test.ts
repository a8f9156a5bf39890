import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createRuntime } from "../../src/app/runtime.js";
import { createLogger } from "../../src/engine/logger.js";
import { buildServer } from "../../src/server/app.js";
import { tempDir } from "../helpers/stores.js";

/**
 * The REST API's contract: `openapi.json` at the root of the repository is
 * the document `mediagate serve` answers at `/openapi.json`, word for word.
 * Outside tools (client generators, reviewers of a change) read the file; a
 * route, parameter, answer or description changed without it fails here.
 * `npm run openapi` writes the file from the server after a deliberate change.
 */

const FILE = join(import.meta.dirname, "..", "..", "openapi.json");
const folder = tempDir();
afterAll(() => folder.remove());

describe("the OpenAPI document served is the one in the repository", () => {
  it("GET /openapi.json answers openapi.json exactly", async () => {
    const runtime = createRuntime({ env: { MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`, MEDIAGATE_OUTPUT_DIR: join(folder.path, "out") } });
    try {
      const store = await runtime.store();
      const log = createLogger({ level: "silent", secrets: runtime.secrets });
      const app = await buildServer({ store, engine: await runtime.engine(), providers: runtime.providers, log, now: () => Date.now() }, { runtime, log });
      try {
        const answer = await app.inject({ method: "GET", url: "/openapi.json" });
        expect(answer.statusCode).toBe(200);
        const served = answer.json();
        if (process.env.MEDIAGATE_WRITE_OPENAPI === "1") writeFileSync(FILE, `${JSON.stringify(served, null, 2)}\n`);
        expect(served, "the served document differs from openapi.json: if the change is meant, run npm run openapi and commit the file").toEqual(JSON.parse(readFileSync(FILE, "utf8")));
      } finally {
        await app.close();
      }
    } finally {
      await runtime.close();
    }
  });
});
