'use strict';
// Client: the calls that talk to the cluster. Every call that can block is
// a *_async call on the process's event queue (lib/calls.js) and returns a
// Promise; stats() never blocks and is synchronous.
//
// Every blocking call takes options.signal (an AbortSignal): when it aborts,
// the Promise rejects at once with an AbortError (name 'AbortError', code
// 'ABORT_ERR', cause: the signal's reason). The call already handed to the
// library cannot be cancelled: it finishes in the background and its result
// is disposed of (a leadership won by an aborted acquire or tryAcquire is
// resigned and released; a watch opened by an aborted watch() is closed). An
// aborted leave may still have taken effect: the AbortError only says that
// the caller stopped waiting.

const EventEmitter = require('node:events');
const { koffi, native, ERRSTR_SIZE } = require('./native');
const { check, makeError, ErrorCode } = require('./errors');
const { nameBytes, ptr, timeoutArg, signalArg, describe, intArg } = require('./args');
const { metadataArg, metadataTooLong } = require('./headers');
const values = require('./values');
const calls = require('./calls');
const { Leadership } = require('./leadership');
const { Watch } = require('./watch');
const { Elector, electOptions } = require('./elect');
const { GroupMember, groupOptions } = require('./group');
const { ElectorSet, electorSetOptions } = require('./electorset');

const fns = () => native().fns;
const syncErr = Buffer.alloc(ERRSTR_SIZE);
const copyBytes = (b) => Buffer.from(b); // inputs of async calls are private copies

// Clients that were never closed are destroyed (on the libuv pool) when
// their owner is garbage collected.
const finalizer = new FinalizationRegistry((handle) => calls.destroyOnPool('client', handle));

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

// A krabka_acquire_options_t holding meta ({ term, member }), passed to
// call, which returns a code; the options are destroyed when it returns
// (the *_opts calls copy them). A setter's refusal is thrown (errbuf).
function withAcquireOptions(meta, errbuf, call) {
  const n = fns();
  const out = [null];
  check(n.krabka_acquire_options_new(out));
  const o = out[0];
  try {
    if (meta.term) check(n.krabka_acquire_options_set_metadata(o, meta.term, meta.term.length, errbuf, errbuf.length), errbuf);
    if (meta.member) check(n.krabka_acquire_options_set_member_metadata(o, meta.member, meta.member.length, errbuf, errbuf.length), errbuf);
    return call(o);
  } finally {
    n.krabka_acquire_options_destroy(o);
  }
}

