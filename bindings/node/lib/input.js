'use strict';
// Pipelines: input read under a leadership (Input) and the offsets a guarded
// write carries. A leader reads requests with `leadership.consume(topics)`
// and commits what it consumed in the same transaction as the commands it
// dispatched (`leadership.produceBatch(commands, { offsets: input.position() })`):
// the broker refuses a deposed leader's offsets with its writes, and the
// successor's input starts exactly after the last request whose commands
// were committed (docs/PIPELINES.md). Its calls are *_async calls on the
// process's event queue (lib/calls.js), like the leadership's.

const { koffi, native, CONSTANTS } = require('./native');
const { check, makeError, ErrorCode } = require('./errors');
const { intArg, int64Arg, timeoutArg, signalArg, describe } = require('./args');
const calls = require('./calls');

const fns = () => native().fns;
const MAX_POLL = 1000000;

// Inputs never closed are destroyed when their owner is garbage collected.
const finalizer = new FinalizationRegistry((handle) => fns().krabka_input_destroy(handle));

/** The topic names of consume: an array of non-empty strings without NUL
 *  (the rules on length and characters are the library's). */
function topicsArg(topics, what) {
  if (!Array.isArray(topics)) throw new TypeError(`${what}: topics must be an array of strings, got ${describe(topics)}`);
  if (topics.length === 0) throw new RangeError(`${what}: topics must not be empty`);
  return topics.map((t, i) => {
    if (typeof t !== 'string') throw new TypeError(`${what}: topics[${i}] must be a string, got ${describe(t)}`);
    if (t.includes('\0')) throw new RangeError(`${what}: topics[${i}] must not contain NUL characters`);
    if (!t.isWellFormed()) throw makeError(ErrorCode.INVALID_UTF8, `${what}: topics[${i}] is not a well-formed string (it holds a lone surrogate)`);
    return t;
  });
}

/** The krabka_offset_t array of a guarded write: offsets is an array of
 *  { topic, partition, offset } (offset a number or bigint). */
function offsetStructs(offsets, what) {
  if (!Array.isArray(offsets)) throw new TypeError(`${what}: options.offsets must be an array of { topic, partition, offset }, got ${describe(offsets)}`);
  return offsets.map((o, i) => {
    const w = `${what}: offsets[${i}]`;
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`${w} must be an object { topic, partition, offset }, got ${describe(o)}`);
    if (typeof o.topic !== 'string') throw new TypeError(`${w}.topic must be a string, got ${describe(o.topic)}`);
    if (!o.topic.isWellFormed()) throw makeError(ErrorCode.INVALID_UTF8, `${w}.topic is not a well-formed string (it holds a lone surrogate)`);
    const name = Buffer.from(o.topic, 'utf8');
    if (name.length > CONSTANTS.NAME_MAX) throw new RangeError(`${w}.topic is ${name.length} bytes, longer than ${CONSTANTS.NAME_MAX}`);
    const partition = intArg(o.partition, `${w}.partition`, 32);
    if (partition < 0) throw new RangeError(`${w}.partition must be >= 0, got ${partition}`);
    const offset = int64Arg(o.offset, `${w}.offset`);
    if (offset < 0n) throw new RangeError(`${w}.offset must be >= 0, got ${o.offset}`);
    const topic = new Uint8Array(CONSTANTS.NAME_BUF);
    topic.set(name);
    return { topic_len: name.length, topic, partition, offset };
  });
}

// A copy (Buffer.from of a Uint8Array copies; of the ArrayBuffer itself it
// would alias the library's memory, freed with the records).
const bytesAt = (ptr, len) => (ptr === null ? null : len === 0 ? Buffer.alloc(0) : Buffer.from(new Uint8Array(koffi.view(ptr, len))));

/** Copies the records of a krabka_records_t into JavaScript objects. */
function readRecords(h) {
  const n = native();
  const count = [0];
  check(n.fns.krabka_records_count(h, count));
  const out = [];
  for (let i = 0; i < Number(count[0]); i++) {
    const r = {};
    check(n.fns.krabka_records_get(h, i, r));
    const headers = [];
    const hc = Number(r.header_count);
    if (hc > 0) {
      for (const hd of koffi.decode(r.headers, n.types.krabka_header_t, hc)) headers.push([hd.key, bytesAt(hd.value, Number(hd.value_len)) || Buffer.alloc(0)]);
    }
    out.push(
      Object.freeze({
        topic: r.topic,
        partition: r.partition,
        offset: BigInt(r.offset),
        key: bytesAt(r.key, Number(r.key_len)),
        value: bytesAt(r.value, Number(r.value_len)),
        headers: Object.freeze(headers),
      }),
    );
  }
  return out;
}

