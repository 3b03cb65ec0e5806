/**
 * A loopback stand-in for Amazon SQS standard queues, spoken to over HTTP in SQS's JSON
 * protocol (AWS JSON 1.0: POST /, `X-Amz-Target: AmazonSQS.<Operation>`, a JSON body), so the
 * real AWS SDK client (@aws-sdk/client-sqs, endpoint pointed here, any credentials) talks to it.
 *
 * Operations: SendMessage, SendMessageBatch, ReceiveMessage, DeleteMessage,
 * ChangeMessageVisibility, GetQueueAttributes. Semantics, as SQS documents them:
 * - at-least-once: a received message stays in the queue, invisible for the visibility timeout
 *   (the queue's, or ReceiveMessage's VisibilityTimeout), and is delivered again once it
 *   passes unless deleted; each delivery has a new receipt handle and counts
 *   ApproximateReceiveCount up;
 * - DeleteMessage needs the latest receipt handle: an older one of the message (or one of a
 *   message already deleted) succeeds and deletes nothing; a handle never issued is
 *   ReceiptHandleIsInvalid; ChangeMessageVisibility on a message not in flight is
 *   MessageNotInflight;
 * - redrive: a message received maxReceiveCount times and not deleted moves to the dead-letter
 *   queue (same MessageId and body) when it would be delivered again;
 * - refusals: more than 10 entries, no entry, repeated or malformed entry ids, a batch or
 *   message over 262,144 bytes, characters SQS does not allow (that entry fails), an unknown
 *   queue, an unsigned request, an unknown operation.
 * Time is the injected clock's (`now()`), so visibility timeouts pass when a test says so.
 * Messages are received oldest first (SQS only tries to). No long polling: WaitTimeSeconds is
 * accepted and ignored. Idle connections are never closed by the stand-in. Test hooks: `failEntries(n, match?)` makes the next n batch entries (that
 * `match` takes) fail as an internal error (SenderFault false), as SQS may; `queue(name)` shows what a queue holds.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenOnLoopback, readBody } from './http-plumbing.js';

export interface FakeSqsQueueOptions {
  name: string;
  /** default 30 s, as SQS's */
  visibilityTimeoutSeconds?: number;
  /** move a message received this many times to `deadLetterQueue` (a queue of this fake) */
  redrive?: { deadLetterQueue: string; maxReceiveCount: number };
}

export interface FakeSqsOptions {
  queues: FakeSqsQueueOptions[];
  /** epoch ms; default Date.now */
  clock?: { now(): number };
  accountId?: string;
  region?: string;
}

/** A message as a queue holds it (for assertions). */
export interface FakeSqsMessage {
  readonly messageId: string;
  readonly body: string;
  readonly receiveCount: number;
  /** received and not yet visible again */
  readonly inFlight: boolean;
}

export interface FakeSqs {
  readonly url: string;
  queueUrl(name: string): string;
  queueArn(name: string): string;
  /** what the queue holds, oldest first */
  queue(name: string): FakeSqsMessage[];
  /** operations received, in order */
  readonly calls: readonly { target: string; queue?: string }[];
  count(target: string): number;
  /** the next `n` SendMessageBatch entries (of those `match` takes, when given) fail (InternalError, SenderFault false) and are not stored */
  failEntries(n: number, match?: (body: string) => boolean): void;
  close(): Promise<void>;
}

/** The largest message, and batch, SQS takes. */
export const MAX_MESSAGE_BYTES = 262_144;
const MAX_BATCH = 10;
const ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;
/** The characters SQS allows in a message: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF. */
const ALLOWED = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

interface StoredMessage {
  messageId: string;
  body: string;
  md5: string;
  sentAt: number;
  receiveCount: number;
  firstReceivedAt?: number;
  visibleAt: number;
  /** the latest receipt handle; older ones stay known in `handles` */
  receipt?: string;
}

interface Queue {
  name: string;
  visibilityMs: number;
  redrive?: { deadLetterQueue: string; maxReceiveCount: number };
  messages: StoredMessage[];
  /** every receipt handle issued → message id */
  handles: Map<string, string>;
}

class SqsError extends Error {
  constructor(
    readonly type: string,
    readonly queryCode: string,
    message: string,
    readonly status = 400,
    readonly sender = true,
  ) {
    super(message);
  }
}

const errors = {
  noQueue: () => new SqsError('QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue', 'The specified queue does not exist.'),
  invalid: (message: string) => new SqsError('InvalidParameterValueException', 'InvalidParameterValue', message),
};