// The C handle of every open Client, for clientHandle() (the controls of
// the in-process cluster, lib/testing.js, act on a client's krabka_client_t).
const liveHandles = new WeakMap();

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
  #electors = new Set(); // open electors and group members on this client (closed after it)

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
      const tag = calls.logTag((line) => this.emit('log', line));
      check(n.krabka_conf_set_log_queue(conf, calls.queueHandle(), tag));
      const out = [null];
      syncErr[0] = 0;
      try {
        check(n.krabka_client_new(conf, out, syncErr, syncErr.length), syncErr);
      } catch (e) {
        calls.dropLogTag(tag);
        throw e;
      }
      this.#logTag = tag;
      this.#handle = out[0];
    } finally {
      n.krabka_conf_destroy(conf);
    }
    finalizer.register(this, this.#handle, this);
    liveHandles.set(this, this.#handle);
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
   * Takes `role` for `member`, waiting as long as the succession rules say.
   * Resolves to a Leadership. timeoutMs 0 (the default) waits without limit;
   * otherwise rejects with KrabkaError TIMEOUT. The library waits on its own
   * threads and completes the call through its event queue on the
   * JavaScript thread, so any number of acquires can wait at once. A
   * pending acquire keeps the process alive, unless it was aborted.
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
   * rejects with KrabkaError INVALID_ARG before anything is written.
   */
  acquire(role, member, options) {
    return this.#acquire('acquire', role, member, options);
  }

  /**
   * One pass of acquire that never waits for another member's lease.
   * Resolves to { leadership, retryAt }: leadership is a Leadership when the
   * role was won (retryAt null), or null when it was not, and then retryAt
   * (bigint epoch milliseconds) says when trying again can change the answer.
   * options.metadata and options.memberMetadata as for acquire.
   */
  tryAcquire(role, member, options) {
    return this.#acquire('tryAcquire', role, member, options);
  }

  #acquire(what, role, member, options) {
    const r = copyBytes(nameBytes(role, 'role'));
    const m = copyBytes(nameBytes(member, 'member'));
    const t = timeoutArg(options, what);
    const signal = signalArg(options, what);
    const meta = acquireMeta(options, what);
    if (meta.error) return Promise.reject(meta.error);
    const once = what === 'acquire';
    return calls.submit({
      what,
      signal,
      releaseOnAbort: once, // an unbounded wait must not hold a process that gave up on it
      start: (q, tag, eb) => {
        const h = this.#live();
        return withAcquireOptions(meta, eb, (o) =>
          once
            ? fns().krabka_client_acquire_opts_async(h, ptr(r), r.length, ptr(m), m.length, o, t, q, tag, eb, eb.length)
            : fns().krabka_client_try_acquire_opts_async(h, ptr(r), r.length, ptr(m), m.length, o, t, q, tag, eb, eb.length));
      },
      read: (ev, info) => {
        const h = calls.take(ev, 'leadership');
        if (once) {
          if (!h) throw makeError(ErrorCode.INTERNAL, 'acquire: the event carries no leadership');
          return new Leadership(h, r, m);
        }
        if (h) return { leadership: new Leadership(h, r, m), retryAt: null };
        return { leadership: null, retryAt: values.readRetryAt(ev, info.errbuf) };
      },
    });
  }

  /**
   * Runs the election loop of `member` for `role` (the library's elector:
   * campaign, renew in the background, stop before the lease runs out,
   * campaign again after a loss) and returns an Elector, an async iterable
   * of Terms, one per won term, in order:
   *
   *   for await (const term of client.elect('controller', 'node-1', { signal })) {
   *     while (!term.signal.aborted) await term.leadership.produce(topic, next());
   *   }
   *
   * options: signal (an AbortSignal: aborting it resigns a held term and
   * ends the iteration), recampaign (default true; false: the iteration
   * ends after the first term), eligible (default true; false: start
   * withdrawn, see setEligible), metadata and memberMetadata (as for
   * acquire: on every term's lease records, on the registration). Never
   * waits on the cluster. Throws TypeError/RangeError for wrong arguments
   * and KrabkaError for names the library refuses (ROLE_TOO_LONG, ...) or a
   * closed client. `break`, a throw in the loop body and close() resign a
   * held term. Closing the client closes its electors (their terms stop
   * CLOSED, without a resignation).
   */
  elect(role, member, options) {
    const r = copyBytes(nameBytes(role, 'role'));
    const m = copyBytes(nameBytes(member, 'member'));
    const opts = electOptions(options);
    const meta = acquireMeta(opts.raw, 'elect');
    if (meta.error) throw meta.error;
    const h = this.#live();
    const eb = Buffer.alloc(ERRSTR_SIZE);
    const el = withAcquireOptions(meta, eb, (o) => new Elector(h, r, m, { ...opts, acquireOptions: o }, (e) => this.#electors.delete(e)));
    if (!el.closed) this.#electors.add(el);
    return el;
  }

  /**
   * One election loop of `member` per role over many roles
   * (docs/MANY-ROLES.md): returns an ElectorSet, an EventEmitter ('event')
   * and an async iterable of every role's events, each { role, kind, term,
   * token, holder, deadline, reason, error, leadership (STARTED: for
   * guarded writes under the role's own token) }:
   *
   *   const s = client.electorSet('node-1');
   *   for (const r of ['tenant-1', 'tenant-2']) s.add(r);
   *   for await (const e of s) {
   *     if (e.kind === 'STARTED') start(e.role, e.leadership);
   *     else if (e.kind === 'STOPPED') stop(e.role);
   *   }
   *
   * options: recampaign (default true; false: a role's loop ends after its
   * first lost term), signal (aborting it closes the set). Never waits on
   * the cluster. Throws TypeError naming an argument of the wrong type,
   * KrabkaError for a member the library refuses. Closing the client
   * closes its sets.
   */
  electorSet(member, options) {
    const m = copyBytes(nameBytes(member, 'electorSet: member'));
    const opts = electorSetOptions(options);
    const s = new ElectorSet(this.#live(), m, opts, (x) => this.#electors.delete(x));
    if (!s.closed) this.#electors.add(s);
    return s;
  }

  /**
   * Joins `member` to the role group `group` of `shards` shards
   * (docs/GROUPS.md) and returns a GroupMember: an EventEmitter ('assigned',
   * 'revoked', 'stopped') and an async iterable of its shard events, each
   * { kind: 'ASSIGNED' | 'REVOKED', shard, role, token, deadline,
   * leadership (ASSIGNED: for guarded writes under the shard's own token),
   * error (REVOKED: why) }:
   *
   *   const m = client.joinGroup('dispatch', 16, 'node-1', { weight: 2 });
   *   m.on('assigned', (e) => start(e.shard, e.leadership));
   *   m.on('revoked', (e) => stop(e.shard));
   *
   * options: weight (default 1), eligible (default true), signal (aborting
   * it closes the member). Never waits on the cluster. Throws TypeError /
   * RangeError naming an argument of the wrong type, KrabkaError for what
   * the library refuses (INVALID_ARG: a shard count out of [1, 4096], a
   * weight below 1; ROLE_TOO_LONG: a group too long for its shards' roles).
   * Closing the client closes its members.
   */
  joinGroup(group, shards, member, options) {
    return this.#join(group, shards, member, options, false);
  }

  /**
   * Joins `member` to the semaphore `name` of `slots` slots: a group whose
   * members hold at most one slot each, so at most `slots` members hold one
   * at a time, each under its own token. As joinGroup (a slot is a shard).
   */
  joinSemaphore(name, slots, member, options) {
    return this.#join(name, slots, member, options, true);
  }

  #join(group, count, member, options, semaphore) {
    const what = semaphore ? 'joinSemaphore' : 'joinGroup';
    const g = copyBytes(nameBytes(group, semaphore ? 'name' : 'group'));
    const n = intArg(count, `${what}: ${semaphore ? 'slots' : 'shards'}`, 32);
    const m = copyBytes(nameBytes(member, 'member'));
    const opts = groupOptions(options, what);
    const gm = new GroupMember(this.#live(), g, n, m, opts, semaphore, (x) => this.#electors.delete(x));
    if (!gm.closed) this.#electors.add(gm);
    return gm;
  }

  /**
   * Watches `role` without taking part (no epoch, no registration).
   * Resolves to a Watch, an async iterator of events ({ kind, role, holder,
   * token, prevHolder, prevToken, lease, metadata, roster, offset, atMs });
   * the first events describe the current state. options.renewals: also
   * LEASE_RENEWED (a change of the term's metadata is delivered as
   * LEASE_RENEWED without it). Resolves once the view caught up (bounded by
   * timeoutMs, default request.timeout.ms).
   */
  watch(role, options) {
    const r = copyBytes(nameBytes(role, 'role'));
    const t = timeoutArg(options, 'watch');
    const flags = options && options.renewals ? native().constants.WATCH_RENEWALS : 0;
    const signal = signalArg(options, 'watch');
    return calls.submit({
      what: 'watch',
      signal,
      start: (q, tag, eb) => fns().krabka_client_watch_async(this.#live(), ptr(r), r.length, flags, t, q, tag, eb, eb.length),
      read: (ev) => {
        const w = calls.take(ev, 'watch');
        if (!w) throw makeError(ErrorCode.INTERNAL, 'watch: the event carries no watch');
        return new Watch(w, r.toString('utf8'));
      },
    });
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
    return calls.submit({
      what: 'leave',
      signal,
      start: (q, tag, eb) => fns().krabka_client_leave_async(this.#live(), ptr(r), r.length, ptr(m), m.length, t, q, tag, eb, eb.length),
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
    return calls.submit({
      what: 'describe',
      signal,
      start: (q, tag, eb) => fns().krabka_client_describe_async(this.#live(), ptr(r), r.length, t, q, tag, eb, eb.length),
      read: (ev) => {
        const s = calls.take(ev, 'status');
        if (!s) throw makeError(ErrorCode.INTERNAL, 'describe: the event carries no result');
        try {
          return values.readStatus(s, r.toString('utf8'));
        } finally {
          calls.free('status', s);
        }
      },
    });
  }

  /**
   * Closes the client: its pending calls reject with KrabkaError CLOSED, its
   * leaderships end without resigning (state 'CLOSED'), its electors close
   * (a held term stops CLOSED, without resigning). Idempotent: every
   * call returns the same Promise.
   */
  close() {
    if (!this.#closed) {
      finalizer.unregister(this);
      liveHandles.delete(this);
      this.#closed = calls.destroyOnPool('client', this.#handle).then(async (code) => {
        calls.drain(); // the last lines and the CLOSED completions
        calls.dropLogTag(this.#logTag);
        // Its leaderships ended (closed): their `ended` events are on the way.
        calls.holdEndedIfOver();
        // Its electors' loops ended (a held term stopped CLOSED): closed too.
        await Promise.all([...this.#electors].map((e) => e.close().catch(() => {})));
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

/**
 * The krabka_client_t of an open Client (`what` names the argument in the
 * errors): TypeError for anything else, KrabkaError CLOSED once closed.
 */
function clientHandle(client, what) {
  if (!(client instanceof Client)) throw new TypeError(`${what} must be a krabka-coord Client, got ${describe(client)}`);
  const h = liveHandles.get(client);
  if (!h) throw makeError(ErrorCode.CLOSED, `${what}: the client is closed`);
  return h;
}

module.exports = { Client, clientHandle };
