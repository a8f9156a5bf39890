import type { SharedV3Warning } from "@ai-sdk/provider";

/** The AI SDK adds its own `user-agent` to every call: not the caller's, so not warned about. */
const SDK_HEADERS: ReadonlySet<string> = new Set(["user-agent"]);

/**
 * A call's HTTP headers are not sent: the engine makes the provider requests
 * itself, from the durable queue, maybe later or from another process, with
 * the configured credentials. Headers do not change what is made, so a
 * warning (not a refusal) names the ones left out.
 */
export function headerWarnings(headers: Record<string, string | undefined> | undefined): SharedV3Warning[] {
  const given = Object.entries(headers ?? {})
    .filter(([name, value]) => value !== undefined && !SDK_HEADERS.has(name.toLowerCase()))
    .map(([name]) => name);
  if (given.length === 0) return [];
  return [
    {
      type: "unsupported",
      feature: "headers",
      details: `not sent: ${given.join(", ")}; mediagate's engine sends the provider requests itself from its durable queue, with the configured credentials`,
    },
  ];
}
