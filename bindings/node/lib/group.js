'use strict';
// Role groups: client.joinGroup(group, shards, member) makes one member of
// a role group on the library's threads (krabka_group_join; the Go core's
// coord.Group: heartbeat, the plan, campaign for, hold, renew and hand over
// the shards the plan gives the member) whose events come to the process's
// queue with a tag of its own (calls.stream), as an elector's do. Each
// event is read once, in the drain: a KRABKA_EVENT_GROUP becomes an
// 'assigned' (with the shard's Leadership, taken from the event: borrowed,
// the group renews, hands over and resigns it) or a 'revoked' (with why);
// KRABKA_EVENT_GROUP_STOPPED, the member's last event, 'stopped'.
//
// The GroupMember is an EventEmitter and an async iterable of those events
// (each { kind, shard, role, token, deadline, leadership, error }), in order.

const EventEmitter = require('node:events');
const abi = require('./abi');
const { native, ERRSTR_SIZE, CONSTANTS } = require('./native');
const { makeError, errText, ErrorCode } = require('./errors');
const { intArg, timeoutArg, signalArg, describe } = require('./args');
const { Leadership } = require('./leadership');
const { safeEmit, scalar, tokenOf, deadlineOf, errorOf } = require('./term');
const calls = require('./calls');

const fns = () => native().fns;
const DONE = Object.freeze({ done: true, value: undefined });
const OPTION_KEYS = new Set(['weight', 'eligible', 'signal']);

// Scratch buffers (the JS thread is their only user).
const roleBuf = Buffer.alloc(CONSTANTS.NAME_BUF);
const callErr = Buffer.alloc(ERRSTR_SIZE);

