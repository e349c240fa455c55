import { isIPv4, isIPv6 } from 'node:net';

/**
 * The key a client address is counted under by the sign-in, sign-up and setup-link limits. An IPv4
 * address is itself (an IPv4-mapped IPv6 address, `::ffff:203.0.113.7`, is that IPv4 address); an
 * IPv6 address counts as its /64, since one subscriber is handed a whole /64 and could otherwise
 * take a fresh address for every few guesses.
 */
export function addressKey(ip: string): string {
  const address = ip.split('%')[0]!; // a zone index (fe80::1%eth0) names an interface, not a client
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const groups = expandIPv6(address);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, lower-case hex without leading zeros. */
function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.toLowerCase().split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').flatMap(groupsOf));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const zeros = Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...zeros, ...right];
}

/** One group, or the two groups of a trailing dotted IPv4 part (`::1.2.3.4`). */
function groupsOf(part: string): string[] {
  if (!part.includes('.')) return [Number.parseInt(part, 16).toString(16)];
  const [a = 0, b = 0, c = 0, d = 0] = part.split('.').map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}
