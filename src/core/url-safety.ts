import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { UnsafeUrlError } from "./errors.js";

export interface UrlPolicy {
  /** Allow http: (only when the provider's own configured base is http, e.g. the sandbox). */
  allowHttp: boolean;
  /** Allow loopback, private and link-local addresses (local set-ups, or MEDIAGATE_ALLOW_PRIVATE_URLS=1). */
  allowPrivate: boolean;
}

export const STRICT_URL_POLICY: UrlPolicy = { allowHttp: false, allowPrivate: false };

/** Cloud metadata endpoints, refused even when they are not literally private (e.g. by name). */
const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata.goog", "metadata", "metadata.azure.internal", "instance-data"]);

function ipv4ToInt(address: string): number {
  return address.split(".").reduce((acc, part) => (acc << 8) + Number(part), 0) >>> 0;
}

function inV4Range(address: string, base: string, bits: number): boolean {
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return (ipv4ToInt(address) & mask) === (ipv4ToInt(base) & mask);
}

/** Why an address is not public, or null when it is. Covers loopback, private, link-local, CGNAT, metadata, unspecified. */
export function nonPublicReason(address: string): string | null {
  const family = isIP(address);
  if (family === 4) {
    if (inV4Range(address, "127.0.0.0", 8)) return "loopback address";
    if (inV4Range(address, "10.0.0.0", 8) || inV4Range(address, "172.16.0.0", 12) || inV4Range(address, "192.168.0.0", 16))
      return "private address";
    if (inV4Range(address, "169.254.0.0", 16)) return "link-local or cloud metadata address";
    if (address === "100.100.100.200") return "cloud metadata address";
    if (inV4Range(address, "100.64.0.0", 10)) return "shared (CGNAT) address";
    if (inV4Range(address, "0.0.0.0", 8)) return "unspecified address";
    if (inV4Range(address, "224.0.0.0", 4) || inV4Range(address, "240.0.0.0", 4)) return "multicast or reserved address";
    return null;
  }
  if (family === 6) {
    const lower = address.toLowerCase();
    if (lower === "::1") return "loopback address";
    if (lower === "::") return "unspecified address";
    const mapped = lower.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/);
    if (mapped?.[1]) return nonPublicReason(mapped[1]);
    // The URL parser writes IPv4-mapped addresses in hex ([::ffff:127.0.0.1] becomes [::ffff:7f00:1]).
    const mappedHex = lower.match(/^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/);
    if (mappedHex?.[1] && mappedHex[2]) {
      const high = Number.parseInt(mappedHex[1], 16);
      const low = Number.parseInt(mappedHex[2], 16);
      return nonPublicReason(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
    }
    if (/^f[cd]/.test(lower)) return "private (unique local) address";
    if (/^fe[89ab]/.test(lower)) return "link-local address";
    if (lower.startsWith("fd00:ec2::254")) return "cloud metadata address";
    if (/^ff/.test(lower)) return "multicast address";
    return null;
  }
  return "not an IP address";
}

/**
 * Checks a URL a provider handed back (or one we are about to send): https
 * only, and no loopback, private, link-local or metadata host, by literal
 * address and after DNS resolution. Throws UnsafeUrlError.
 */
export async function assertSafeUrl(
  url: string,
  policy: UrlPolicy,
  resolve: (host: string) => Promise<string[]> = async (host) =>
    (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address),
): Promise<URL> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsafeUrlError(url, "not a valid absolute URL");
  }
  if (parsed.protocol !== "https:" && !(policy.allowHttp && parsed.protocol === "http:")) {
    throw new UnsafeUrlError(url, `scheme ${parsed.protocol} is not allowed; https only`);
  }
  if (parsed.username || parsed.password) throw new UnsafeUrlError(url, "credentials in a URL are not allowed");
  if (policy.allowPrivate) return parsed;
  const host = parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  if (METADATA_HOSTS.has(host)) throw new UnsafeUrlError(url, "cloud metadata host");
  if (host === "localhost" || host.endsWith(".localhost")) throw new UnsafeUrlError(url, "loopback host");
  const addresses = isIP(host) ? [host] : await resolve(host).catch(() => {
    throw new UnsafeUrlError(url, `host ${host} does not resolve`);
  });
  for (const address of addresses) {
    const reason = nonPublicReason(address);
    if (reason) throw new UnsafeUrlError(url, `${host} resolves to a ${reason} (${address})`);
  }
  return parsed;
}

/** The policy for URLs a provider returns: relaxed only when its configured base is itself http or private. */
export async function policyForBase(baseUrl: string, allowPrivateEverywhere: boolean): Promise<UrlPolicy> {
  if (allowPrivateEverywhere) return { allowHttp: true, allowPrivate: true };
  const base = new URL(baseUrl);
  const allowHttp = base.protocol === "http:";
  const host = base.hostname.replace(/^\[|\]$/g, "");
  let allowPrivate = host === "localhost";
  if (!allowPrivate) {
    const addresses = isIP(host) ? [host] : await lookup(host, { all: true }).then((r) => r.map((e) => e.address)).catch(() => []);
    allowPrivate = addresses.some((address) => nonPublicReason(address) !== null);
  }
  return { allowHttp, allowPrivate };
}
