import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * spec F request: webhook_url is "HTTPS only; private hosts, loopback hosts
 * and cloud metadata hosts are rejected". The sandbox checks the literal host
 * and every address it resolves to (a public name pointing at a private
 * address is refused too), at submit and again before each delivery.
 * Written for the emulator alone, not shared with the client's own check.
 */
export type FHostCategory = "loopback" | "private" | "link-local" | "metadata" | "reserved";

const RANGES: [FHostCategory, string, number, "ipv4" | "ipv6"][] = [
  ["loopback", "127.0.0.0", 8, "ipv4"],
  ["private", "10.0.0.0", 8, "ipv4"],
  ["private", "172.16.0.0", 12, "ipv4"],
  ["private", "192.168.0.0", 16, "ipv4"],
  ["private", "100.64.0.0", 10, "ipv4"],
  ["link-local", "169.254.0.0", 16, "ipv4"],
  ["reserved", "0.0.0.0", 8, "ipv4"],
  ["reserved", "224.0.0.0", 3, "ipv4"],
  ["loopback", "::1", 128, "ipv6"],
  ["reserved", "::", 128, "ipv6"],
  ["private", "fc00::", 7, "ipv6"],
  ["link-local", "fe80::", 10, "ipv6"],
  ["reserved", "ff00::", 8, "ipv6"],
];

/** Cloud metadata services: AWS, GCP, Azure and OpenStack at 169.254.169.254, AWS IPv6, Alibaba. */
const METADATA_ADDRESSES = new Set(["169.254.169.254", "fd00:ec2::254", "100.100.100.200"]);
const METADATA_NAMES = new Set(["metadata", "metadata.google.internal", "metadata.goog", "metadata.azure.internal", "instance-data"]);

const LISTS = new Map<FHostCategory, BlockList>();
for (const [category, network, prefix, family] of RANGES) {
  const list = LISTS.get(category) ?? new BlockList();
  list.addSubnet(network, prefix, family);
  LISTS.set(category, list);
}

/** An IPv4-mapped IPv6 address (`::ffff:7f00:1` or `::ffff:127.0.0.1`) as its IPv4 address. */
function unmapped(address: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return address;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** The category of a non-public address, or null for a public one. */
export function addressCategory(rawAddress: string): FHostCategory | null {
  const address = unmapped(rawAddress.toLowerCase());
  if (METADATA_ADDRESSES.has(address)) return "metadata";
  const family = isIP(address) === 6 ? "ipv6" : "ipv4";
  for (const [category, list] of LISTS) if (list.check(address, family)) return category;
  return null;
}

export type FWebhookCheck = { ok: true; url: URL } | { ok: false; reason: string };

export interface FWebhookPolicy {
  /** The sandbox's documented deviation (option allowLoopbackWebhooks). */
  allowLoopback: boolean;
  resolve?: (host: string) => Promise<string[]>;
}

async function systemResolve(host: string): Promise<string[]> {
  return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
}

export async function checkWebhookUrl(raw: string, policy: FWebhookPolicy): Promise<FWebhookCheck> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not an absolute URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return { ok: false, reason: "https only" };
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  if (METADATA_NAMES.has(host)) return { ok: false, reason: "cloud metadata host" };

  let addresses: string[];
  if (host === "localhost" || host.endsWith(".localhost")) addresses = ["127.0.0.1"];
  else if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await (policy.resolve ?? systemResolve)(host);
    } catch {
      return { ok: false, reason: `host ${host} does not resolve` };
    }
    if (addresses.length === 0) return { ok: false, reason: `host ${host} does not resolve` };
  }

  const categories = addresses.map(addressCategory);
  const allLoopback = categories.every((category) => category === "loopback");
  for (const [index, category] of categories.entries()) {
    if (category === null || (category === "loopback" && policy.allowLoopback)) continue;
    const literal = isIP(host) ? "" : ` (resolves to ${addresses[index]})`;
    return { ok: false, reason: `${category} host${literal}` };
  }
  // spec F: HTTPS only. The loopback deviation also admits plain http, only towards loopback.
  if (url.protocol !== "https:" && !(policy.allowLoopback && allLoopback)) return { ok: false, reason: "https only" };
  return { ok: true, url };
}
