'use strict';
// Client and Leadership: the calls that talk to the cluster. Every call that
// can block runs on the libuv thread pool through koffi's `fn.async` and
// returns a Promise; getters that never block (token, state, lease,
// renewDue) are synchronous.
//
// Every blocking call takes options.signal (an AbortSignal): when it aborts,
// the Promise rejects at once with an AbortError (name 'AbortError', code
// 'ABORT_ERR', cause: the signal's reason). The call already handed to the
// library cannot be cancelled: it finishes in the background and its result
// is disposed of (a leadership won by an aborted acquire or tryAcquire is
// resigned and released; a watch opened by an aborted watch() is closed). An
// aborted renew, produce, resign or leave may still have taken effect: the
// AbortError only says that the caller stopped waiting.

const { koffi, native, T, ERRSTR_SIZE, NAME_BUF } = require('./native');

// krabka_produce_result_t as laid out by the C compiler (test/layout.test.js).
const RESULT_SIZE = koffi.sizeof(T.produceResult);
const RESULT_PARTITION = koffi.offsetof(T.produceResult, 'partition');
const RESULT_OFFSET = koffi.offsetof(T.produceResult, 'offset');
const { check, makeError, ErrorCode } = require('./errors');
const { nameBytes, bytesArg, ptr, intArg, timeoutArg, signalArg, abortError, abortable, big, describe } = require('./args');
const { FencingToken, leaseFromC, nameFrom } = require('./pure');
const { metadataArg, metadataTooLong, metadataFrom, sameBytes, headersArg } = require('./headers');

const EventEmitter = require('node:events');
const events = require('./events');

const fns = () => native().fns;
const syncErr = Buffer.alloc(ERRSTR_SIZE);

// ---------------------------------------------------------------------------
// Thread pool accounting: a blocked acquire holds one libuv worker thread for
// as long as it waits; so do fs, dns.lookup, crypto and zlib work. Warn once
// when our in-flight calls reach the pool size.
const poolSize = () => {
  const n = Number.parseInt(process.env.UV_THREADPOOL_SIZE || '', 10);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 1024) : 4;
};
let inFlight = 0;
let warned = false;

function callAsync(fn, args) {
  return new Promise((resolve, reject) => {
    inFlight++;
    if (!warned && inFlight >= poolSize()) {
      warned = true;
      process.emitWarning(
        `krabka-coord: ${inFlight} blocking calls are in flight and the libuv thread pool has ${poolSize()} threads; ` +
          'further calls and fs/dns/crypto work wait for a free thread. Start node with a larger UV_THREADPOOL_SIZE.',
        { code: 'KRABKA_THREADPOOL' },
      );
    }
    try {
      fn.async(...args, (err, res) => {
        inFlight--;
        if (err) reject(err);
        else resolve(res);
      });
    } catch (e) {
      inFlight--;
      reject(e);
    }
  });
}

/** Number of krabka-coord calls currently running on (or queued for) the libuv pool. */
const pendingCalls = () => inFlight;

const copyBytes = (b) => Buffer.from(b); // inputs of async calls are private copies

// Handles that were never closed are destroyed (off the JS thread) when their
// owner is garbage collected.
const finalizer = new FinalizationRegistry(({ fn, handle }) => {
  try {
    fn.async(handle, () => {});
  } catch {
    /* process is exiting */
  }
});

// ---------------------------------------------------------------------------

const STATES = ['active', 'fenced', 'expired', 'resigned', 'closed'];

// A leadership the library won after its call was aborted: nobody will use
// it, so it is resigned (standbys take over at once) and released, never
// left holding the role until its lease runs out.
function giveUp(leadership) {
  leadership
    .resign()
    .catch(() => {})
    .finally(() => leadership.close().catch(() => {}));
}

// Rejects at once, without starting the call, when the signal already aborted.
function startAbortable(signal, what, start, onLate) {
  if (signal && signal.aborted) return Promise.reject(abortError(signal, what));
  return abortable(signal, what, start(), onLate);
}

