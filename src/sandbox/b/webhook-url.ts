import { isIP } from "node:net";
import { nonPublicReason } from "../../core/url-safety.js";

const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata", "metadata.azure.internal"]);

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
}

/**
 * spec B Events 1: "A rejected URL answers 400". The sandbox refuses
 * anything but an absolute https URL of at most 2,048 characters, without
 * credentials, on a public host: loopback, private, link-local, metadata and
 * `localhost` names are refused, judged on the literal host (the sandbox
 * resolves no names). `allowLocal` (option allowLocalWebhookUrls, a
 * documented deviation for local tests) also accepts http and those hosts.
 * Returns why the URL is refused, or null.
 */
export function webhookUrlProblem(value: unknown, allowLocal: boolean): string | null {
  if (typeof value !== "string") return "webhook_url must be a string";
  if (value.length > 2048) return "webhook_url is longer than 2048 characters";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "webhook_url is not an absolute URL";
  }
  const schemeAllowed = url.protocol === "https:" || (allowLocal && url.protocol === "http:");
  if (!schemeAllowed) return `webhook_url scheme ${url.protocol} is not accepted; https only`;
  if (url.username || url.password) return "webhook_url must not carry credentials";
  if (allowLocal) return null;
  const host = hostOf(url);
  if (host === "localhost" || host.endsWith(".localhost")) return "webhook_url host is a loopback name";
  if (METADATA_HOSTS.has(host)) return "webhook_url host is a cloud metadata host";
  if (isIP(host)) {
    const reason = nonPublicReason(host);
    if (reason) return `webhook_url host is a ${reason}`;
  }
  return null;
}

/** The sandbox only ever connects to loopback: other accepted addresses are recorded, never called. */
export function isLoopbackUrl(value: string): boolean {
  const host = hostOf(new URL(value));
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  return isIP(host) !== 0 && nonPublicReason(host) === "loopback address";
}
