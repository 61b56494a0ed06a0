'use strict';
// Leadership: a won role. Its blocking calls (renew, confirm, setMetadata, produce,
// produceBatch, consume, resign, `ended`) are *_async calls on the process's event
// queue (lib/calls.js); its getters (token, lease, state, metadata,
// renewDue) never block and read the C object directly (lib/values.js).

const abi = require('./abi');
const { koffi, native } = require('./native');
const { check, makeError, ErrorCode } = require('./errors');
const { nameBytes, bytesArg, intArg, timeoutArg, signalArg, describe } = require('./args');
const { metadataArg, headersArg } = require('./headers');
const values = require('./values');
const calls = require('./calls');
const input = require('./input');

const fns = () => native().fns;
const copyBytes = (b) => Buffer.from(b);

// Leaderships that were never closed are destroyed when their owner is
// garbage collected.
const finalizer = new FinalizationRegistry((handle) => calls.destroyOnPool('leadership', handle));

function messageArg(msg, what) {
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) throw new TypeError(`${what} must be an object, got ${describe(msg)}`);
  if (typeof msg.topic !== 'string' || msg.topic === '') throw new TypeError(`${what}.topic must be a non-empty string, got ${describe(msg.topic)}`);
  if (msg.topic.includes('\0')) throw new RangeError(`${what}.topic must not contain NUL characters`);
  if (!msg.topic.isWellFormed()) throw makeError(ErrorCode.INVALID_UTF8, `${what}.topic is not a well-formed string (it holds a lone surrogate)`);
  const value = msg.value === null || msg.value === undefined ? null : copyBytes(bytesArg(msg.value, `${what}.value`));
  const key = msg.key === null || msg.key === undefined ? null : copyBytes(bytesArg(msg.key, `${what}.key`));
  const partition = msg.partition === undefined || msg.partition === null ? abi.CONSTANTS.PARTITION_ANY : intArg(msg.partition, `${what}.partition`, 32);
  if (partition < -1) throw new RangeError(`${what}.partition must be >= 0, or -1 for Kafka's key hashing, got ${partition}`);
  const headers = headersArg(msg.headers, `${what}.headers`);
  return { topic: msg.topic, partition, key, value, headers };
}

/** options.offsets of a guarded write: the krabka_offset_t array, or null. */
function offsetsOption(o, what) {
  return o.offsets === undefined || o.offsets === null ? null : input.offsetStructs(o.offsets, what);
}

const EMPTY = Buffer.alloc(1); // a valid pointer for a zero-length key or value

/**
 * The krabka_message_t array of a guarded write. The library copies the
 * messages (topic, key, value, headers) before produce_async returns, so
 * JavaScript memory is passed as it is.
 */
function messageStructs(msgs) {
  const size = koffi.sizeof(native().types.krabka_message_t);
  return msgs.map((m) => ({
    size,
    topic: m.topic,
    partition: m.partition,
    key: m.key === null ? null : m.key.length ? m.key : EMPTY,
    key_len: m.key === null ? 0 : m.key.length,
    value: m.value === null ? null : m.value.length ? m.value : EMPTY,
    value_len: m.value === null ? 0 : m.value.length,
    headers:
      m.headers.length === 0
        ? null
        : koffi.as(
            m.headers.map((h) => ({ key: h.key, value: h.value.length ? h.value : EMPTY, value_len: h.value.length })),
            'krabka_header_t *',
          ),
    header_count: m.headers.length,
  }));
}

const closedEnd = () => Object.freeze({ state: 'CLOSED', reason: 'the leadership was closed', error: makeError(ErrorCode.NOT_LEADER, 'the leadership was closed') });

/**
 * The Promise of Leadership.ended over st ({ handle, closed, end }). Its
 * closures hold st, not the Leadership (which stays collectable). The wait
 * holds the event loop only once the leadership is known to have ended
 * (over()): then its event is on the way.
 */
function endedPromise(st) {
  if (st.closed) return Promise.resolve(closedEnd());
  const over = () => st.closed || values.leadershipStateNumber(st.handle) !== abi.LeadershipState.ACTIVE;
  const c = calls.begin({
    what: 'ended',
    over,
    readErrors: true,
    start: (q, tag) => fns().krabka_leadership_ended_async(st.handle, q, tag),
    read: (ev, info) =>
      Object.freeze({ state: values.readEndState(ev, info.errbuf), reason: info.reason, error: info.code ? makeError(info.code, info.reason) : null }),
  });
  st.end = c;
  c.holdIfOver(); // it may have ended already
  return c.promise.catch(() => closedEnd());
}

