import { describe, expect, it } from "vitest";
import { UnsafeUrlError } from "../../src/core/errors.js";
import { assertSafeUrl, nonPublicReason, STRICT_URL_POLICY } from "../../src/core/url-safety.js";

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
});
