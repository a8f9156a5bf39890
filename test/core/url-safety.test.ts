import { describe, expect, it } from "vitest";
import { UnsafeUrlError } from "../../src/core/errors.js";
import { assertSafeUrl, nonPublicReason, policyForBase, STRICT_URL_POLICY } from "../../src/core/url-safety.js";

const publicResolver = async () => ["93.184.216.34"];

async function refusal(url: string, resolve = publicResolver): Promise<string> {
  try {
    await assertSafeUrl(url, STRICT_URL_POLICY, resolve);
  } catch (error) {
    if (error instanceof UnsafeUrlError) return error.message;
    throw error;
  }
  throw new Error(`expected ${url} to be refused`);
}

describe("URL safety (DESIGN.md: URLs a provider hands back and webhook addresses we send)", () => {
  it("classifies loopback, private, link-local, CGNAT, metadata and IPv4-mapped addresses as not public", () => {
    for (const address of ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "100.100.100.200", "0.0.0.0", "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:a00:1"]) {
      expect(nonPublicReason(address), address).not.toBeNull();
    }
    for (const address of ["93.184.216.34", "2606:2800:220:1::248", "::ffff:5db8:d822"]) expect(nonPublicReason(address), address).toBeNull();
  });

  it("refuses http, literal private hosts, metadata names, localhost (with a trailing dot) and names resolving inward", async () => {
    expect(await refusal("http://example.com/x")).toMatch(/https only/);
    expect(await refusal("https://[::ffff:127.0.0.1]/x")).toMatch(/loopback/);
    expect(await refusal("https://169.254.169.254/latest")).toMatch(/metadata|link-local/);
    expect(await refusal("https://metadata.goog/x")).toMatch(/metadata/);
    expect(await refusal("https://localhost./x")).toMatch(/loopback/);
    expect(await refusal("https://inward.example/x", async () => ["10.0.0.7"])).toMatch(/private/);
    expect(await refusal("https://user:pass@example.com/x")).toMatch(/credentials/);
  });

  it("accepts a public https URL, and anything when the policy allows private addresses", async () => {
    await expect(assertSafeUrl("https://cdn.example.com/a.png", STRICT_URL_POLICY, publicResolver)).resolves.toBeInstanceOf(URL);
    await expect(assertSafeUrl("http://127.0.0.1:9/x", { allowHttp: true, allowPrivate: true })).resolves.toBeInstanceOf(URL);
  });

  it("names why each kind of IPv4 address is not public, and the edges of each range are public", () => {
    const reasons: Record<string, string> = {
      "127.255.255.255": "loopback address",
      "10.255.0.1": "private address",
      "172.31.255.255": "private address",
      "192.168.100.200": "private address",
      "169.254.0.1": "link-local or cloud metadata address",
      "100.100.100.200": "cloud metadata address",
      "100.127.255.255": "shared (CGNAT) address",
      "0.1.2.3": "unspecified address",
      "224.0.0.1": "multicast or reserved address",
      "239.255.255.250": "multicast or reserved address",
      "240.0.0.1": "multicast or reserved address",
      "255.255.255.255": "multicast or reserved address",
    };
    for (const [address, reason] of Object.entries(reasons)) expect(nonPublicReason(address), address).toBe(reason);
    for (const address of ["1.0.0.0", "9.255.255.255", "11.0.0.0", "126.255.255.255", "128.0.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255", "192.169.0.0", "169.253.255.255", "169.255.0.0", "100.63.255.255", "100.128.0.0", "223.255.255.255"]) {
      expect(nonPublicReason(address), address).toBeNull();
    }
  });

  it("names why each kind of IPv6 address is not public; IPv4-mapped addresses are judged by their IPv4 address", () => {
    const reasons: Record<string, string> = {
      "::1": "loopback address",
      "::": "unspecified address",
      "::ffff:192.168.100.200": "private address",
      "::FFFF:10.0.0.1": "private address",
      "::ffff:a9fe:a9fe": "cloud metadata address",
      "::ffff:7f00:1": "loopback address",
      "fc00::1": "private (unique local) address",
      "fd12:3456::1": "private (unique local) address",
      "FE80::1": "link-local address",
      "febf::1": "link-local address",
      "ff02::1": "multicast address",
    };
    for (const [address, reason] of Object.entries(reasons)) expect(nonPublicReason(address), address).toBe(reason);
    // Global unicast holding fc, fe80, ff and an ffff:… tail in later groups: only the leading bits decide.
    for (const address of ["2600:1f18::fcd:fe80:ff00", "2606:4700::ffff:a00:1", "2606:4700::ffff:10.0.0.1", "::ffff:5db8:d822"]) expect(nonPublicReason(address), address).toBeNull();
  });

  it("an IPv4 address carried inside an IPv6 address is judged by that IPv4 address, in every form that carries one", () => {
    const reasons: Record<string, string> = {
      // RFC 6052 well-known NAT64 prefix: the last 32 bits.
      "64:ff9b::7f00:1": "loopback address embedded in a NAT64 address",
      // RFC 3056 6to4: bits 16-47.
      "2002:7f00:1::1": "loopback address embedded in a 6to4 address",
      // RFC 4291 IPv4-compatible (deprecated): ::a.b.c.d.
      "::7f00:1": "loopback address embedded in an IPv4-compatible address",
      // RFC 6145 IPv4-translated: ::ffff:0:a.b.c.d.
      "::ffff:0:7f00:1": "loopback address embedded in an IPv4-translated address",
      // RFC 4380 Teredo: the client's address is the last 32 bits inverted (0x80fffffe is 127.0.0.1).
      "2001:0:4136:e378:8000:63bf:80ff:fffe": "loopback address embedded in a Teredo address",
    };
    for (const [address, reason] of Object.entries(reasons)) expect(nonPublicReason(address), address).toBe(reason);
    // RFC 8215: the local-use NAT64 prefix is never globally reachable, whatever it carries (and where it carries it depends on the operator's prefix length).
    expect(nonPublicReason("64:ff9b:1::808:808")).toBe("local-use NAT64 address");
  });

  it("site-local IPv6, benchmarking and IETF protocol assignment IPv4 are not public", () => {
    expect(nonPublicReason("fec0::1")).toBe("site-local address");
    expect(nonPublicReason("198.18.0.1")).toBe("multicast or reserved address");
    expect(nonPublicReason("192.0.0.8")).toBe("multicast or reserved address");
  });

  it("AWS's IPv6 metadata address is named as one, not merely as unique local", () => {
    expect(nonPublicReason("fd00:ec2::254")).toBe("cloud metadata address");
    expect(nonPublicReason("fd00:ec2:0:0:0:0:0:254")).toBe("cloud metadata address");
  });

  it("a URL whose literal or resolved address carries a loopback IPv4 address inside IPv6 is refused", async () => {
    expect(await refusal("https://[64:ff9b::127.0.0.1]/x")).toBe(
      "refused URL https://[64:ff9b::7f00:1]/x: 64:ff9b::7f00:1 resolves to a loopback address embedded in a NAT64 address (64:ff9b::7f00:1)",
    );
    expect(await refusal("https://tunnel.example/x", async () => ["2002:7f00:1::1"])).toMatch(/resolves to a loopback address embedded in a 6to4 address/);
    expect(await refusal("https://old.example/x", async () => ["fec0::1"])).toMatch(/resolves to a site-local address \(fec0::1\)$/);
  });

  it("a host name is not an IP address", () => {
    expect(nonPublicReason("example.com")).toBe("not an IP address");
    expect(nonPublicReason("")).toBe("not an IP address");
  });

  it("the strict policy allows neither http nor private addresses", () => {
    expect(STRICT_URL_POLICY).toEqual({ allowHttp: false, allowPrivate: false });
  });

  it("each refusal says why, quoting the URL", async () => {
    expect(await refusal("/relative/path")).toBe("refused URL /relative/path: not a valid absolute URL");
    expect(await refusal("ftp://files.example/x")).toBe("refused URL ftp://files.example/x: scheme ftp: is not allowed; https only");
    // The message never repeats a user part or a query (a signed link's signature, a receiver's token): "?…" says there was one.
    expect(await refusal("https://user@example.com/x")).toBe("refused URL https://example.com/x: credentials in a URL are not allowed");
    expect(await refusal("https://:secret@example.com/x")).toBe("refused URL https://example.com/x: credentials in a URL are not allowed");
    expect(await refusal("http://10.0.0.1/out.png?X-Signature=s3cr3t")).toBe("refused URL http://10.0.0.1/out.png?…: scheme http: is not allowed; https only");
    expect(await refusal("https://app.localhost/x")).toBe("refused URL https://app.localhost/x: loopback host");
    expect(await refusal("https://[fd00::1]/x")).toBe("refused URL https://[fd00::1]/x: fd00::1 resolves to a private (unique local) address (fd00::1)");
    expect(await refusal("https://mixed.example/x", async () => ["93.184.216.34", "100.100.100.200"])).toBe(
      "refused URL https://mixed.example/x: mixed.example resolves to a cloud metadata address (100.100.100.200)",
    );
  });

  it("every cloud metadata host name is refused without being resolved", async () => {
    const unreachable = async (): Promise<string[]> => {
      throw new Error("must not be resolved");
    };
    for (const host of ["metadata.google.internal", "metadata.goog", "metadata", "metadata.azure.internal", "instance-data", "METADATA.google.internal."]) {
      expect(await refusal(`https://${host}/computeMetadata/v1`, unreachable)).toMatch(/: cloud metadata host$/);
    }
  });

  it("a host that does not resolve is refused", async () => {
    const nowhere = async (): Promise<string[]> => {
      throw new Error("ENOTFOUND");
    };
    expect(await refusal("https://gone.example/x", nowhere)).toBe("refused URL https://gone.example/x: host gone.example does not resolve");
    // RFC 6761: .invalid never resolves, so the system resolver refuses it without the network.
    await expect(assertSafeUrl("https://mediagate-test.invalid/x", STRICT_URL_POLICY)).rejects.toThrow(
      new UnsafeUrlError("https://mediagate-test.invalid/x", "host mediagate-test.invalid does not resolve"),
    );
  });

  it("http is allowed only when the policy says so, and then private hosts still are not", async () => {
    await expect(assertSafeUrl("http://cdn.example.com/a.png", { allowHttp: true, allowPrivate: false }, publicResolver)).resolves.toBeInstanceOf(URL);
    await expect(assertSafeUrl("http://10.0.0.1/a.png", { allowHttp: true, allowPrivate: false }, publicResolver)).rejects.toThrow(/private address/);
  });

  it("allowing http does not allow other schemes", async () => {
    await expect(assertSafeUrl("ftp://files.example/a.png", { allowHttp: true, allowPrivate: true })).rejects.toThrow("scheme ftp: is not allowed; https only");
  });

  it("credentials are refused even when private addresses are allowed", async () => {
    await expect(assertSafeUrl("http://u:p@127.0.0.1/x", { allowHttp: true, allowPrivate: true })).rejects.toThrow(/credentials/);
  });
});

describe("the URL policy for what a provider returns, from its configured base", () => {
  it("MEDIAGATE_ALLOW_PRIVATE_URLS relaxes everything", async () => {
    expect(await policyForBase("https://api.provider.example/v1", true)).toEqual({ allowHttp: true, allowPrivate: true });
  });

  it("a public https base keeps the strict policy", async () => {
    expect(await policyForBase("https://93.184.216.34/v1", false)).toEqual({ allowHttp: false, allowPrivate: false });
    expect(await policyForBase("https://mediagate-test.invalid/v1", false)).toEqual({ allowHttp: false, allowPrivate: false });
  });

  it("an http base allows http; a loopback or private base (the sandbox) allows private addresses", async () => {
    expect(await policyForBase("http://127.0.0.1:8080/v1", false)).toEqual({ allowHttp: true, allowPrivate: true });
    expect(await policyForBase("https://localhost:8443/v1", false)).toEqual({ allowHttp: false, allowPrivate: true });
    expect(await policyForBase("https://[::1]:8443/v1", false)).toEqual({ allowHttp: false, allowPrivate: true });
    expect(await policyForBase("http://93.184.216.34/v1", false)).toEqual({ allowHttp: true, allowPrivate: false });
  });
});