// The metadata options of acquire and tryAcquire: { term, member } (Buffers
// or null). Type errors throw; over the limit is returned as `error`, the
// library's INVALID_ARG, with which the call rejects before anything is
// written.
function acquireMeta(options, what) {
  const o = options || {};
  const term = metadataArg(o.metadata, `${what}: options.metadata`);
  const member = metadataArg(o.memberMetadata, `${what}: options.memberMetadata`);
  const error = metadataTooLong(term, `${what}: options.metadata`) || metadataTooLong(member, `${what}: options.memberMetadata`);
  return { term, member, error };
}

const NO_META = Object.freeze({ term: null, member: null });
const sameMeta = (a, b) => sameBytes(a.term, b.term) && sameBytes(a.member, b.member);

function configValue(key, value) {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`config '${key}' must be a finite number, got ${value}`);
    return String(value);
  }
  if (typeof value === 'bigint') return value.toString();
  throw new TypeError(`config '${key}' must be a string, number or boolean, got ${describe(value)}`);
}

/**
 * A coordination client over one Kafka cluster.
 *
 *   const client = new Client({ 'bootstrap.servers': 'localhost:9092', 'krabka.lease.ms': 30000 });
 *
 * Keys are Kafka client property names (bootstrap.servers, client.id,
 * security.protocol, sasl.*, ssl.ca.location, request.timeout.ms) and
 * krabka.* coordination settings (docs/CONFIGURATION.md). The config is
 * checked at once (KrabkaError UNKNOWN_CONFIG / INVALID_CONFIG); the client
 * connects on its first blocking call.
 */
class Client extends EventEmitter {
  #handle;
  #closed = null; // the close() promise once closing
  #logTag;
  // The metadata of acquires, per (role, member): the library keeps what
  // krabka_client_set_metadata stored for a pair and an acquire reads it
  // when it starts, on another thread (for acquire, whenever its goroutine
  // runs). So the acquires of one pair in flight at once all want the same
  // metadata: one that wants other metadata waits until they completed.
  // key -> { current, running, queue }.
  #gates = new Map();

