import ipaddr from "ipaddr.js";
import { describe, expect, it } from "vitest";
import { nonPublicReason } from "../../src/core/url-safety.js";

/** The registry's "Globally Reachable" column; "n/a" where the registry leaves it blank (tunnels, deprecated blocks). */
type GloballyReachable = boolean | "n/a";

interface RegistryEntry {
  block: string;
  name: string;
  globallyReachable: GloballyReachable;
}

// IANA IPv4 Special-Purpose Address Registry (iana-ipv4-special-registry), every entry, in registry order.
const IPV4_SPECIAL_PURPOSE: RegistryEntry[] = [
  { block: "0.0.0.0/8", name: '"This network" (RFC 791)', globallyReachable: false },
  { block: "0.0.0.0/32", name: '"This host on this network" (RFC 1122)', globallyReachable: false },
  { block: "10.0.0.0/8", name: "Private-Use (RFC 1918)", globallyReachable: false },
  { block: "100.64.0.0/10", name: "Shared Address Space (RFC 6598)", globallyReachable: false },
  { block: "127.0.0.0/8", name: "Loopback (RFC 1122)", globallyReachable: false },
  { block: "169.254.0.0/16", name: "Link Local (RFC 3927)", globallyReachable: false },
  { block: "172.16.0.0/12", name: "Private-Use (RFC 1918)", globallyReachable: false },
  { block: "192.0.0.0/24", name: "IETF Protocol Assignments (RFC 6890)", globallyReachable: false },
  { block: "192.0.0.0/29", name: "IPv4 Service Continuity Prefix (RFC 7335)", globallyReachable: false },
  { block: "192.0.0.8/32", name: "IPv4 dummy address (RFC 7600)", globallyReachable: false },
  { block: "192.0.0.9/32", name: "Port Control Protocol Anycast (RFC 7723)", globallyReachable: true },
  { block: "192.0.0.10/32", name: "Traversal Using Relays around NAT Anycast (RFC 8155)", globallyReachable: true },
  { block: "192.0.0.170/32", name: "NAT64/DNS64 Discovery (RFC 8880)", globallyReachable: false },
  { block: "192.0.0.171/32", name: "NAT64/DNS64 Discovery (RFC 8880)", globallyReachable: false },
  { block: "192.0.2.0/24", name: "Documentation (TEST-NET-1) (RFC 5737)", globallyReachable: false },
  { block: "192.31.196.0/24", name: "AS112-v4 (RFC 7535)", globallyReachable: true },
  { block: "192.52.193.0/24", name: "AMT (RFC 7450)", globallyReachable: true },
  { block: "192.88.99.0/24", name: "Deprecated (6to4 Relay Anycast) (RFC 7526)", globallyReachable: "n/a" },
  { block: "192.88.99.2/32", name: "6a44-relay anycast address (RFC 6751)", globallyReachable: false },
  { block: "192.168.0.0/16", name: "Private-Use (RFC 1918)", globallyReachable: false },
  { block: "192.175.48.0/24", name: "Direct Delegation AS112 Service (RFC 7534)", globallyReachable: true },
  { block: "198.18.0.0/15", name: "Benchmarking (RFC 2544)", globallyReachable: false },
  { block: "198.51.100.0/24", name: "Documentation (TEST-NET-2) (RFC 5737)", globallyReachable: false },
  { block: "203.0.113.0/24", name: "Documentation (TEST-NET-3) (RFC 5737)", globallyReachable: false },
  { block: "240.0.0.0/4", name: "Reserved (RFC 1112)", globallyReachable: false },
  { block: "255.255.255.255/32", name: "Limited Broadcast (RFC 8190, RFC 919)", globallyReachable: false },
];

