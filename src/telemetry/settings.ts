import { ConfigError } from "../core/errors.js";

/** The OTLP/HTTP encodings mediagate exports traces in (`OTEL_EXPORTER_OTLP_PROTOCOL`). */
export const TRACE_PROTOCOLS = ["http/protobuf", "http/json"] as const;
export type TraceProtocol = (typeof TRACE_PROTOCOLS)[number];

/** What traces are exported with: read from OpenTelemetry's own variables, as its SDK defines them. */
export interface TraceSettings {
  /** Where spans are POSTed: the traces endpoint as given, or the general endpoint with `/v1/traces` appended. */
  url: string;
  protocol: TraceProtocol;
  /** Sent with every export (a backend's API key): secrets, redacted like keys. */
  headers: Record<string, string>;
  serviceName: string;
}

/** OTEL_SERVICE_NAME unset: the resource's `service.name`. */
export const DEFAULT_SERVICE_NAME = "mediagate";
/** The spec's default encoding for OTLP/HTTP (https://opentelemetry.io/docs/specs/otel/protocol/exporter/#specify-protocol). */
const DEFAULT_PROTOCOL: TraceProtocol = "http/protobuf";

/** The variables read, for help text and the README: OpenTelemetry's names, a contract like ours (DESIGN.md). */
export const TRACE_VARIABLES = [
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_PROTOCOL",
  "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
  "OTEL_EXPORTER_OTLP_HEADERS",
  "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
  "OTEL_SERVICE_NAME",
  "OTEL_SDK_DISABLED",
] as const;

type TraceEnvironment = Partial<Record<(typeof TRACE_VARIABLES)[number], string | undefined>>;

/**
 * The trace export this environment asks for, or null when it asks for none
 * (no endpoint set, or `OTEL_SDK_DISABLED=true`): then nothing of OpenTelemetry
 * is loaded. Read when a face starts, before anything is sent: a value that
 * cannot be used is refused in one sentence naming its variable. An empty
 * value is unset, as the SDK's environment specification says.
 */
export function traceSettingsOf(env: TraceEnvironment): TraceSettings | null {
  const value = (name: keyof TraceEnvironment) => {
    const raw = env[name]?.trim();
    return raw ? raw : undefined;
  };
  if (value("OTEL_SDK_DISABLED")?.toLowerCase() === "true") return null;
  const tracesEndpoint = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const endpoint = value("OTEL_EXPORTER_OTLP_ENDPOINT");
  if (tracesEndpoint === undefined && endpoint === undefined) return null;
  // The signal's own endpoint is used as it is; the general one is a base under which each signal has its path.
  const url =
    tracesEndpoint !== undefined
      ? httpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracesEndpoint)
      : `${httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint!).replace(/\/+$/, "")}/v1/traces`;
  const protocolVariable = value("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = value(protocolVariable) ?? DEFAULT_PROTOCOL;
  if (!(TRACE_PROTOCOLS as readonly string[]).includes(protocol)) {
    const grpc = protocol === "grpc" ? " (gRPC is not supported)" : "";
    throw new ConfigError(protocolVariable, `${protocolVariable} is "${printable(protocol)}"${grpc}; mediagate exports traces over OTLP/HTTP: set http/protobuf or http/json`);
  }
  return {
    url,
    protocol: protocol as TraceProtocol,
    // The signal's own headers are added to the general ones, a name in both taking the signal's value.
    headers: { ...headersOf("OTEL_EXPORTER_OTLP_HEADERS", value("OTEL_EXPORTER_OTLP_HEADERS")), ...headersOf("OTEL_EXPORTER_OTLP_TRACES_HEADERS", value("OTEL_EXPORTER_OTLP_TRACES_HEADERS")) },
    serviceName: value("OTEL_SERVICE_NAME") ?? DEFAULT_SERVICE_NAME,
  };
}

function httpUrl(variable: string, text: string): string {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new ConfigError(variable, `${variable} is not an absolute URL; give the collector's address, like http://localhost:4318`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ConfigError(variable, `${variable} must be an http or https URL (OTLP/HTTP), not ${parsed.protocol}`);
  }
  // A password in the address would be shown wherever the address is: the headers variable is where credentials go.
  if (parsed.username || parsed.password) {
    throw new ConfigError(variable, `${variable} must not carry a user or password; send credentials in OTEL_EXPORTER_OTLP_HEADERS`);
  }
  return parsed.toString();
}

/**
 * `key1=value1,key2=value2`, each value percent-decoded (the W3C Baggage
 * format the SDK's environment specification names). A malformed entry is
 * refused, not skipped: a backend's key silently missing would only show as
 * traces that never arrive.
 */
export function headersOf(variable: string, text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (text === undefined) return headers;
  for (const [index, entry] of text.split(",").entries()) {
    if (entry.trim() === "") continue;
    const equals = entry.indexOf("=");
    const name = equals < 0 ? "" : entry.slice(0, equals).trim();
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new ConfigError(variable, `${variable}'s entry ${index + 1} is not name=value (a header name, then =, then its value); entries are separated by commas`);
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(entry.slice(equals + 1).trim());
    } catch {
      throw new ConfigError(variable, `${variable}'s value for ${name} is not valid percent-encoding`);
    }
    headers[name.toLowerCase()] = decoded;
  }
  return headers;
}

/** A value quoted in a message: short, and printable. */
function printable(text: string): string {
  const cut = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return cut.replace(/[^\x20-\x7e]/g, "?");
}