/** The options of joinGroup / joinSemaphore, checked. */
function groupOptions(options, what) {
  if (options === undefined || options === null) return { weight: 1, eligible: true, signal: null };
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${what}: options must be an object such as { weight, eligible, signal }, got ${describe(options)}`);
  }
  for (const k of Object.keys(options)) {
    if (!OPTION_KEYS.has(k)) throw new TypeError(`${what}: unknown option '${k}' (known: ${[...OPTION_KEYS].join(', ')})`);
  }
  const weight = options.weight === undefined ? 1 : intArg(options.weight, `${what}: options.weight`, 32);
  const eligible = options.eligible === undefined ? true : options.eligible;
  if (typeof eligible !== 'boolean') throw new TypeError(`${what}: options.eligible must be a boolean, got ${describe(eligible)}`);
  return { weight, eligible, signal: signalArg(options, what) };
}

function check(code, what) {
  if (code !== 0) throw makeError(code, errText(callErr) || what);
}

/**
 * A member of a role group (client.joinGroup) or of a semaphore
 * (client.joinSemaphore). Events: 'assigned' (event), 'revoked' (event),
 * 'stopped' (error or null: the member stopped; null after leave() or
 * close(), CLOSED when its client was closed).
 */
class GroupMember extends EventEmitter {
  #handle = null;
  #stream = null;
  #groupBytes;
  #memberBytes;
  #shards;
  #roles = new Map(); // shard -> its role's bytes
  #signal = null;
  #onAbort = null;
  #onClosed;
  #events = []; // not yet taken by the iteration
  #waiters = []; // pending next(): resolve
  #stopped = false; // GROUP_STOPPED came
  #endError = null;
  #closing = null;

  /** @internal */
  constructor(clientHandle, groupBytes, shards, memberBytes, opts, semaphore, onClosed) {
    super();
    this.#groupBytes = groupBytes;
    this.#memberBytes = memberBytes;
    this.#shards = shards;
    this.#onClosed = onClosed;
    const flags = opts.eligible ? 0 : native().constants.GROUP_INELIGIBLE;
    const join = semaphore ? fns().krabka_semaphore_join : fns().krabka_group_join;
    const { handle, stream } = calls.openStream((_n, ev) => this.#event(ev), (q, tag, out, eb) =>
      join(clientHandle, groupBytes, groupBytes.length, shards, memberBytes, memberBytes.length, opts.weight, flags, q, tag, out, eb, eb.length));
    this.#handle = handle;
    this.#stream = stream;
    if (opts.signal) {
      this.#signal = opts.signal;
      this.#onAbort = () => {
        this.close().catch(() => {});
      };
      if (opts.signal.aborted) this.#onAbort();
      else opts.signal.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  /** The group's name (decoded as UTF-8). */
  get group() {
    return this.#groupBytes.toString('utf8');
  }

  /** The member id (decoded as UTF-8). */
  get member() {
    return this.#memberBytes.toString('utf8');
  }

  /** The group's shard (or slot) count. */
  get shards() {
    return this.#shards;
  }

  /** True once close() was called (or the signal aborted, or the client closed). */
  get closed() {
    return this.#closing !== null;
  }

  /** Why the member stopped by itself (CLOSED: its client was closed); null
   *  while it runs and after leave() or close(). */
  get error() {
    return this.#endError;
  }

  #live(what) {
    if (this.#closing) throw makeError(ErrorCode.CLOSED, `${what}: the member ${this.member} of group ${this.group} is closed`);
    return this.#handle;
  }

  #roleBytes(shard) {
    let r = this.#roles.get(shard);
    if (!r) {
      const len = [0];
      callErr[0] = 0;
      check(fns().krabka_group_shard_role(this.#handle, shard, roleBuf, roleBuf.length, len, callErr, callErr.length), 'krabka_group_shard_role');
      r = Buffer.from(roleBuf.subarray(0, Number(len[0])));
      this.#roles.set(shard, r);
    }
    return r;
  }

  // ---- the events (called in the drain) ----

  #event(ev) {
    const type = [0];
    fns().krabka_event_type(ev, type);
    if (type[0] === abi.EventType.GROUP_STOPPED) {
      this.#endError = errorOf(ev);
      this.#stopped = true;
      safeEmit(this, 'stopped', this.#endError);
      this.#wake();
      return false;
    }
    if (type[0] !== abi.EventType.GROUP) return false;
    const kind = abi.GroupEventKindName[scalar('krabka_event_group_kind', ev)];
    if (!kind) return false; // a kind newer than this binding
    const shard = scalar('krabka_event_shard', ev);
    const rb = this.#roleBytes(shard);
    let leadership = null;
    let error = null;
    if (kind === 'ASSIGNED') {
      const h = calls.take(ev, 'leadership');
      if (h) leadership = new Leadership(h, rb, this.#memberBytes);
    } else {
      error = errorOf(ev);
    }
    const e = Object.freeze({ kind, shard, role: rb.toString('utf8'), token: tokenOf(ev), deadline: deadlineOf(ev), leadership, error });
    safeEmit(this, kind === 'ASSIGNED' ? 'assigned' : 'revoked', e);
    this.#events.push(e);
    this.#wake();
    return false;
  }

  #wake() {
    while (this.#waiters.length > 0 && (this.#events.length > 0 || this.#over())) {
      const w = this.#waiters.shift();
      w(this.#events.length > 0 ? { done: false, value: this.#events.shift() } : DONE);
    }
  }

  #over() {
    return this.#stopped || (this.#closing !== null && this.#closedDone);
  }

  #closedDone = false;

  // ---- iteration ----

  /** The next event ({ done: false, value }), or { done: true } once the
   *  member stopped and every event was taken. */
  next() {
    if (this.#events.length > 0) return Promise.resolve({ done: false, value: this.#events.shift() });
    if (this.#over()) return Promise.resolve(DONE);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Called by `break` (and a throw) in `for await`: leaves the rest to
   *  the caller (the member keeps running; close() or leave() end it). */
  async return() {
    return DONE;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  // ---- state and control ----

  /** The shards the member holds now, ascending ([] once closed). Never blocks. */
  held() {
    if (this.#closing) return [];
    const arr = new Int32Array(Math.max(this.#shards, 1));
    const n = [0];
    callErr[0] = 0;
    check(fns().krabka_group_held(this.#handle, arr, arr.length, n, callErr, callErr.length), 'krabka_group_held');
    return Array.from(arr.subarray(0, Math.min(Number(n[0]), arr.length)));
  }

  /** The role name of `shard` (0 <= shard < shards). */
  shardRole(shard) {
    if (typeof shard !== 'number' || !Number.isInteger(shard)) throw new TypeError(`shardRole: shard must be an integer, got ${describe(shard)}`);
    if (shard < 0 || shard >= this.#shards) throw new RangeError(`shardRole: shard ${shard} is outside [0, ${this.#shards})`);
    this.#live('shardRole');
    return this.#roleBytes(shard).toString('utf8');
  }

  /** Makes the member eligible for shards (true) or not (false): the next
   *  plan hands its shards over or gives it its share. Never blocks. */
  setEligible(eligible) {
    if (typeof eligible !== 'boolean') throw new TypeError(`setEligible: eligible must be a boolean, got ${describe(eligible)}`);
    callErr[0] = 0;
    check(fns().krabka_group_set_eligible(this.#live('setEligible'), eligible ? 1 : 0, callErr, callErr.length), 'setEligible');
  }

  /** Changes the member's weight (at least 1: KrabkaError INVALID_ARG
   *  naming it otherwise). Never blocks. */
  setWeight(weight) {
    const w = intArg(weight, 'setWeight: weight', 32);
    callErr[0] = 0;
    check(fns().krabka_group_set_weight(this.#live('setWeight'), w, callErr, callErr.length), 'setWeight');
  }

  /**
   * Leaves the group: the shards are handed over to their new owners (a
   * 'revoked' each), within options.timeoutMs (default request.timeout.ms;
   * KrabkaError TIMEOUT when the handover did not finish: the rest is
   * resigned anyway); then 'stopped' and the iteration ends. Close the
   * member afterwards. Runs on the libuv pool (the C call blocks).
   */
  leave(options) {
    const t = timeoutArg(options, 'leave');
    const h = this.#live('leave');
    const eb = Buffer.alloc(ERRSTR_SIZE);
    return calls.onPool('krabka_group_leave', h, t, eb, eb.length).then((code) => {
      calls.drain(); // the REVOKED events and GROUP_STOPPED posted before it returned
      if (code !== 0) throw makeError(code, errText(eb) || 'leave');
    });
  }

  /**
   * Ends the member now: what it holds is resigned (no handover: call
   * leave() first for one); the iteration ends. Idempotent: every call
   * returns the same Promise.
   */
  close() {
    if (this.#closing) return this.#closing;
    if (this.#signal) this.#signal.removeEventListener('abort', this.#onAbort);
    this.#closing = calls.destroyOnPool('group', this.#handle).then((code) => {
      calls.drain(); // what destroy posted before it returned
      this.#stream.drop();
      this.#closedDone = true;
      this.#wake();
      this.#onClosed(this);
      if (code !== 0 && code !== ErrorCode.INVALID_HANDLE) throw makeError(code, 'destroying the group member');
    });
    return this.#closing;
  }
}

module.exports = { GroupMember, groupOptions };