// IANA IPv6 Special-Purpose Address Registry (iana-ipv6-special-registry), every entry, in registry order.
const IPV6_SPECIAL_PURPOSE: RegistryEntry[] = [
  { block: "::1/128", name: "Loopback Address (RFC 4291)", globallyReachable: false },
  { block: "::/128", name: "Unspecified Address (RFC 4291)", globallyReachable: false },
  { block: "::ffff:0:0/96", name: "IPv4-mapped Address (RFC 4291)", globallyReachable: false },
  { block: "64:ff9b::/96", name: "IPv4-IPv6 Translat. (RFC 6052)", globallyReachable: true },
  { block: "64:ff9b:1::/48", name: "IPv4-IPv6 Translat. (RFC 8215)", globallyReachable: false },
  { block: "100::/64", name: "Discard-Only Address Block (RFC 6666)", globallyReachable: false },
  { block: "100:0:0:1::/64", name: "Dummy IPv6 Prefix (RFC 9780)", globallyReachable: false },
  { block: "2001::/23", name: "IETF Protocol Assignments (RFC 2928)", globallyReachable: false },
  { block: "2001::/32", name: "TEREDO (RFC 4380, RFC 8190)", globallyReachable: "n/a" },
  { block: "2001:1::1/128", name: "Port Control Protocol Anycast (RFC 7723)", globallyReachable: true },
  { block: "2001:1::2/128", name: "Traversal Using Relays around NAT Anycast (RFC 8155)", globallyReachable: true },
  { block: "2001:1::3/128", name: "DNS-SD Service Registration Protocol Anycast (RFC 9665)", globallyReachable: true },
  { block: "2001:2::/48", name: "Benchmarking (RFC 5180)", globallyReachable: false },
  { block: "2001:3::/32", name: "AMT (RFC 7450)", globallyReachable: true },
  { block: "2001:4:112::/48", name: "AS112-v6 (RFC 7535)", globallyReachable: true },
  { block: "2001:10::/28", name: "Deprecated (previously ORCHID) (RFC 4843)", globallyReachable: "n/a" },
  { block: "2001:20::/28", name: "ORCHIDv2 (RFC 7343)", globallyReachable: true },
  { block: "2001:30::/28", name: "Drone Remote ID Protocol Entity Tags (DETs) Prefix (RFC 9374)", globallyReachable: true },
  { block: "2001:db8::/32", name: "Documentation (RFC 3849)", globallyReachable: false },
  { block: "2002::/16", name: "6to4 (RFC 3056)", globallyReachable: "n/a" },
  { block: "2620:4f:8000::/48", name: "Direct Delegation AS112 Service (RFC 7534)", globallyReachable: true },
  { block: "3fff::/20", name: "Documentation (RFC 9637)", globallyReachable: false },
  { block: "5f00::/16", name: "Segment Routing (SRv6) SIDs (RFC 9602)", globallyReachable: false },
  { block: "fc00::/7", name: "Unique-Local (RFC 4193, RFC 8190)", globallyReachable: false },
  { block: "fe80::/10", name: "Link-Local Unicast (RFC 4291)", globallyReachable: false },
];

/**
 * Globally reachable entries that are refused all the same: ipaddr.js folds
 * these single anycast addresses into the IETF Protocol Assignments block
 * around them, and no media host or webhook receiver lives at a PCP, TURN or
 * DNS-SD anycast address.
 */
const REFUSED_THOUGH_GLOBALLY_REACHABLE = new Set(["192.0.0.9/32", "192.0.0.10/32", "2001:1::1/128", "2001:1::2/128", "2001:1::3/128"]);

/** Globally reachable, but an IPv4 address behind a translator: judged by that address (its own test below). */
const WELL_KNOWN_NAT64 = "64:ff9b::/96";

/** The first and last address of a block. */
function edges(block: string): [string, string] {
  const [network, prefixLength] = ipaddr.parseCIDR(block);
  if (network.kind() === "ipv4") return [ipaddr.IPv4.networkAddressFromCIDR(block).toString(), ipaddr.IPv4.broadcastAddressFromCIDR(block).toString()];
  const first = ipaddr.IPv6.networkAddressFromCIDR(block).toString();
  return [first, prefixLength === 128 ? first : ipaddr.IPv6.broadcastAddressFromCIDR(block).toString()];
}

/** The address halfway through a block. */
function middle(block: string): string {
  const toNumber = (address: string) => ipaddr.parse(address).toByteArray().reduce((value, byte) => (value << 8n) | BigInt(byte), 0n);
  const [first, last] = edges(block);
  let value = (toNumber(first) + toNumber(last)) / 2n;
  const bytes = new Array<number>(ipaddr.parse(first).toByteArray().length);
  for (let index = bytes.length - 1; index >= 0; index--) {
    bytes[index] = Number(value & 255n);
    value >>= 8n;
  }
  return ipaddr.fromByteArray(bytes).toString();
}

