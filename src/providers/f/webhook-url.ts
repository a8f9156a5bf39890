import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { InputError, UnsafeUrlError } from "../../core/errors.js";
import { displayUrl } from "../../core/redact.js";
import { assertSafeUrl, isMetadataAddress, nonPublicReason, type UrlPolicy } from "../../core/url-safety.js";

/** Resolves a host name to its addresses. */
export type ResolveHost = (host: string) => Promise<string[]>;

/** Cloud metadata services by name: refused even when the URL policy is relaxed for a local set-up (their addresses: `isMetadataAddress`). */
const METADATA_NAMES = new Set(["metadata", "metadata.google.internal", "metadata.goog", "metadata.azure.internal", "instance-data"]);

const ALLOWED = "an https URL on a public host (set MEDIAGATE_PUBLIC_URL to the public https address of `mediagate serve`)";

async function systemResolve(host: string): Promise<string[]> {
  return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  } catch {
    return null; // assertSafeUrl reports the unparsable URL
  }
}

/** Why the literal host is refused before any resolution, or null. */
function literalReason(host: string, policy: UrlPolicy): string | null {
  if (METADATA_NAMES.has(host)) return "cloud metadata host";
  if (!isIP(host)) return null;
  if (isMetadataAddress(host)) return "cloud metadata address";
  if (policy.allowPrivate) return null;
  const reason = nonPublicReason(host);
  return reason ? `${reason} (${host})` : null;
}

/**
 * spec F request: webhook_url is "HTTPS only; private hosts, loopback hosts
 * and cloud metadata hosts are rejected". Checked before the submit is sent,
 * by literal address and after DNS resolution (DESIGN "URL safety"); the
 * provider's URL policy relaxes http and private hosts for local set-ups (the
 * sandbox), never metadata hosts. Throws InputError on `webhook_url`: nothing
 * was sent, so the job fails cleanly instead of becoming an unknown submission.
 */
export async function checkWebhookUrl(url: string, policy: UrlPolicy, resolveHost: ResolveHost = systemResolve): Promise<string> {
  const refuse = (reason: string) => new InputError("webhook_url", `refused URL ${displayUrl(url)}: ${reason}`, ALLOWED);
  const host = hostOf(url);
  const literal = host === null ? null : literalReason(host, policy);
  if (literal) throw refuse(literal);
  // Resolved once here: a name resolving to a metadata address (in whatever form) is refused whatever the policy.
  let resolved: string[] | null = null;
  if (host !== null && !isIP(host) && host !== "localhost" && !host.endsWith(".localhost")) {
    try {
      resolved = await resolveHost(host);
    } catch {
      resolved = null; // reported by assertSafeUrl under a strict policy; left to the provider under a relaxed one
    }
    const metadata = resolved?.find((address) => isMetadataAddress(address));
    if (metadata) throw refuse(`${host} resolves to a cloud metadata address (${metadata})`);
  }
  try {
    await assertSafeUrl(url, policy, async () => {
      if (resolved === null || resolved.length === 0) throw new Error("does not resolve");
      return resolved;
    });
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw new InputError("webhook_url", error.message, ALLOWED);
    throw error;
  }
  return url;
}
