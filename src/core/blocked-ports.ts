/**
 * Ports that fetch refuses to connect to over http(s) (the Fetch standard's
 * "bad port" list, https://fetch.spec.whatwg.org/#port-blocking; Node's fetch
 * applies it). Such a request fails before any connection is made, and
 * Node's error for it carries no code, so the address is checked here first:
 * a job sent there is provably not sent, and sending again cannot help.
 */
const BLOCKED_PORTS: ReadonlySet<string> = new Set([
  "1", "7", "9", "11", "13", "15", "17", "19", "20", "21", "22", "23", "25", "37", "42", "43", "53", "69", "77", "79",
  "87", "95", "101", "102", "103", "104", "109", "110", "111", "113", "115", "117", "119", "123", "135", "137",
  "139", "143", "161", "179", "389", "427", "465", "512", "513", "514", "515", "526", "530", "531", "532",
  "540", "548", "554", "556", "563", "587", "601", "636", "989", "990", "993", "995", "1719", "1720", "1723",
  "2049", "3659", "4045", "4190", "5060", "5061", "6000", "6566", "6665", "6666", "6667", "6668", "6669", "6679",
  "6697", "10080",
]);

/** True when fetch will refuse `url` without connecting (an http(s) URL on a blocked port). */
export function isBlockedPort(url: URL): boolean {
  return (url.protocol === "http:" || url.protocol === "https:") && BLOCKED_PORTS.has(url.port);
}
