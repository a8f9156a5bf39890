import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/core/errors.js";
import { newJobTrace, parseTraceparent, traceparentOf } from "../../src/core/trace-context.js";
import { headersOf, traceSettingsOf } from "../../src/telemetry/settings.js";

/** The ConfigError a call throws, for its variable and sentence. */
function refusal(call: () => unknown): ConfigError {
  try {
    call();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("OpenTelemetry's variables (traceSettingsOf)", () => {
  it("no endpoint: no export at all (null), whatever else is set", () => {
    expect(traceSettingsOf({})).toBeNull();
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: "gate", OTEL_EXPORTER_OTLP_HEADERS: "a=b" })).toBeNull();
    // The SDK's environment spec: an empty value is unset.
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "  " })).toBeNull();
  });

  it("OTEL_SDK_DISABLED=true turns export off even with an endpoint", () => {
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })).toBeNull();
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "false" })).not.toBeNull();
  });

  it("OTEL_EXPORTER_OTLP_ENDPOINT is a base: traces go to /v1/traces under it, with or without a trailing slash or a path", () => {
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })!.url).toBe("http://collector:4318/v1/traces");
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otlp.example/" })!.url).toBe("https://otlp.example/v1/traces");
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otlp.example/tenant/7" })!.url).toBe("https://otlp.example/tenant/7/v1/traces");
  });

  it("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is, and wins over the general endpoint", () => {
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/custom/traces" })!.url).toBe("http://collector:4318/custom/traces");
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/t" })!.url).toBe("http://b:4318/t");
  });

  it("protocol: http/protobuf by default (the spec's), http/json when asked; the traces variable wins", () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(traceSettingsOf(endpoint)!.protocol).toBe("http/protobuf");
    expect(traceSettingsOf({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })!.protocol).toBe("http/json");
    expect(traceSettingsOf({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" })!.protocol).toBe("http/protobuf");
  });

  it("a protocol that is not OTLP/HTTP is refused in one sentence naming the variable (grpc says it is not supported)", () => {
    const grpc = refusal(() => traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }));
    expect(grpc.variable).toBe("OTEL_EXPORTER_OTLP_PROTOCOL");
    expect(grpc.message).toBe('OTEL_EXPORTER_OTLP_PROTOCOL is "grpc" (gRPC is not supported); mediagate exports traces over OTLP/HTTP: set http/protobuf or http/json');
    const typo = refusal(() => traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/xml" }));
    expect(typo.variable).toBe("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
  });

  it("an endpoint that is not an http(s) URL, or carries a password, is refused naming its variable", () => {
    expect(refusal(() => traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" })).variable).toBe("OTEL_EXPORTER_OTLP_ENDPOINT");
    expect(refusal(() => traceSettingsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" })).variable).toBe("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    expect(refusal(() => traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://collector" })).message).toContain("must be an http or https URL");
    const password = refusal(() => traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://user:hunter2@collector" }));
    expect(password.message).not.toContain("hunter2");
  });

  it("headers: name=value pairs separated by commas, values percent-decoded, names lower-cased; the traces variable's win", () => {
    expect(headersOf("V", "api-key=abc%3D%3D, X-Team = media ,")).toEqual({ "api-key": "abc==", "x-team": "media" });
    const settings = traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "a=1,b=2", OTEL_EXPORTER_OTLP_TRACES_HEADERS: "b=3" })!;
    expect(settings.headers).toEqual({ a: "1", b: "3" });
  });

  it("a malformed header entry is refused naming the variable and the entry, never quoting its value", () => {
    const missing = refusal(() => traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "a=1,secretvalue" }));
    expect(missing.variable).toBe("OTEL_EXPORTER_OTLP_HEADERS");
    expect(missing.message).toContain("entry 2");
    expect(missing.message).not.toContain("secretvalue");
    const encoding = refusal(() => traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_TRACES_HEADERS: "key=%E0%A4%A" }));
    expect(encoding.variable).toBe("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
  });

  it("OTEL_SERVICE_NAME names the service; mediagate by default", () => {
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c" })!.serviceName).toBe("mediagate");
    expect(traceSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_SERVICE_NAME: "render-farm" })!.serviceName).toBe("render-farm");
  });
});

describe("W3C traceparent", () => {
  const header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  it("a valid header is read: trace id, span id, sampled flag", () => {
    expect(parseTraceparent(header)).toEqual({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled: true });
    expect(parseTraceparent(header.replace(/01$/, "00"))!.sampled).toBe(false);
    // A later version may append fields.
    expect(parseTraceparent(`cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra`)).not.toBeNull();
  });

  it("an invalid header is ignored (null), as the spec says, never an error: upper case, zero ids, version ff, extra fields on 00", () => {
    for (const bad of [undefined, "", "garbage", header.toUpperCase(), "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", header.replace(/^00/, "ff"), `${header}-extra`]) {
      expect(parseTraceparent(bad)).toBeNull();
    }
  });

  it("a job joins the caller's sampled trace as a child of its span; without one it starts a trace; a caller's 'not sampled' is obeyed", () => {
    const joined = newJobTrace(parseTraceparent(header))!;
    expect(joined.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(joined.parentSpanId).toBe("00f067aa0ba902b7");
    expect(joined.spanId).toMatch(/^[0-9a-f]{16}$/);
    const root = newJobTrace(null)!;
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.parentSpanId).toBeNull();
    expect(newJobTrace(parseTraceparent(header.replace(/01$/, "00")))).toBeNull();
    expect(traceparentOf(joined)).toBe(`00-${joined.traceId}-${joined.spanId}-01`);
  });
});