const registries = [
  { family: "IPv4", entries: IPV4_SPECIAL_PURPOSE },
  { family: "IPv6", entries: IPV6_SPECIAL_PURPOSE },
];

describe("URL safety against the IANA special-purpose address registries", () => {
  for (const { family, entries } of registries) {
    it(`every block the ${family} registry marks not globally reachable is refused with a reason, at its first, middle and last address`, () => {
      for (const entry of entries.filter((one) => one.globallyReachable === false)) {
        for (const address of [...edges(entry.block), middle(entry.block)]) {
          expect(nonPublicReason(address), `${address} in ${entry.block} ${entry.name}`).toMatch(/address/);
        }
      }
    });

    it(`each ${family} block the registry marks globally reachable passes, unless it is a single anycast address inside a refused block`, () => {
      for (const entry of entries.filter((one) => one.globallyReachable === true && one.block !== WELL_KNOWN_NAT64)) {
        const address = middle(entry.block);
        if (REFUSED_THOUGH_GLOBALLY_REACHABLE.has(entry.block)) {
          expect(nonPublicReason(address), `${address} in ${entry.block} ${entry.name}`).not.toBeNull();
        } else {
          expect(nonPublicReason(address), `${address} in ${entry.block} ${entry.name}`).toBeNull();
        }
      }
    });
  }

  it("the registries' blocks with no Globally Reachable value: the deprecated ones are refused, the tunnels are judged by the IPv4 address inside", () => {
    expect(nonPublicReason("192.88.99.1")).toBe("multicast or reserved address");
    expect(nonPublicReason("2001:10::2a")).toBe("deprecated ORCHID address");
    // 6to4 (RFC 3056): the IPv4 address is bits 16-47.
    expect(nonPublicReason("2002:c0a8:101::1")).toBe("private address embedded in a 6to4 address");
    expect(nonPublicReason("2002:808:808::1")).toBeNull();
    // Teredo (RFC 4380): the client's IPv4 address is the last 32 bits, inverted; bits 32-63 are the Teredo server.
    expect(nonPublicReason("2001:0:4136:e378:8000:63bf:f5ff:fefe")).toBe("private address embedded in a Teredo address");
    expect(nonPublicReason("2001:0:4136:e378:8000:63bf:f7f7:f7f7")).toBeNull();
    for (const entry of [...IPV4_SPECIAL_PURPOSE, ...IPV6_SPECIAL_PURPOSE].filter((one) => one.globallyReachable === "n/a")) {
      for (const address of edges(entry.block)) expect(nonPublicReason(address), `${address} in ${entry.block}`).not.toBeNull();
    }
  });

  it("the well-known NAT64 prefix 64:ff9b::/96 is globally reachable, so it is judged by the IPv4 address in its last 32 bits", () => {
    expect(nonPublicReason("64:ff9b::808:808")).toBeNull();
    expect(nonPublicReason("64:ff9b::8.8.8.8")).toBeNull();
    expect(nonPublicReason("64:ff9b::a9fe:a9fe")).toBe("cloud metadata address embedded in a NAT64 address");
    expect(nonPublicReason("64:ff9b::10.0.0.1")).toBe("private address embedded in a NAT64 address");
  });

  it("outside the registries: IPv4 multicast, IPv6 multicast, site-local, and IPv6 outside 2000::/3 are refused", () => {
    expect(nonPublicReason("224.0.0.251")).toBe("multicast or reserved address");
    expect(nonPublicReason("ff0e::1")).toBe("multicast address");
    expect(nonPublicReason("fec0::1")).toBe("site-local address");
    expect(nonPublicReason("feff:ffff::1")).toBe("site-local address");
    // IANA's IPv6 Address Space registry: 2000::/3 is the only global unicast; the rest of the space outside the special blocks is reserved.
    for (const address of ["4000::1", "1000::1", "::1:0:0:1", "e000::1"]) expect(nonPublicReason(address), address).toBe("reserved address");
    expect(nonPublicReason("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")).toBe("reserved address");
  });

  it("plain public addresses still pass", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "9.9.9.9", "93.184.216.34", "2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:80b::200e", "2000::1", "3fff:ffff::1", "::ffff:8.8.8.8"]) {
      expect(nonPublicReason(address), address).toBeNull();
    }
  });
});