/** The offsets of a position or committed call. */
function readOffsets(fn, h) {
  const n = native();
  const count = [0];
  check(fn(h, null, 0, count));
  const want = Number(count[0]);
  if (want === 0) return [];
  const size = koffi.sizeof(n.types.krabka_offset_t);
  const buf = Buffer.alloc(size * want);
  check(fn(h, buf, want, count));
  const got = Math.min(want, Number(count[0]));
  const offs = koffi.decode(buf, koffi.array(n.types.krabka_offset_t, got));
  return offs.map((o) =>
    Object.freeze({ topic: Buffer.from(o.topic.subarray(0, o.topic_len)).toString('utf8'), partition: o.partition, offset: BigInt(o.offset) }),
  );
}

/**
 * Input partitions read read_committed under a leadership, from the offsets
 * committed for the role's pipeline group (Leadership.consume). poll()
 * resolves to the next records (offset order per partition); position() is
 * the next offset to read per partition: pass it (or the entries of the
 * partitions handled) as the `offsets` of the guarded write that dispatches
 * their commands. `for await (const rec of input)` yields records until the
 * leadership ends (its error is thrown). Polls of one Input must not overlap.
 */
class Input {
  #handle;
  #closed = false;
  #leadership; // keeps the leadership (and its client) reachable

  /** @internal */
  constructor(handle, leadership) {
    this.#handle = handle;
    this.#leadership = leadership;
    finalizer.register(this, handle, this);
  }

  #live() {
    if (this.#closed) throw makeError(ErrorCode.INVALID_HANDLE, 'the input was closed (destroyed)');
    return this.#handle;
  }

  /**
   * Up to options.max (default 500, 1 to 1000000) records: resolves once at
   * least one committed record arrived, or to [] when options.timeoutMs
   * passed (default request.timeout.ms). Rejects with the leadership's end
   * (FencedError, LeaseExpiredError, NOT_LEADER, CLOSED) once it ended.
   */
  poll(options) {
    const o = options === undefined || options === null ? {} : options;
    if (typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`poll: options must be an object such as { max, timeoutMs }, got ${describe(options)}`);
    const max = o.max === undefined ? 500 : intArg(o.max, 'poll: options.max', 32);
    if (max < 1 || max > MAX_POLL) throw new RangeError(`poll: options.max must be 1 to ${MAX_POLL}, got ${max}`);
    const t = timeoutArg(o, 'poll');
    const signal = signalArg(o, 'poll');
    const h = this.#live();
    return calls
      .submit({
        what: 'poll',
        signal,
        start: (q, tag, eb) => fns().krabka_input_poll_async(h, max, t, q, tag, eb, eb.length),
        read: (ev, info) => {
          const out = [null];
          check(fns().krabka_event_take_records(ev, out, info.errbuf, info.errbuf.length), info.errbuf);
          if (!out[0]) throw makeError(ErrorCode.INTERNAL, 'a poll that succeeded carried no records');
          try {
            return readRecords(out[0]);
          } finally {
            fns().krabka_records_destroy(out[0]);
          }
        },
      })
      .catch((e) => {
        if (e && e.code === ErrorCode.TIMEOUT) return [];
        throw e;
      });
  }

  /** Where the input reads next: [{ topic, partition, offset }] (offset a
   *  bigint), one per partition read. Never blocks. */
  position() {
    return readOffsets(fns().krabka_input_position, this.#live());
  }

  /** The offsets committed for the role's pipeline group, per partition
   *  read: where the input started, raised by this leadership's commits.
   *  Never blocks. */
  committed() {
    return readOffsets(fns().krabka_input_committed, this.#live());
  }

  /** Stops reading (a poll in flight rejects). Idempotent. */
  close() {
    if (!this.#closed) {
      this.#closed = true;
      finalizer.unregister(this);
      const code = fns().krabka_input_destroy(this.#handle);
      if (code !== 0 && code !== ErrorCode.INVALID_HANDLE) throw makeError(code, 'destroying the input');
    }
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      for (const rec of await this.poll()) yield rec;
    }
  }

  /** Same as close(). */
  [Symbol.dispose]() {
    this.close();
  }

  async [Symbol.asyncDispose]() {
    this.close();
  }
}

/** Leadership.consume's call: resolves to an Input. */
function consume(leadership, handleOf, topics, options, done) {
  const ts = topicsArg(topics, 'consume');
  const t = timeoutArg(options, 'consume');
  const signal = signalArg(options, 'consume');
  return calls.submit({
    what: 'consume',
    signal,
    start: (q, tag, eb) => fns().krabka_leadership_consume_async(handleOf(), ts, ts.length, t, q, tag, eb, eb.length),
    read: (ev, info) => {
      const out = [null];
      check(fns().krabka_event_take_input(ev, out, info.errbuf, info.errbuf.length), info.errbuf);
      if (!out[0]) throw makeError(ErrorCode.INTERNAL, 'a consume that succeeded carried no input');
      return new Input(out[0], leadership);
    },
    done,
  });
}

module.exports = { Input, consume, offsetStructs, topicsArg };
