/**
 * A JSON array of objects read item by item as its bytes arrive: each item is parsed (by
 * JSON.parse, on its own bytes) and handed to `onItem` at once, so neither the whole text nor
 * every parsed item need be held. For the gateway's full lists (10,000 APIs are ~75 MB of
 * echo; held whole, as one string and its parse, they were most of a full run's memory).
 *
 * Why not a streaming JSON parser from npm: those tokenise every byte in JavaScript, several
 * times slower than the engine's JSON.parse; here JavaScript only finds where each item ends
 * (skipping through strings with indexOf) and JSON.parse does the parsing.
 *
 * Guarantees: for a well-formed JSON array of objects, onItem sees each item, in order, as
 * JSON.parse would have parsed it; `null` (the whole body) is an empty list; an item that is
 * not an object, a body that is not an array, or malformed JSON rejects with JsonItemsError
 * (having handed over the items before the fault: the caller must discard a partial result).
 * readJsonItemBytes hands over each item's bytes instead, unparsed (the same structural
 * checks; an item's content is checked when parseItem parses it), so a caller that knows an
 * item by a digest of its bytes need not parse it again.
 * Assumes UTF-8 (JSON's encoding); bytes of a multi-byte character may straddle chunks.
 */

export class JsonItemsError extends Error {
  readonly code = 'JSON_ITEMS';
  constructor(message: string) {
    super(message);
    this.name = 'JsonItemsError';
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** Reads `chunks` (a response body) as a JSON array of objects; resolves with the number of items. */
export async function readJsonItems(chunks: AsyncIterable<Uint8Array>, onItem: (item: Record<string, unknown>) => void): Promise<number> {
  return readJsonItemBytes(chunks, (bytes, index) => onItem(parseItem(bytes, index)));
}

/**
 * Reads `chunks` as a JSON array of objects, handing over each item's bytes (from its `{` to
 * its `}`) unparsed, with its index: for a caller that can tell from the bytes (a digest) that
 * it already knows the item. The bytes may be a view of a chunk: valid during the call only.
 * The scanner checks the array's structure; an item's content is only checked by parseItem.
 */
export async function readJsonItemBytes(chunks: AsyncIterable<Uint8Array>, onBytes: (bytes: Buffer, index: number) => void): Promise<number> {
  const reader = new ItemReader(onBytes);
  for await (const chunk of chunks) reader.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  return reader.end();
}

/** One item's bytes (readJsonItemBytes) parsed; JsonItemsError naming the item when they are not valid JSON. */
export function parseItem(bytes: Buffer, index: number): Record<string, unknown> {
  try {
    return JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new JsonItemsError(`item ${index} of the list is not valid JSON: ${(err as Error).message}`);
  }
}

/** The scanner's state between chunks. */
class ItemReader {
  /** 0: before the array; 1: in the array, between items; 2+: inside an item; -1: after the array */
  private depth = 0;
  private inString = false;
  /** a backslash ended the previous chunk inside a string */
  private escaped = false;
  /** bytes of the current item from earlier chunks */
  private partial: Buffer[] = [];
  private count = 0;
  /** `null` as the whole body: an empty list */
  private literal = '';

  constructor(private readonly onBytes: (bytes: Buffer, index: number) => void) {}

  push(buf: Buffer): void {
    let start = this.depth >= 2 ? 0 : -1;
    let i = 0;
    const n = buf.length;
    // the next backslash at or after i (n: none), found again only once passed
    let bs = -1;
    while (i < n) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          i++;
          continue;
        }
        const q = buf.indexOf(QUOTE, i);
        if (bs < i) {
          bs = buf.indexOf(BACKSLASH, i);
          if (bs === -1) bs = n;
        }
        if (bs < n && (q === -1 || bs < q)) {
          if (bs + 1 >= n) {
            this.escaped = true;
            i = n;
          } else i = bs + 2;
          continue;
        }
        if (q === -1) {
          i = n;
          continue;
        }
        this.inString = false;
        i = q + 1;
        continue;
      }
      const b = buf[i] as number;
      if (this.depth >= 2) {
        if (b === QUOTE) this.inString = true;
        else if (b === OPEN_OBJECT || b === OPEN_ARRAY) this.depth++;
        else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
          this.depth--;
          if (this.depth === 1) {
            this.emit(buf, start, i + 1);
            start = -1;
          }
        }
        i++;
        continue;
      }
      if (isSpace(b)) {
        i++;
        continue;
      }
      if (this.depth === 0) {
        if (b === OPEN_ARRAY && this.literal === '') this.depth = 1;
        else if (this.literal.length < 4) this.literal += String.fromCharCode(b);
        else throw new JsonItemsError('the body is not a JSON array');
      } else if (this.depth === 1) {
        if (b === OPEN_OBJECT) {
          this.depth = 2;
          start = i;
        } else if (b === CLOSE_ARRAY) this.depth = -1;
        else if (b !== COMMA) throw new JsonItemsError(`item ${this.count} of the list is not an object`);
      } else throw new JsonItemsError('bytes after the end of the list');
      i++;
    }
    if (this.depth >= 2 && start !== -1) this.partial.push(buf.subarray(start));
  }

  end(): number {
    if (this.depth === 0 && this.literal === 'null') return 0;
    if (this.depth !== -1) throw new JsonItemsError(this.depth === 0 ? 'the body is not a JSON array' : 'the list ends early');
    return this.count;
  }

  private emit(buf: Buffer, start: number, end: number): void {
    const tail = buf.subarray(start === -1 ? 0 : start, end);
    const bytes = this.partial.length === 0 ? tail : Buffer.concat([...this.partial, tail]);
    this.partial = [];
    this.onBytes(bytes, this.count++);
  }
}
