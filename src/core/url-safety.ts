import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { UnsafeUrlError } from "./errors.js";

export interface UrlPolicy {
  /** Allow http: (only when the provider's own configured base is http, e.g. the sandbox). */
  allowHttp: boolean;
  /** Allow loopback, private and link-local addresses (local set-ups, or MEDIAGATE_ALLOW_PRIVATE_URLS=1). */
  allowPrivate: boolean;
}

export const STRICT_URL_POLICY: UrlPolicy = { allowHttp: false, allowPrivate: false };

/**
 * What a process says at start under MEDIAGATE_ALLOW_PRIVATE_URLS=1 (the
 * README promises a warning): the check that keeps provider-returned URLs and
 * notification addresses off this network is off.
 */
export const PRIVATE_URLS_WARNING =
  "MEDIAGATE_ALLOW_PRIVATE_URLS=1 lifts the URL-safety check: provider-returned URLs and notification addresses may use http and reach loopback, private, link-local and cloud-metadata addresses, so set it only where every provider and receiver is trusted (a local set-up)";

/** Cloud metadata endpoints, refused even when they are not literally private (e.g. by name). */
const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata.goog", "metadata", "metadata.azure.internal", "instance-data"]);

/** Alibaba Cloud's metadata service sits in the shared (CGNAT) block, AWS's IPv6 one in unique local space: named for what they are. */
const METADATA_IPV4 = ipaddr.IPv4.parse("100.100.100.200");
/** AWS's, GCP's and Azure's instance metadata service, inside link-local: named as what it is. */
const LINK_LOCAL_METADATA_IPV4 = ipaddr.IPv4.parse("169.254.169.254");
const METADATA_IPV6 = ipaddr.IPv6.parse("fd00:ec2::254");

/**
 * Why an address in each of ipaddr.js's IPv4 ranges (its names for the IANA
 * IPv4 Special-Purpose Address Registry's blocks) is not public; null where
 * the registry calls the block globally reachable. Its "reserved" holds
 * 192.0.0.0/24 whole (the PCP and TURN anycast addresses the registry calls
 * globally reachable too: no media host or webhook receiver lives there),
 * the documentation blocks, 198.18.0.0/15 benchmarking, the deprecated 6to4
 * relay anycast 192.88.99.0/24 and 240.0.0.0/4.
 */
const IPV4_RANGE_REASONS: Record<string, string | null> = {
  unicast: null,
  unspecified: "unspecified address",
  loopback: "loopback address",
  private: "private address",
  linkLocal: "link-local or cloud metadata address",
  carrierGradeNat: "shared (CGNAT) address",
  broadcast: "multicast or reserved address",
  multicast: "multicast or reserved address",
  reserved: "multicast or reserved address",
  as112: null,
  amt: null,
};

/**
 * The same for ipaddr.js's IPv6 ranges, but for those that carry an IPv4
 * address (ipv6Reason judges those by it). ipaddr.js 2.5 also returns
 * deprecatedSiteLocal, discard, deprecatedOrchid and segmentRouting, which
 * its type declarations leave out. "reserved" is 2001::/23 IETF protocol
 * assignments (with the PCP, TURN and DNS-SD anycast addresses in it) and
 * the documentation blocks 2001:db8::/32 and 3fff::/20.
 */
const IPV6_RANGE_REASONS: Record<string, string | null> = {
  unspecified: "unspecified address",
  loopback: "loopback address",
  linkLocal: "link-local address",
  uniqueLocal: "private (unique local) address",
  // RFC 3879 deprecated site-local addresses but did not make them global.
  deprecatedSiteLocal: "site-local address",
  multicast: "multicast address",
  discard: "discard-only address",
  benchmarking: "benchmarking address",
  deprecatedOrchid: "deprecated ORCHID address",
  segmentRouting: "segment routing (SRv6) address",
  reserved: "reserved address",
  amt: null,
  as112v6: null,
  orchid2: null,
  droneRemoteIdProtocolEntityTags: null,
};

/** A range ipaddr.js may name in a later version: refused until it is given a reason above. */
const UNKNOWN_RANGE_REASON = "special-purpose address";