function md5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

export async function startFakeSqs(options: FakeSqsOptions): Promise<FakeSqs> {
  const clock = options.clock ?? { now: () => Date.now() };
  const account = options.accountId ?? '000000000000';
  const region = options.region ?? 'us-east-1';
  const queues = new Map<string, Queue>();
  for (const q of options.queues) {
    queues.set(q.name, { name: q.name, visibilityMs: (q.visibilityTimeoutSeconds ?? 30) * 1000, ...(q.redrive ? { redrive: q.redrive } : {}), messages: [], handles: new Map() });
  }
  for (const q of queues.values()) if (q.redrive && !queues.has(q.redrive.deadLetterQueue)) throw new Error(`fake SQS: dead-letter queue ${q.redrive.deadLetterQueue} of ${q.name} is not a queue`);
  const calls: { target: string; queue?: string }[] = [];
  let failing = { left: 0, match: (_body: string): boolean => true };
  let base = '';

  const queueOf = (input: Record<string, unknown>): Queue => {
    const url = input.QueueUrl;
    if (typeof url !== 'string') throw errors.invalid('Value for parameter QueueUrl is invalid. Reason: must be given.');
    let path: string;
    try {
      path = new URL(url).pathname;
    } catch {
      throw errors.noQueue();
    }
    const m = /^\/(\d{12})\/([^/]+)$/.exec(path);
    const q = m && m[1] === account ? queues.get(m[2] as string) : undefined;
    if (!q) throw errors.noQueue();
    return q;
  };

  /** Moves what was received maxReceiveCount times to the dead-letter queue, when it would be delivered again. */
  const redrive = (q: Queue, now: number): void => {
    if (!q.redrive) return;
    const dlq = queues.get(q.redrive.deadLetterQueue) as Queue;
    const max = q.redrive.maxReceiveCount;
    const moving = q.messages.filter((m) => m.visibleAt <= now && m.receiveCount >= max);
    if (moving.length === 0) return;
    q.messages = q.messages.filter((m) => !moving.includes(m));
    for (const m of moving) dlq.messages.push({ messageId: m.messageId, body: m.body, md5: m.md5, sentAt: m.sentAt, receiveCount: 0, visibleAt: now });
  };

  const store = (q: Queue, body: string): StoredMessage => {
    const m: StoredMessage = { messageId: randomUUID(), body, md5: md5(body), sentAt: clock.now(), receiveCount: 0, visibleAt: clock.now() };
    q.messages.push(m);
    return m;
  };

  const bodyOf = (v: unknown): string => {
    if (typeof v !== 'string' || v === '') throw errors.invalid('The request must contain the parameter MessageBody.');
    return v;
  };

  const ops: Record<string, (input: Record<string, unknown>) => unknown> = {
    SendMessage(input) {
      const q = queueOf(input);
      const body = bodyOf(input.MessageBody);
      if (Buffer.byteLength(body) > MAX_MESSAGE_BYTES) throw errors.invalid(`One or more parameters are invalid. Reason: Message must be shorter than ${MAX_MESSAGE_BYTES} bytes.`);
      if (!ALLOWED.test(body)) throw new SqsError('InvalidMessageContents', 'InvalidMessageContents', 'Invalid characters found.');
      const m = store(q, body);
      return { MessageId: m.messageId, MD5OfMessageBody: m.md5 };
    },
    SendMessageBatch(input) {
      const q = queueOf(input);
      const entries = input.Entries;
      if (!Array.isArray(entries) || entries.length === 0) {
        throw new SqsError('EmptyBatchRequest', 'AWS.SimpleQueueService.EmptyBatchRequest', 'There should be at least one SendMessageBatchRequestEntry in the request.');
      }
      if (entries.length > MAX_BATCH) {
        throw new SqsError(
          'TooManyEntriesInBatchRequest',
          'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
          `Maximum number of entries per request are ${MAX_BATCH}. You have sent ${entries.length}.`,
        );
      }
      const seen = new Set<string>();
      let bytes = 0;
      for (const e of entries as Record<string, unknown>[]) {
        const id = e?.Id;
        if (typeof id !== 'string' || !ENTRY_ID.test(id)) {
          throw new SqsError(
            'InvalidBatchEntryId',
            'AWS.SimpleQueueService.InvalidBatchEntryId',
            'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.',
          );
        }
        if (seen.has(id)) throw new SqsError('BatchEntryIdsNotDistinct', 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct', `Id ${id} repeated.`);
        seen.add(id);
        bytes += Buffer.byteLength(bodyOf(e.MessageBody));
      }
      if (bytes > MAX_MESSAGE_BYTES) {
        throw new SqsError('BatchRequestTooLong', 'AWS.SimpleQueueService.BatchRequestTooLong', `Batch requests cannot be longer than ${MAX_MESSAGE_BYTES} bytes. You have sent ${bytes} bytes.`);
      }
      const Successful: unknown[] = [];
      const Failed: unknown[] = [];
      for (const e of entries as { Id: string; MessageBody: string }[]) {
        if (failing.left > 0 && failing.match(e.MessageBody)) {
          failing.left--;
          Failed.push({ Id: e.Id, SenderFault: false, Code: 'InternalError', Message: 'We encountered an internal error. Please try again.' });
        } else if (!ALLOWED.test(e.MessageBody)) {
          Failed.push({ Id: e.Id, SenderFault: true, Code: 'InvalidMessageContents', Message: 'Invalid characters found.' });
        } else {
          const m = store(q, e.MessageBody);
          Successful.push({ Id: e.Id, MessageId: m.messageId, MD5OfMessageBody: m.md5 });
        }
      }
      return { Successful, Failed };
    },
    ReceiveMessage(input) {
      const q = queueOf(input);
      const max = input.MaxNumberOfMessages ?? 1;
      if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 10) {
        throw errors.invalid(`Value ${String(max)} for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.`);
      }
      const vt = input.VisibilityTimeout;
      if (vt !== undefined && (typeof vt !== 'number' || !Number.isInteger(vt) || vt < 0 || vt > 43_200)) {
        throw errors.invalid(`Value ${String(vt)} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.`);
      }
      const wait = input.WaitTimeSeconds;
      if (wait !== undefined && (typeof wait !== 'number' || wait < 0 || wait > 20))
        throw errors.invalid(`Value ${String(wait)} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.`);
      const now = clock.now();
      redrive(q, now);
      const names = new Set([
        ...(Array.isArray(input.AttributeNames) ? input.AttributeNames : []),
        ...(Array.isArray(input.MessageSystemAttributeNames) ? input.MessageSystemAttributeNames : []),
      ] as string[]);
      const want = (n: string) => names.has('All') || names.has(n);
      const out: unknown[] = [];
      for (const m of q.messages) {
        if (out.length >= max) break;
        if (m.visibleAt > now) continue;
        m.receiveCount++;
        m.firstReceivedAt ??= now;
        m.visibleAt = now + (vt === undefined ? q.visibilityMs : (vt as number) * 1000);
        m.receipt = `${randomUUID()}#${m.messageId}`;
        q.handles.set(m.receipt, m.messageId);
        const attributes: Record<string, string> = {};
        if (want('ApproximateReceiveCount')) attributes.ApproximateReceiveCount = String(m.receiveCount);
        if (want('SentTimestamp')) attributes.SentTimestamp = String(m.sentAt);
        if (want('ApproximateFirstReceiveTimestamp')) attributes.ApproximateFirstReceiveTimestamp = String(m.firstReceivedAt);
        out.push({ MessageId: m.messageId, ReceiptHandle: m.receipt, MD5OfBody: m.md5, Body: m.body, ...(Object.keys(attributes).length > 0 ? { Attributes: attributes } : {}) });
      }
      return out.length > 0 ? { Messages: out } : {};
    },
    DeleteMessage(input) {
      const q = queueOf(input);
      const handle = input.ReceiptHandle;
      if (typeof handle !== 'string' || !q.handles.has(handle)) {
        throw new SqsError('ReceiptHandleIsInvalid', 'ReceiptHandleIsInvalid', `The input receipt handle "${String(handle)}" is not a valid receipt handle.`);
      }
      // only the latest handle deletes; an older one succeeds and deletes nothing
      q.messages = q.messages.filter((m) => m.receipt !== handle);
      return {};
    },
    ChangeMessageVisibility(input) {
      const q = queueOf(input);
      const handle = input.ReceiptHandle;
      const vt = input.VisibilityTimeout;
      if (typeof vt !== 'number' || !Number.isInteger(vt) || vt < 0 || vt > 43_200)
        throw errors.invalid(`Value ${String(vt)} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.`);
      if (typeof handle !== 'string' || !q.handles.has(handle)) {
        throw new SqsError('ReceiptHandleIsInvalid', 'ReceiptHandleIsInvalid', `The input receipt handle "${String(handle)}" is not a valid receipt handle.`);
      }
      const now = clock.now();
      const m = q.messages.find((x) => x.receipt === handle);
      if (!m || m.visibleAt <= now) throw new SqsError('MessageNotInflight', 'AWS.SimpleQueueService.MessageNotInflight', 'Message does not exist or is not available for visibility timeout change.');
      m.visibleAt = now + vt * 1000;
      return {};
    },
    GetQueueAttributes(input) {
      const q = queueOf(input);
      const now = clock.now();
      redrive(q, now);
      const all: Record<string, string> = {
        ApproximateNumberOfMessages: String(q.messages.filter((m) => m.visibleAt <= now).length),
        ApproximateNumberOfMessagesNotVisible: String(q.messages.filter((m) => m.visibleAt > now).length),
        VisibilityTimeout: String(q.visibilityMs / 1000),
        QueueArn: arn(q.name),
        ...(q.redrive ? { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(q.redrive.deadLetterQueue), maxReceiveCount: q.redrive.maxReceiveCount }) } : {}),
      };
      const names = Array.isArray(input.AttributeNames) ? (input.AttributeNames as string[]) : [];
      const Attributes = names.includes('All') ? all : Object.fromEntries(Object.entries(all).filter(([k]) => names.includes(k)));
      return { Attributes };
    },
  };

  const arn = (name: string): string => `arn:aws:sqs:${region}:${account}:${name}`;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID(), 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    const target = String(req.headers['x-amz-target'] ?? '');
    const op = target.startsWith('AmazonSQS.') ? target.slice('AmazonSQS.'.length) : '';
    let input: Record<string, unknown> = {};
    try {
      const parsed: unknown = raw === '' ? {} : JSON.parse(raw);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) input = parsed as Record<string, unknown>;
    } catch {
      return send(res, 400, { __type: 'com.amazon.coral.service#SerializationException', message: 'the body is not JSON' });
    }
    calls.push({ target: op || target, ...(typeof input.QueueUrl === 'string' ? { queue: input.QueueUrl.split('/').pop() } : {}) });
    if (req.method !== 'POST' || !String(req.headers['content-type'] ?? '').startsWith('application/x-amz-json-1.0')) {
      return send(res, 400, { __type: 'com.amazon.coral.service#SerializationException', message: 'expected POST with application/x-amz-json-1.0' });
    }
    if (!String(req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 ')) {
      return send(res, 403, { __type: 'com.amazon.coral.service#MissingAuthenticationTokenException', message: 'Missing Authentication Token' });
    }
    const fn = ops[op];
    if (!fn) return send(res, 400, { __type: 'com.amazon.coral.service#UnknownOperationException', message: `unknown operation ${target}` });
    try {
      send(res, 200, fn(input));
    } catch (err) {
      if (!(err instanceof SqsError)) throw err;
      send(res, err.status, { __type: `com.amazonaws.sqs#${err.type}`, message: err.message }, { 'x-amzn-query-error': `${err.queryCode};${err.sender ? 'Sender' : 'Receiver'}` });
    }
  };

  // Idle connections stay open until close(). With Node's default 5 s keep-alive timeout, a
  // client that comes back after a long run can reuse a socket whose close it has not read yet
  // and get ECONNRESET; the test clients (maxAttempts 1) would not retry it as the SDK's default
  // does, and that race is not what any test here is about.
  const server: Server = createServer({ keepAliveTimeout: 0 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { __type: 'com.amazon.coral.service#InternalFailure', message: String(err) }, {});
    });
  });
  const port = await listenOnLoopback(server);
  base = `http://127.0.0.1:${port}`;

  const queueOrThrow = (name: string): Queue => {
    const q = queues.get(name);
    if (!q) throw new Error(`fake SQS: no queue ${name}`);
    return q;
  };

  return {
    url: base,
    queueUrl: (name) => `${base}/${account}/${queueOrThrow(name).name}`,
    queueArn: (name) => arn(queueOrThrow(name).name),
    queue: (name) => {
      const now = clock.now();
      return queueOrThrow(name).messages.map((m) => ({ messageId: m.messageId, body: m.body, receiveCount: m.receiveCount, inFlight: m.visibleAt > now }));
    },
    calls,
    count: (target) => calls.filter((c) => c.target === target).length,
    failEntries: (n, match = () => true) => {
      failing = { left: n, match };
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
