import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/engine/logger.js";

/** A logger writing into an array of parsed lines. */
function capture(options: { level?: string; secrets?: string[] } = {}) {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const log = createLogger({ ...(options.level ? { level: options.level } : {}), secrets: () => options.secrets ?? [], destination });
  return { log, lines };
}

describe("the engine's logger never writes a credential", () => {
  it("credential headers and fields are censored by name, at the top level and one level down", () => {
    const { log, lines } = capture({ level: "info" });
    log.info(
      {
        request: { headers: { authorization: "Bearer a", "x-key": "d", "x-api-key": "f", "api-key": "c", accept: "application/json" } },
        apiKey: "k1",
        token: "t1",
        clientSecret: "s1",
        provider: { apiKey: "k2", token: "t2", clientSecret: "s2", name: "e" },
      },
      "calling",
    );
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line).toMatchObject({
      msg: "calling",
      request: { headers: { authorization: "[redacted]", "x-key": "[redacted]", "x-api-key": "[redacted]", "api-key": "[redacted]", accept: "application/json" } },
      apiKey: "[redacted]",
      token: "[redacted]",
      clientSecret: "[redacted]",
      provider: { apiKey: "[redacted]", token: "[redacted]", clientSecret: "[redacted]", name: "e" },
    });
  });

  it("a configured secret is removed from every line, in whatever field or message it hides", () => {
    const { log, lines } = capture({ level: "info", secrets: ["sk-live-123456"] });
    log.warn({ err: "refused: key sk-live-123456 is not valid", nested: { text: "x sk-live-123456 y" } }, "E said sk-live-123456 is wrong");
    expect(JSON.stringify(lines)).not.toContain("sk-live-123456");
    expect(lines[0]!.msg).toMatch(/^E said .+ is wrong$/);
  });

  it("writes warnings and errors by default, not information", () => {
    const { log, lines } = capture();
    log.info("quiet");
    log.warn("loud");
    log.error("louder");
    expect(lines.map((line) => line.msg)).toEqual(["loud", "louder"]);
  });
});