/**
 * A won role. Holds the fencing token the cluster minted for it. Guarded
 * writes (produce) go through the role's transactional producer, so the
 * broker rejects them with FencedError once another member took over.
 */
class Leadership {
  #handle;
  #closed = null;
  #ended = null;
  // What the `ended` waiter needs, without a reference to the Leadership:
  // the handle, whether close() was called and the waiter (null: `ended`
  // was not read).
  #st;
  #roleBytes;
  #memberBytes;

  /** @internal */
  constructor(handle, roleBytes, memberBytes) {
    this.#handle = handle;
    this.#st = { handle, closed: false, end: null };
    this.#roleBytes = roleBytes;
    this.#memberBytes = memberBytes;
    finalizer.register(this, handle, this);
  }

  /** The role name (decoded as UTF-8). */
  get role() {
    return this.#roleBytes.toString('utf8');
  }

  /** The member id that holds the role (decoded as UTF-8). */
  get member() {
    return this.#memberBytes.toString('utf8');
  }

  #live() {
    if (this.#closed) throw makeError(ErrorCode.INVALID_HANDLE, 'the leadership was closed (destroyed)');
    return this.#handle;
  }

  /** The fencing token this leadership holds. Never blocks. */
  get token() {
    return values.leadershipToken(this.#live());
  }

  /** The lease this leadership last wrote. Never blocks. */
  get lease() {
    return values.leadershipLease(this.#live());
  }

  /**
   * The term's metadata as last written (krabka.meta on its lease records):
   * a Buffer of its own, or null for none. Set by acquire's
   * options.metadata, changed by setMetadata. Never blocks.
   */
  get metadata() {
    return values.leadershipMetadata(this.#live());
  }

  /** 'ACTIVE', 'FENCED', 'EXPIRED', 'RESIGNED' or 'CLOSED' (its client was
   *  closed): the names of krabka_leadership_state_t. Never blocks. */
  get state() {
    return values.leadershipState(this.#live());
  }

  /** True while state is 'ACTIVE'. Never blocks. */
  get active() {
    return this.state === 'ACTIVE';
  }

  /**
   * A Promise that resolves when the leadership is no longer active, with
   * { state, reason, error }: the final state ('FENCED', 'EXPIRED',
   * 'RESIGNED', 'CLOSED'), the reason text and the KrabkaError its calls now
   * reject with. It never rejects. While the leadership is active it does
   * not keep the process alive on its own; once it ended (its resign, close
   * or a refused write returned, or the client was closed) it resolves
   * before the process can exit. The same Promise on every access.
   */
  get ended() {
    if (!this.#ended) this.#ended = endedPromise(this.#st);
    return this.#ended;
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    if (this.#closed) return `Leadership(${this.role}, ${this.member}, closed)`;
    return `Leadership(${this.role}, ${this.member}, ${this.token}, ${this.state})`;
  }

  /** True when the renew interval has passed since the lease was granted
   *  (or the deadline is near). Never blocks. */
  renewDue() {
    return values.leadershipRenewDue(this.#live());
  }

  // One *_async call of this leadership. After one that may have ended the
  // leadership (a resign, or a call that failed: a refused write, say), a
  // pending `ended` holds the loop if it did. A renew or write that
  // succeeded ended nothing: no call into the library for it.
  #call(what, signal, start, read) {
    return calls.submit({ what, signal, start: (q, tag, eb) => start(this.#live(), q, tag, eb), read, done: this.#afterCall(what) });
  }

  #afterCall(what) {
    const st = this.#st;
    return (ok) => {
      if (st.end && (!ok || what === 'resign')) st.end.holdIfOver();
    };
  }

  /**
   * Writes a fresh lease under the same token. Rejects with FencedError
   * (stop at once) or LeaseExpiredError (the leadership ended by itself).
   */
  renew(options) {
    const t = timeoutArg(options, 'renew');
    const signal = signalArg(options, 'renew');
    return this.#call('renew', signal, (h, q, tag, eb) => fns().krabka_leadership_renew_async(h, t, q, tag, eb, eb.length));
  }

  /**
   * The check before a leader-only read: one request (DescribeTransactions)
   * asks the transaction coordinator whether this leadership's token is
   * still the role's current one. Resolves to true (nobody minted the role
   * since) or false (another member, or a fence, minted a newer epoch: the
   * broker refuses this leadership's writes, so do not serve the read).
   * false does not end the leadership; the broker's refusal of its next
   * write does. Waits for the renewal or write in flight first. Rejects
   * with the error the leadership ended with (FencedError,
   * LeaseExpiredError, NOT_LEADER, CLOSED) once it ended; a TIMEOUT or
   * transport error leaves it as it was. options: timeoutMs (default
   * request.timeout.ms), signal.
   */
  confirm(options) {
    const t = timeoutArg(options, 'confirm');
    const signal = signalArg(options, 'confirm');
    return this.#call('confirm', signal, (h, q, tag, eb) => fns().krabka_leadership_confirm_async(h, t, q, tag, eb, eb.length), (ev, info) => {
      const out = [0];
      check(fns().krabka_event_confirmed(ev, out, info.errbuf, info.errbuf.length), info.errbuf);
      return out[0] !== 0;
    });
  }

  /**
   * Changes the term's metadata (a Buffer or Uint8Array; null: none from
   * now on): a renewal whose lease record carries it, so the lease and its
   * metadata change in one record and no reader sees it with another
   * term's lease. Rejects as renew does; over 4096 bytes with KrabkaError
   * INVALID_ARG before anything is written.
   */
  setMetadata(data, options) {
    if (data === undefined) throw new TypeError('setMetadata: data must be a Buffer or a Uint8Array, or null for none, got undefined');
    const b = metadataArg(data, 'setMetadata: data');
    const t = timeoutArg(options, 'setMetadata');
    const signal = signalArg(options, 'setMetadata');
    return this.#call('setMetadata', signal, (h, q, tag, eb) => fns().krabka_leadership_set_metadata_async(h, b, b ? b.length : 0, t, q, tag, eb, eb.length));
  }

  /**
   * The guarded write of one message: `await leadership.produce(topic, value,
   * { key, partition, timeoutMs })` resolves to { partition, offset } (offset
   * a bigint). value and key are Buffers or strings (UTF-8), or null.
   * partition -1 (the default) lets Kafka's key hashing choose.
   * headers: the record's headers, an object of name -> value or an array
   * of [name, value] pairs (values Buffers or strings); names starting with
   * `krabka.` are reserved (KrabkaError INVALID_ARG). With
   * krabka.produce.token.header (default true) every guarded write also
   * carries krabka.token = "<producer id>:<epoch>" of this leadership's
   * token, which a consumer checks with a Verifier.
   * offsets: the input positions this write consumed, an array of
   * { topic, partition, offset } (Input.position()): they commit for the
   * role's pipeline group in the same transaction, or neither does; the
   * broker refuses a deposed leader's offsets with its write (FencedError).
   * An offset of a partition no Input of this leadership read, or one that
   * goes backwards, rejects with INVALID_ARG before anything is written.
   */
  produce(topic, value, options) {
    if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
      throw new TypeError(`produce: options must be an object such as { key, partition, timeoutMs }, got ${describe(options)}`);
    }
    const o = options || {};
    const msg = messageArg({ topic, value, key: o.key, partition: o.partition, headers: o.headers }, 'message');
    const t = timeoutArg(o, 'produce');
    const signal = signalArg(o, 'produce');
    const offs = offsetsOption(o, 'produce');
    return this.#produce('produce', [msg], t, signal, offs).then((r) => r[0]);
  }

  /**
   * Several guarded writes in one transaction: messages is an array of
   * { topic, value, key?, partition?, headers? } (headers as in produce).
   * Resolves to one { partition, offset } per message, in order.
   * options.offsets as in produce (with offsets, messages may be empty:
   * the offsets alone are committed).
   */
  produceBatch(messages, options) {
    if (!Array.isArray(messages)) throw new TypeError(`messages must be an array, got ${describe(messages)}`);
    if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
      throw new TypeError(`produceBatch: options must be an object such as { timeoutMs, offsets }, got ${describe(options)}`);
    }
    const offs = offsetsOption(options || {}, 'produceBatch');
    if (messages.length === 0 && offs === null) throw new RangeError('messages must not be empty');
    const msgs = messages.map((m, i) => messageArg(m, `messages[${i}]`));
    const t = timeoutArg(options, 'produceBatch');
    const signal = signalArg(options, 'produceBatch');
    return this.#produce('produceBatch', msgs, t, signal, offs);
  }

  /**
   * Starts reading topics (an array of names; every partition of each)
   * read_committed from the offsets committed for the role's pipeline
   * group (where the last leader's guarded writes with offsets left off;
   * the earliest offset where none was committed). Resolves to an Input.
   * Rejects with UNKNOWN_TOPIC_OR_PARTITION for a topic that does not
   * exist, INVALID_ARG for an empty, over-long or illegal name (TypeError
   * for one that is not a string), and the leadership's end once it ended.
   * options: timeoutMs (default request.timeout.ms), signal.
   */
  consume(topics, options) {
    return input.consume(this, () => this.#live(), topics, options, this.#afterCall('consume'));
  }

  #produce(what, msgs, t, signal, offs) {
    return calls.submit({
      what,
      signal,
      start: (q, tag, eb) =>
        offs === null
          ? fns().krabka_leadership_produce_async(this.#live(), messageStructs(msgs), msgs.length, t, q, tag, eb, eb.length)
          : fns().krabka_leadership_produce_offsets_async(this.#live(), offs, offs.length, messageStructs(msgs), msgs.length, t, q, tag, eb, eb.length),
      // One result per message proves the write (a failed call has none).
      readOk: (ev, errbuf) => {
        const out = values.readResults(ev, msgs.length, errbuf);
        return out.length === msgs.length ? out : undefined;
      },
      read: (ev, info) => {
        const out = values.readResults(ev, msgs.length, info.errbuf);
        if (out.length !== msgs.length) throw makeError(ErrorCode.INTERNAL, `${what}: ${msgs.length} messages written, the library reported ${out.length} results`);
        return out;
      },
      done: this.#afterCall(what),
    });
  }

  /**
   * Gives the role up and steps aside: an expired lease and a tombstone of
   * this member's registration, in one transaction under this token, so the
   * first standby challenges at once. A courtesy, not a fence: stop guarded
   * writes first.
   * The state is 'RESIGNED' afterwards even if the write failed, except
   * when the broker refused it (FencedError: the leadership was already
   * superseded): then it is 'FENCED'.
   *
   * options.successor (a member id): hand over to that member (header
   * krabka.successor on the expired lease): if it is registered it
   * challenges at once and every other standby one stagger later than its
   * rank alone; a member that is not registered is ignored (the first
   * standby takes over as after a plain resign). The winner by name prunes
   * nobody ranked ahead of it. The handoff is a preference, not a promise
   * (docs/PROTOCOL.md 11.3): a member of another implementation (registered
   * without krabka.rejoin) ignores the header and challenges at its own
   * rank, so when the successor is one, or one ranks ahead of it, another
   * member may take the role (one mint wins: never two holders). Watch the
   * role to learn who took over.
   */
  resign(options) {
    const t = timeoutArg(options, 'resign');
    const signal = signalArg(options, 'resign');
    const o = options || {};
    const successor = o.successor === undefined || o.successor === null ? null : copyBytes(nameBytes(o.successor, 'resign: options.successor'));
    return this.#call('resign', signal, (h, q, tag, eb) =>
      fns().krabka_leadership_resign_async(h, successor && (successor.length ? successor : EMPTY), successor ? successor.length : 0, t, q, tag, eb, eb.length),
    );
  }

  /** Releases the leadership without resigning (standbys take over at the
   *  lease deadline). Idempotent: every call returns the same Promise. */
  close() {
    if (!this.#closed) {
      finalizer.unregister(this);
      this.#st.closed = true;
      const st = this.#st;
      this.#closed = calls.destroyOnPool('leadership', this.#handle).then((code) => {
        if (st.end) st.end.holdIfOver(); // its CLOSED end event is on the way
        if (code !== 0 && code !== ErrorCode.INVALID_HANDLE) throw makeError(code, 'destroying the leadership');
      });
      if (st.end) st.end.holdIfOver();
    }
    return this.#closed;
  }

  /** Same as close(). */
  [Symbol.asyncDispose]() {
    return this.close();
  }
}

module.exports = { Leadership, messageArg, messageStructs };