/** IANA IPv6 Address Space: 2000::/3 is the only global unicast space; the rest outside the special-purpose blocks is reserved. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");
/** RFC 4291 2.5.5.1: the deprecated IPv4-compatible form ::a.b.c.d (:: and ::1 are ranges of their own). */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR("::/96");
/** RFC 8215: never globally reachable, and where it carries an IPv4 address depends on the operator's prefix length. */
const LOCAL_USE_NAT64 = ipaddr.IPv6.parseCIDR("64:ff9b:1::/48");

function ipv4Reason(address: ipaddr.IPv4): string | null {
  if (address.match(METADATA_IPV4, 32) || address.match(LINK_LOCAL_METADATA_IPV4, 32)) return "cloud metadata address";
  const reason = IPV4_RANGE_REASONS[address.range()];
  return reason === undefined ? UNKNOWN_RANGE_REASON : reason;
}

/** The IPv4 address in four bytes of an IPv6 address, inverted when the form obfuscates it (Teredo). */
function ipv4Inside(address: ipaddr.IPv6, firstByte: number, inverted = false): ipaddr.IPv4 {
  const bytes = address.toByteArray().slice(firstByte, firstByte + 4);
  return new ipaddr.IPv4(inverted ? bytes.map((byte) => byte ^ 0xff) : bytes);
}

/** Why an IPv6 address carrying an IPv4 address is not public, judged by the IPv4 address; null when that one is public. */
function carriedReason(ipv4: ipaddr.IPv4, form: string): string | null {
  const reason = ipv4Reason(ipv4);
  return reason === null ? null : `${reason} embedded in ${form} address`;
}

function ipv6Reason(address: ipaddr.IPv6): string | null {
  if (address.match(METADATA_IPV6, 128)) return "cloud metadata address";
  const range = address.range() as string;
  switch (range) {
    // The socket reaches the IPv4 address itself, so it is judged exactly as that address.
    case "ipv4Mapped":
      return ipv4Reason(address.toIPv4Address());
    // RFC 6052: the well-known prefix 64:ff9b::/96 is globally reachable and carries the IPv4 address in its last 32 bits.
    case "rfc6052":
      return address.match(LOCAL_USE_NAT64) ? "local-use NAT64 address" : carriedReason(ipv4Inside(address, 12), "a NAT64");
    // RFC 3056: 2002:AABB:CCDD::/48 is the 6to4 site of a.b.c.d.
    case "6to4":
      return carriedReason(ipv4Inside(address, 2), "a 6to4");
    // RFC 4380: the client's IPv4 address is the last 32 bits, inverted (bits 32-63 are the Teredo server's).
    case "teredo":
      return carriedReason(ipv4Inside(address, 12, true), "a Teredo");
    // RFC 6145 ::ffff:0:a.b.c.d: only ever inside a translator, never a destination.
    case "rfc6145":
      return carriedReason(ipv4Inside(address, 12), "an IPv4-translated") ?? "reserved address";
    case "unicast":
      if (address.match(IPV4_COMPATIBLE)) return carriedReason(ipv4Inside(address, 12), "an IPv4-compatible") ?? "reserved address";
      return address.match(GLOBAL_UNICAST) ? null : "reserved address";
    default: {
      const reason = IPV6_RANGE_REASONS[range];
      return reason === undefined ? UNKNOWN_RANGE_REASON : reason;
    }
  }
}

/**
 * Why an address is not public, or null when it is: an address in any block
 * of the IANA IPv4 and IPv6 Special-Purpose Address Registries that is not
 * globally reachable, multicast, cloud metadata, IPv6 outside 2000::/3, and
 * any IPv6 form carrying an IPv4 address that is not public (IPv4-mapped,
 * -compatible and -translated, NAT64, 6to4, Teredo).
 */
export function nonPublicReason(address: string): string | null {
  // isIP first: ipaddr.js also reads forms no resolver returns ("127.1", "2130706433") and host names are not addresses.
  if (!isIP(address)) return "not an IP address";
  const parsed = ipaddr.parse(address);
  return parsed instanceof ipaddr.IPv4 ? ipv4Reason(parsed) : ipv6Reason(parsed as ipaddr.IPv6);
}

/**
 * True for a cloud metadata address (169.254.169.254, 100.100.100.200,
 * fd00:ec2::254), written plainly or carried inside any IPv6 form: refused
 * even where private addresses are allowed (a local set-up), since no
 * receiver of ours lives there.
 */
export function isMetadataAddress(address: string): boolean {
  return nonPublicReason(address)?.startsWith("cloud metadata address") ?? false;
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
