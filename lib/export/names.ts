/**
 * Resource names for exported gateway objects. Pure.
 *
 * `dnsName(raw, fallback)`: a DNS-1123 label (lower-case letters, digits and '-', starting and
 * ending with a letter or digit, at most 63 characters) made from an API's or policy's name:
 * accents dropped, lower-cased, every run of other characters one '-'; `fallback` when nothing
 * is left.
 * `NameSet.take(raw, fallback)`: the same, made unique within the set by a `-2`, `-3`, … suffix
 * (the suffix fits within 63 characters).
 */

const MAX_LABEL = 63;

function trimDashes(s: string): string {
  return s.replace(/^-+/, '').replace(/-+$/, '');
}

export function dnsName(raw: string, fallback: string): string {
  const base = trimDashes(
    raw
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-'),
  );
  const cut = trimDashes(base.slice(0, MAX_LABEL));
  return cut === '' ? fallback : cut;
}

/** Names taken so far; each new one unique among them. */
export class NameSet {
  private readonly taken = new Set<string>();

  take(raw: string, fallback: string): string {
    const base = dnsName(raw, fallback);
    let name = base;
    for (let n = 2; this.taken.has(name); n++) {
      const suffix = `-${n}`;
      name = `${trimDashes(base.slice(0, MAX_LABEL - suffix.length))}${suffix}`;
    }
    this.taken.add(name);
    return name;
  }
}