  constructor(config = {}) {
    if (config === null || typeof config !== 'object' || Array.isArray(config)) {
      throw new TypeError(`config must be an object of Kafka property names, got ${describe(config)}`);
    }
    const entries = Object.entries(config).map(([k, v]) => {
      const s = configValue(k, v);
      if (k.includes('\0') || s.includes('\0')) throw new RangeError(`config '${k}' must not contain NUL characters`);
      return [k, s];
    });
    super();
    const n = fns();
    const conf = n.krabka_conf_new();
    if (!conf) throw makeError(ErrorCode.INTERNAL, 'krabka_conf_new failed: the library is unusable');
    try {
      for (const [k, v] of entries) {
        syncErr[0] = 0;
        check(n.krabka_conf_set(conf, k, v, syncErr, syncErr.length), syncErr);
      }
      // Log lines come back through the process's event queue and are
      // emitted as 'log' events on the JavaScript thread.
      const tag = events.logTag((level, message) => this.emit('log', { level, message }));
      check(n.krabka_conf_set_log_queue(conf, events.queueHandle(), tag));
      const out = [null];
      syncErr[0] = 0;
      try {
        check(n.krabka_client_new(conf, out, syncErr, syncErr.length), syncErr);
      } catch (e) {
        events.dropLogTag(tag);
        throw e;
      }
      this.#logTag = tag;
      this.#handle = out[0];
    } finally {
      n.krabka_conf_destroy(conf);
    }
    finalizer.register(this, { fn: n.krabka_client_destroy, handle: this.#handle }, this);
  }

  /** True once close() was called. */
  get closed() {
    return this.#closed !== null;
  }

  #live() {
    if (this.#closed) throw makeError(ErrorCode.CLOSED, 'the client is closed');
    return this.#handle;
  }

  /**
   * Runs entry.start(release) once the library holds entry.want for the
   * pair (r, m) and no acquire of the pair with other metadata is in flight;
   * release() ends the entry's turn (after the C call completed). Returns a
   * function that withdraws the entry if it has not started yet (true) or
   * returns false.
   */
  #enterGate(r, m, entry) {
    const key = `${r.toString('hex')}:${m.toString('hex')}`;
    let g = this.#gates.get(key);
    if (!g) {
      g = { current: NO_META, running: 0, queue: [] };
      this.#gates.set(key, g);
    }
    g.queue.push(entry);
    this.#pumpGate(key, g, r, m);
    return () => {
      const i = g.queue.indexOf(entry);
      if (i < 0) return false;
      g.queue.splice(i, 1);
      this.#pumpGate(key, g, r, m);
      return true;
    };
  }

  #pumpGate(key, g, r, m) {
    while (g.queue.length > 0) {
      const e = g.queue[0];
      if (g.running > 0 && !sameMeta(e.want, g.current)) break;
      g.queue.shift();
      try {
        if (!sameMeta(e.want, g.current)) {
          const t = e.want.term;
          const mm = e.want.member;
          syncErr[0] = 0;
          check(
            fns().krabka_client_set_metadata(this.#live(), ptr(r), r.length, ptr(m), m.length, t, t ? t.length : 0, mm, mm ? mm.length : 0, syncErr, syncErr.length),
            syncErr,
          );
          g.current = e.want;
        }
      } catch (err) {
        e.fail(err);
        continue;
      }
      g.running++;
      let released = false;
      e.start(() => {
        if (released) return;
        released = true;
        g.running--;
        this.#pumpGate(key, g, r, m);
      });
    }
    if (g.running === 0 && g.queue.length === 0 && g.current === NO_META) this.#gates.delete(key);
  }

  /**
   * Takes `role` for `member`, waiting as long as the succession rules say.
   * Resolves to a Leadership. timeoutMs 0 (the default) waits without limit;
   * otherwise rejects with KrabkaError TIMEOUT. The library waits on its own
   * threads and completes the call through its event queue on the
   * JavaScript thread: no libuv pool thread is held, so any number of
   * acquires can wait at once. A pending acquire keeps the process alive,
   * unless it was aborted.
   *
   * options.signal (an AbortSignal): when it aborts, the Promise rejects at
   * once with an AbortError (name 'AbortError', code 'ABORT_ERR') and the
   * acquire no longer keeps the process alive, so a process with a pending
   * unbounded acquire can exit. The library's wait cannot be cancelled: it
   * goes on while the process and the client live, and a role it wins after
   * the abort is resigned and released at once, never held.
   *
   * options.metadata (Buffer or Uint8Array, at most 4096 bytes): the term's
   * metadata, on every lease record of the term this acquire wins (an
   * address clients should use, say); options.memberMetadata: the member's
   * own, on its registration (roster entries report it). Over 4096 bytes
   * rejects with KrabkaError INVALID_ARG before anything is written. The
   * library keeps the metadata per (role, member) of the client, so
   * concurrent acquires of one pair with different metadata run one after
   * another (each waits until the ones in flight completed).
   */
  acquire(role, member, options) {
    const r = copyBytes(nameBytes(role, 'role'));
    const m = copyBytes(nameBytes(member, 'member'));
    const t = timeoutArg(options, 'acquire');
    const signal = signalArg(options, 'acquire');
    const meta = acquireMeta(options, 'acquire');
    if (meta.error) return Promise.reject(meta.error);
    if (signal && signal.aborted) return Promise.reject(abortError(signal, 'acquire'));
    return new Promise((resolve, reject) => {
      this.#live();
      let aborted = false;
      let tag = 0;
      let withdraw = null;
      // While it waits for its turn at the pair's metadata, nothing of the
      // library holds the event loop for it: a timer does.
      let hold = null;
      const onAbort = () => {
        aborted = true;
        if (withdraw && withdraw()) {
          clearInterval(hold);
          reject(abortError(signal, 'acquire'));
          return;
        }
        events.release(tag);
        reject(abortError(signal, 'acquire'));
      };
      const start = (release) => {
        clearInterval(hold);
        let h;
        try {
          h = this.#live();
        } catch (e) {
          release();
          if (signal) signal.removeEventListener('abort', onAbort);
          reject(e);
          return;
        }
        tag = events.expect((e) => {
          release();
          if (signal) signal.removeEventListener('abort', onAbort);
          if (aborted) {
            if (!e.err && e.leadership) giveUp(new Leadership(this, e.leadership, r, m));
            return;
          }
          if (e.err) reject(events.eventError(e));
          else resolve(new Leadership(this, e.leadership, r, m));
        }, !aborted);
        const eb = Buffer.alloc(ERRSTR_SIZE);
        try {
          check(fns().krabka_client_acquire_async(h, ptr(r), r.length, ptr(m), m.length, t, events.queueHandle(), tag, eb, eb.length), eb);
        } catch (e) {
          events.forget(tag);
          release();
          if (signal) signal.removeEventListener('abort', onAbort);
          reject(e);
        }
      };
      const fail = (e) => {
        clearInterval(hold);
        if (signal) signal.removeEventListener('abort', onAbort);
        reject(e);
      };
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      const want = meta.term || meta.member ? { term: meta.term, member: meta.member } : NO_META;
      hold = setInterval(() => {}, 1 << 30);
      withdraw = this.#enterGate(r, m, { want, start, fail });
    });
  }

  /**
   * Watches `role` without taking part (no epoch, no registration).
   * Resolves to a Watch, an async iterator of events ({ kind, role, holder,
   * token, prevHolder, prevToken, lease, metadata, roster, offset, atMs });
   * the first events describe the current state. options.renewals: also
   * LEASE_RENEWED (a change of the term's metadata is delivered as
   * LEASE_RENEWED without it). Resolves once the view caught up (bounded by timeoutMs,
   * default request.timeout.ms).
   */
  watch(role, options) {
    const { Watch } = require('./watch');
    const r = copyBytes(nameBytes(role, 'role'));
    const t = timeoutArg(options, 'watch');
    const flags = options && options.renewals ? 1 : 0;
    const signal = signalArg(options, 'watch');
    return startAbortable(
      signal,
      'watch',
      async () => {
        const h = this.#live();
        const out = [null];
        const eb = Buffer.alloc(ERRSTR_SIZE);
        check(await callAsync(fns().krabka_client_watch, [h, ptr(r), r.length, flags, t, out, eb, eb.length]), eb);
        return new Watch(out[0], r.toString('utf8'));
      },
      (w) => w.close(),
    );
  }

  /**
   * The client's statistics (schema: docs/STATISTICS.md): counters and
   * gauges per client and per role (`roles`). Never blocks.
   */
  stats() {
    const h = this.#live();
    const out = [null];
    const len = [0];
    check(fns().krabka_client_stats_json(h, out, len));
    try {
      return JSON.parse(koffi.decode(out[0], 'char', Number(len[0])));
    } finally {
      fns().krabka_free(out[0]);
    }
  }

  /**
   * One pass of acquire that never waits for another member's lease.
   * Resolves to { leadership, retryAt }: leadership is a Leadership when the
   * role was won (retryAt null), or null when it was not, and then retryAt
   * (bigint epoch milliseconds) says when trying again can change the answer.
   * options.metadata and options.memberMetadata as for acquire.
   */
  tryAcquire(role, member, options) {
    const r = copyBytes(nameBytes(role, 'role'));
    const m = copyBytes(nameBytes(member, 'member'));
    const t = timeoutArg(options, 'tryAcquire');
    const signal = signalArg(options, 'tryAcquire');
    const meta = acquireMeta(options, 'tryAcquire');
    if (meta.error) return Promise.reject(meta.error);
    const want = meta.term || meta.member ? { term: meta.term, member: meta.member } : NO_META;
    return startAbortable(
      signal,
      'tryAcquire',
      async () => {
        this.#live();
        // Its turn at the pair's metadata (see #gates), then the call.
        const release = await new Promise((resolve, reject) => this.#enterGate(r, m, { want, start: resolve, fail: reject }));
        let code;
        const out = [null];
        const retry = [0];
        const eb = Buffer.alloc(ERRSTR_SIZE);
        try {
          code = await callAsync(fns().krabka_client_try_acquire, [this.#live(), ptr(r), r.length, ptr(m), m.length, t, out, retry, eb, eb.length]);
        } finally {
          release();
        }
        check(code, eb);
        if (out[0]) return { leadership: new Leadership(this, out[0], r, m), retryAt: null };
        return { leadership: null, retryAt: big(retry[0]) };
      },
      (res) => {
        if (res.leadership) giveUp(res.leadership);
      },
    );
  }

  /**
   * Removes member's registration of role (a tombstone of it): the member
   * leaves the succession order; a later acquire registers it again at the
   * tail. Does not end a leadership. Closing the client leaves by itself the
   * roles it registered in and does not hold (krabka.leave.on.close, default
   * true). Resolves when the write is done.
   */
  leave(role, member, options) {
    const r = copyBytes(nameBytes(role, 'role'));
    const m = copyBytes(nameBytes(member, 'member'));
    const t = timeoutArg(options, 'leave');
    const signal = signalArg(options, 'leave');
    return startAbortable(signal, 'leave', async () => {
      const h = this.#live();
      const eb = Buffer.alloc(ERRSTR_SIZE);
      const code = await callAsync(fns().krabka_client_leave, [h, ptr(r), r.length, ptr(m), m.length, t, eb, eb.length]);
      check(code, eb);
    });
  }

  /**
   * The third-party check of a role: the coordinator's current token and the
   * role's partition. Takes no epoch and joins no group. Resolves to a Status.
   */
  describe(role, options) {
    const r = copyBytes(nameBytes(role, 'role'));
    const t = timeoutArg(options, 'describe');
    const signal = signalArg(options, 'describe');
    return startAbortable(signal, 'describe', async () => {
      const h = this.#live();
      const out = [null];
      const eb = Buffer.alloc(ERRSTR_SIZE);
      const code = await callAsync(fns().krabka_client_describe, [h, ptr(r), r.length, t, out, eb, eb.length]);
      check(code, eb);
      return readStatus(out[0], r.toString('utf8'));
    });
  }

  /**
   * Closes the client: calls pending in other threads reject with
   * KrabkaError CLOSED, its leaderships end without resigning (state
   * 'closed'). Idempotent: every call returns the same Promise.
   */
  close() {
    if (!this.#closed) {
      finalizer.unregister(this);
      this.#closed = callAsync(fns().krabka_client_destroy, [this.#handle]).then((code) => {
        events.drain(); // the last lines and the CLOSED completions
        events.dropLogTag(this.#logTag);
        // Its leaderships ended (closed): their `ended` events are on the way.
        events.holdEndedIfOver();
        if (code !== 0 && code !== ErrorCode.INVALID_HANDLE) throw makeError(code, 'closing the client');
      });
    }
    return this.#closed;
  }

  /** Same as close() (for `await using client = new Client(...)`). */
  [Symbol.asyncDispose]() {
    return this.close();
  }

}

function readStatus(handle, roleName) {
  const n = fns();
  try {
    const has = [0];
    const holderBuf = Buffer.alloc(NAME_BUF);
    const len = [0];
    check(n.krabka_status_holder(handle, has, holderBuf, holderBuf.length, len));
    const holder = has[0] ? holderBuf.toString('utf8', 0, Number(len[0])) : null;

    const tok = {};
    check(n.krabka_status_token(handle, tok));
    const cur = [0];
    check(n.krabka_status_current(handle, cur));
    const hasLease = [0];
    const l = {};
    check(n.krabka_status_lease(handle, hasLease, l));
    const part = [0];
    check(n.krabka_status_partition(handle, part));
    const skipped = [0];
    check(n.krabka_status_skipped(handle, skipped));
    const removed = [0];
    check(n.krabka_status_removed(handle, removed));
    const count = [0];
    check(n.krabka_status_roster_count(handle, count));
    const roster = [];
    for (let i = 0; i < Number(count[0]); i++) {
      const e = {};
      check(n.krabka_status_roster_entry(handle, i, e));
      roster.push(
        Object.freeze({
          member: nameFrom(e.member, e.member_len),
          offset: big(e.offset),
          registeredAt: big(e.registered_at),
          rank: e.rank,
          metadata: metadataFrom((buf, size, len) => n.krabka_status_roster_metadata(handle, i, buf, size, len)),
        }),
      );
    }
    const metadata = metadataFrom((buf, size, len) => n.krabka_status_metadata(handle, buf, size, len));
    return Object.freeze({
      role: roleName,
      partition: part[0],
      token: FencingToken.fromC(tok),
      current: cur[0] === 1,
      holder,
      lease: hasLease[0] ? leaseFromC(l) : null,
      metadata,
      roster: Object.freeze(roster),
      skipped: Number(skipped[0]),
      removed: Number(removed[0]),
    });
  } finally {
    n.krabka_status_destroy(handle);
  }
}

// ---------------------------------------------------------------------------

/** Stable native memory for the bytes of a guarded write (freed after the call). */
function nativeCopy(bytes, allocs) {
  if (bytes === null) return [null, 0];
  const p = koffi.alloc('uint8_t', Math.max(bytes.length, 1));
  allocs.push(p);
  if (bytes.length) new Uint8Array(koffi.view(p, bytes.length)).set(bytes);
  return [p, bytes.length];
}

function messageArg(msg, what) {
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) throw new TypeError(`${what} must be an object, got ${describe(msg)}`);
  if (typeof msg.topic !== 'string' || msg.topic === '') throw new TypeError(`${what}.topic must be a non-empty string, got ${describe(msg.topic)}`);
  if (msg.topic.includes('\0')) throw new RangeError(`${what}.topic must not contain NUL characters`);
  const value = msg.value === null || msg.value === undefined ? null : copyBytes(bytesArg(msg.value, `${what}.value`));
  const key = msg.key === null || msg.key === undefined ? null : copyBytes(bytesArg(msg.key, `${what}.key`));
  const partition = msg.partition === undefined || msg.partition === null ? -1 : intArg(msg.partition, `${what}.partition`, 32);
  if (partition < -1) throw new RangeError(`${what}.partition must be >= 0, or -1 for Kafka's key hashing, got ${partition}`);
  const headers = headersArg(msg.headers, `${what}.headers`);
  return { topic: msg.topic, partition, key, value, headers };
}

/**
 * The Promise of Leadership.ended over st ({ handle, closed, tag }). Its
 * closures hold st, not the Leadership. over(): the leadership is known to
 * have ended (close() was called, or its state is no longer active), so its
 * event is on the way and the wait keeps the process alive.
 */
function endedPromise(st) {
  const over = () => {
    if (st.closed) return true;
    const out = [0];
    return fns().krabka_leadership_state(st.handle, out) !== 0 || out[0] !== 0;
  };
  return new Promise((resolve) => {
    const closedResult = () =>
      Object.freeze({ state: 'closed', reason: 'the leadership was closed', error: makeError(ErrorCode.NOT_LEADER, 'the leadership was closed') });
    const tag = events.expectEnd((e) => {
      const state = STATES[e.state] ?? `unknown(${e.state})`;
      resolve(Object.freeze({ state, reason: e.errstr, error: e.err ? events.eventError(e) : null }));
    }, over);
    const code = st.closed ? ErrorCode.INVALID_HANDLE : fns().krabka_leadership_ended_async(st.handle, events.queueHandle(), tag);
    if (code !== 0) {
      events.forget(tag);
      resolve(closedResult());
      return;
    }
    st.tag = tag;
    events.holdIfOver(tag); // it may have ended already
  });
}

/**
 * A won role. Holds the fencing token the cluster minted for it. Guarded
 * writes (produce) go through the role's transactional producer, so the
 * broker rejects them with FencedError once another member took over.
 */
class Leadership {
  #client;
  #handle;
  #closed = null;
  #ended = null;
  // What the `ended` waiter needs, without a reference to the Leadership
  // (which stays collectable): the handle, whether close() was called and
  // the waiter's tag (0: `ended` was not read).
  #end;
  #roleBytes;
  #memberBytes;

  /** @internal */
  constructor(client, handle, roleBytes, memberBytes) {
    this.#client = client;
    this.#handle = handle;
    this.#end = { handle, closed: false, tag: 0 };
    this.#roleBytes = roleBytes;
    this.#memberBytes = memberBytes;
    finalizer.register(this, { fn: fns().krabka_leadership_destroy, handle }, this);
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
    const out = {};
    check(fns().krabka_leadership_token(this.#live(), out));
    return FencingToken.fromC(out);
  }

  /** The lease this leadership last wrote. Never blocks. */
  get lease() {
    const out = {};
    check(fns().krabka_leadership_lease(this.#live(), out));
    return leaseFromC(out);
  }

  /**
   * The term's metadata as last written (krabka.meta on its lease records):
   * a Buffer of its own, or null for none. Set by acquire's
   * options.metadata, changed by setMetadata. Never blocks.
   */
  get metadata() {
    const h = this.#live();
    return metadataFrom((buf, size, len) => fns().krabka_leadership_metadata(h, buf, size, len));
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
    return startAbortable(signal, 'setMetadata', async () => {
      const h = this.#live();
      const eb = Buffer.alloc(ERRSTR_SIZE);
      check(await this.#call(fns().krabka_leadership_set_metadata, [h, b, b ? b.length : 0, t, eb, eb.length]), eb);
    });
  }

  /** 'active', 'fenced', 'expired', 'resigned' or 'closed' (its client was
   *  closed). Never blocks. */
  get state() {
    const out = [0];
    check(fns().krabka_leadership_state(this.#live(), out));
    return STATES[out[0]] ?? `unknown(${out[0]})`;
  }

  /**
   * A Promise that resolves when the leadership is no longer active, with
   * { state, reason, error }: the final state ('fenced', 'expired',
   * 'resigned', 'closed'), the reason text and the KrabkaError its calls now
   * reject with. It never rejects. While the leadership is active it does
   * not keep the process alive on its own; once it ended (its resign, close
   * or a refused write returned, or the client was closed) it resolves
   * before the process can exit. The same Promise on every access.
   */
  get ended() {
    if (!this.#ended) this.#ended = endedPromise(this.#end);
    return this.#ended;
  }

  // After each call of this leadership (it may have ended it): a pending
  // `ended` keeps the process alive from then on if it did.
  #settled() {
    if (this.#end.tag) events.holdIfOver(this.#end.tag);
  }

  // Runs the blocking C call fn(...args) on the pool, then #settled().
  async #call(fn, args) {
    try {
      return await callAsync(fn, args);
    } finally {
      this.#settled();
    }
  }

  /** True while state is 'active'. Never blocks. */
  get active() {
    return this.state === 'active';
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    if (this.#closed) return `Leadership(${this.role}, ${this.member}, closed)`;
    return `Leadership(${this.role}, ${this.member}, ${this.token}, ${this.state})`;
  }

  /** True when the renew interval has passed since the lease was granted
   *  (or the deadline is near). Never blocks. */
  renewDue() {
    const out = [0];
    check(fns().krabka_leadership_renew_due(this.#live(), out));
    return out[0] === 1;
  }

  /**
   * Writes a fresh lease under the same token. Rejects with FencedError
   * (stop at once) or LeaseExpiredError (the leadership ended by itself).
   */
  renew(options) {
    const t = timeoutArg(options, 'renew');
    const signal = signalArg(options, 'renew');
    return startAbortable(signal, 'renew', async () => {
      const h = this.#live();
      const eb = Buffer.alloc(ERRSTR_SIZE);
      check(await this.#call(fns().krabka_leadership_renew, [h, t, eb, eb.length]), eb);
    });
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
   */
  produce(topic, value, options) {
    if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
      throw new TypeError(`produce: options must be an object such as { key, partition, timeoutMs }, got ${describe(options)}`);
    }
    const o = options || {};
    const msg = messageArg({ topic, value, key: o.key, partition: o.partition, headers: o.headers }, 'message');
    const t = timeoutArg(o, 'produce');
    const signal = signalArg(o, 'produce');
    return startAbortable(signal, 'produce', () => this.#produce([msg], t)).then((r) => r[0]);
  }

  /**
   * Several guarded writes in one transaction: messages is an array of
   * { topic, value, key?, partition?, headers? } (headers as in produce).
   * Resolves to one { partition, offset } per message, in order.
   */
  produceBatch(messages, options) {
    if (!Array.isArray(messages)) throw new TypeError(`messages must be an array, got ${describe(messages)}`);
    if (messages.length === 0) throw new RangeError('messages must not be empty');
    const msgs = messages.map((m, i) => messageArg(m, `messages[${i}]`));
    const t = timeoutArg(options, 'produceBatch');
    const signal = signalArg(options, 'produceBatch');
    return startAbortable(signal, 'produceBatch', () => this.#produce(msgs, t));
  }

  async #produce(msgs, t) {
    const h = this.#live();
    const allocs = [];
    try {
      const structs = msgs.map((m) => {
        const [kp, kl] = nativeCopy(m.key, allocs);
        const [vp, vl] = nativeCopy(m.value, allocs);
        return { topic: m.topic, partition: m.partition, key: kp, key_len: kl, value: vp, value_len: vl };
      });
      const results = Buffer.alloc(RESULT_SIZE * msgs.length);
      const eb = Buffer.alloc(ERRSTR_SIZE);
      let code;
      if (msgs.some((m) => m.headers.length > 0)) {
        // krabka_leadership_produce_with_headers: message i carries
        // counts[i] headers, taken in order from one array.
        const hs = [];
        for (const m of msgs) {
          for (const hd of m.headers) {
            const [p, n] = nativeCopy(hd.value, allocs);
            hs.push({ key: hd.key, value: p, value_len: n });
          }
        }
        const counts = msgs.map((m) => m.headers.length);
        code = await this.#call(fns().krabka_leadership_produce_with_headers, [h, structs, structs.length, hs, counts, t, results, eb, eb.length]);
      } else {
        code = await this.#call(fns().krabka_leadership_produce, [h, structs, structs.length, t, results, eb, eb.length]);
      }
      check(code, eb);
      const out = [];
      for (let i = 0; i < msgs.length; i++) {
        const at = RESULT_SIZE * i;
        out.push({ partition: results.readInt32LE(at + RESULT_PARTITION), offset: results.readBigInt64LE(at + RESULT_OFFSET) });
      }
      return out;
    } finally {
      for (const p of allocs) koffi.free(p);
    }
  }

  /**
   * Gives the role up and steps aside: an expired lease and a tombstone of
   * this member's registration, in one transaction under this token, so the
   * first standby challenges at once. A courtesy, not a fence: stop guarded
   * writes first.
   * The state is 'resigned' afterwards even if the write failed, except
   * when the broker refused it (FencedError: the leadership was already
   * superseded): then it is 'fenced'.
   *
   * options.successor (a member id): hand over to that member (header
   * krabka.successor on the expired lease, krabka_leadership_resign_to): if
   * it is registered it challenges at once and every other standby one
   * stagger later than its rank alone; a member that is not registered is
   * ignored (the first standby takes over as after a plain resign). The
   * winner by name prunes nobody ranked ahead of it.
   */
  resign(options) {
    const t = timeoutArg(options, 'resign');
    const signal = signalArg(options, 'resign');
    const o = options || {};
    const successor = o.successor === undefined || o.successor === null ? null : copyBytes(nameBytes(o.successor, 'resign: options.successor'));
    return startAbortable(signal, 'resign', async () => {
      const h = this.#live();
      const eb = Buffer.alloc(ERRSTR_SIZE);
      if (successor) check(await this.#call(fns().krabka_leadership_resign_to, [h, ptr(successor), successor.length, t, eb, eb.length]), eb);
      else check(await this.#call(fns().krabka_leadership_resign, [h, t, eb, eb.length]), eb);
    });
  }

  /** Releases the leadership without resigning (standbys take over at the
   *  lease deadline). Idempotent: every call returns the same Promise. */
  close() {
    if (!this.#closed) {
      finalizer.unregister(this);
      this.#end.closed = true;
      this.#closed = this.#call(fns().krabka_leadership_destroy, [this.#handle]).then((code) => {
        if (code !== 0 && code !== ErrorCode.INVALID_HANDLE) throw makeError(code, 'destroying the leadership');
      });
    }
    return this.#closed;
  }

  /** Same as close(). */
  [Symbol.asyncDispose]() {
    return this.close();
  }
}

module.exports = { Client, Leadership, pendingCalls };
