'use strict';
// Elector sets: client.electorSet(member) makes one member's election loops
// over many roles on the library's threads (krabka_elector_set_new; the Go
// core's coord.ElectorSet: an elector per role) whose events come to the
// process's queue with a tag of its own (calls.stream), as an elector's
// do. Each KRABKA_EVENT_SET_TERM is read once, in the drain, into a
// RoleEvent { role, kind, term, token, holder, deadline, reason, error,
// leadership } (a STARTED's leadership taken from the event: borrowed, the
// set renews and resigns it).
//
// The ElectorSet is an EventEmitter ('event', every RoleEvent) and an async
// iterable of the same events, in order: one emitter and one iterator for
// every role. The release rule of the C ABI, per role (a role campaigns
// again only once its STOPPED event was destroyed): the binding keeps a
// STOPPED event until the listeners ran and, once the set is iterated,
// until the iteration asked for the event after it.

const EventEmitter = require('node:events');
const abi = require('./abi');
const { native, ERRSTR_SIZE, CONSTANTS } = require('./native');
const { makeError, errText, ErrorCode } = require('./errors');
const { nameBytes, timeoutArg, signalArg, describe } = require('./args');
const { Leadership } = require('./leadership');
const { safeEmit, scalar, tokenOf, deadlineOf, holderOf, errorOf } = require('./term');
const calls = require('./calls');

const fns = () => native().fns;
const DONE = Object.freeze({ done: true, value: undefined });
const OPTION_KEYS = new Set(['recampaign', 'signal']);

// Scratch buffers (the JS thread is their only user).
const roleBuf = Buffer.alloc(CONSTANTS.NAME_BUF);
const callErr = Buffer.alloc(ERRSTR_SIZE);

/** The options of electorSet, checked. */
function electorSetOptions(options) {
  if (options === undefined || options === null) return { recampaign: true, signal: null };
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`electorSet: options must be an object such as { recampaign, signal }, got ${describe(options)}`);
  }
  for (const k of Object.keys(options)) {
    if (!OPTION_KEYS.has(k)) throw new TypeError(`electorSet: unknown option '${k}' (known: ${[...OPTION_KEYS].join(', ')})`);
  }
  const recampaign = options.recampaign === undefined ? true : options.recampaign;
  if (typeof recampaign !== 'boolean') throw new TypeError(`electorSet: options.recampaign must be a boolean, got ${describe(recampaign)}`);
  return { recampaign, signal: signalArg(options, 'electorSet') };
}

function check(code, what) {
  if (code !== 0) throw makeError(code, errText(callErr) || what);
}

function roleOf(ev) {
  const len = [0];
  callErr[0] = 0;
  check(fns().krabka_event_role(ev, roleBuf, roleBuf.length, len, callErr, callErr.length), 'krabka_event_role');
  return Buffer.from(roleBuf.subarray(0, Number(len[0])));
}

/**
 * One member's election loops over many roles (client.electorSet). Events:
 * 'event' (RoleEvent), for every role, in order.
 */
class ElectorSet extends EventEmitter {
  #handle = null;
  #stream = null;
  #memberBytes;
  #signal = null;
  #onAbort = null;
  #onClosed;
  #events = []; // [RoleEvent, kept STOPPED event or null], not yet taken by the iteration
  #waiters = []; // pending next(): resolve
  #iterated = false; // next() was called: STOPPEDs wait for the iteration
  #heldStop = null; // the STOPPED event the iteration handed out last
  #closing = null;
  #closedDone = false;

  /** @internal */
  constructor(clientHandle, memberBytes, opts, onClosed) {
    super();
    this.#memberBytes = memberBytes;
    this.#onClosed = onClosed;
    const flags = opts.recampaign ? 0 : native().constants.ELECT_NO_RECAMPAIGN;
    const { handle, stream } = calls.openStream((_n, ev) => this.#event(ev), (q, tag, out, eb) =>
      fns().krabka_elector_set_new(clientHandle, memberBytes, memberBytes.length, flags, q, tag, out, eb, eb.length));
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

  /** The member id (decoded as UTF-8). */
  get member() {
    return this.#memberBytes.toString('utf8');
  }

  /** True once close() was called (or the signal aborted, or the client closed). */
  get closed() {
    return this.#closing !== null;
  }

  #live(what) {
    if (this.#closing) throw makeError(ErrorCode.CLOSED, `${what}: the elector set of ${this.member} is closed`);
    return this.#handle;
  }

  // ---- the events (called in the drain) ----

  #event(ev) {
    const type = [0];
    fns().krabka_event_type(ev, type);
    if (type[0] !== abi.EventType.SET_TERM) return false;
    const code = scalar('krabka_event_term_kind', ev);
    const kind = abi.TermEventKindName[code];
    if (!kind) return false; // a kind newer than this binding
    const rb = roleOf(ev);
    let leadership = null;
    let error = null;
    let reason = 'NONE';
    if (code === abi.TermEventKind.STARTED) {
      const h = calls.take(ev, 'leadership');
      if (h) leadership = new Leadership(h, rb, this.#memberBytes);
    } else if (code === abi.TermEventKind.STOPPED || code === abi.TermEventKind.ELECTOR_STOPPED) {
      error = errorOf(ev);
      reason = abi.StopReasonName[scalar('krabka_event_stop_reason', ev)] || 'NONE';
    }
    const e = Object.freeze({
      role: rb.toString('utf8'),
      kind,
      term: Number(scalar('krabka_event_term', ev)),
      token: tokenOf(ev),
      holder: holderOf(ev),
      deadline: deadlineOf(ev),
      reason,
      error,
      leadership,
    });
    const keep = code === abi.TermEventKind.STOPPED;
    this.#events.push([e, keep && this.#iterated ? ev : null]);
    safeEmit(this, 'event', e);
    if (keep && !this.#iterated) setImmediate(() => calls.destroyEvent(ev)); // after the listeners: the role may campaign again
    this.#wake();
    return keep;
  }

  #wake() {
    while (this.#waiters.length > 0 && (this.#events.length > 0 || this.#closedDone)) {
      const w = this.#waiters.shift();
      w(this.#events.length > 0 ? this.#hand() : DONE);
    }
  }

  #hand() {
    const [e, ev] = this.#events.shift();
    this.#heldStop = ev;
    return { done: false, value: e };
  }

  #releaseHeld() {
    const ev = this.#heldStop;
    this.#heldStop = null;
    if (ev) calls.destroyEvent(ev); // the role may campaign again
  }

  // ---- iteration ----

  /** The next event of any role ({ done: false, value }), or { done: true }
   *  once the set was closed and every event was taken. Releases the
   *  STOPPED it handed out before, if any. */
  next() {
    this.#iterated = true;
    this.#releaseHeld();
    if (this.#events.length > 0) return Promise.resolve(this.#hand());
    if (this.#closedDone) return Promise.resolve(DONE);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Called by `break` (and a throw) in `for await`: releases the STOPPED
   *  handed out last and leaves the rest to the caller (the set keeps
   *  running; close() ends it). */
  async return() {
    this.#releaseHeld();
    return DONE;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  // ---- roles ----

  /** Adds `role`: its loop starts and campaigns at once. Never waits on
   *  the cluster. TypeError for a role that is not a string or a Buffer;
   *  KrabkaError naming the role for what the library refuses (INVALID_ARG:
   *  already in the set, held by this client outside it; ROLE_TOO_LONG;
   *  INVALID_UTF8; EMPTY_ROLE); CLOSED once closed. */
  add(role) {
    const r = nameBytes(role, 'add: role');
    callErr[0] = 0;
    check(fns().krabka_elector_set_add(this.#live('add'), r, r.length, callErr, callErr.length), 'add');
  }

  /** Removes `role`: a held term is resigned (its STOPPED, RESIGNED, then
   *  ELECTOR_STOPPED come as events), a standby leaves the race; the other
   *  roles go on. Resolves once the role's loop ended, within
   *  options.timeoutMs (default request.timeout.ms; TIMEOUT: it ends in the
   *  background); rejects with INVALID_ARG naming the role when it is not
   *  in the set. Runs on the libuv pool (the C call blocks). */
  remove(role, options) {
    const r = Buffer.from(nameBytes(role, 'remove: role'));
    const t = timeoutArg(options, 'remove');
    const h = this.#live('remove');
    const eb = Buffer.alloc(ERRSTR_SIZE);
    return calls.onPool('krabka_elector_set_remove', h, r, r.length, t, eb, eb.length).then((code) => {
      calls.drain(); // the role's last events, posted before it returned
      if (code !== 0) throw makeError(code, errText(eb) || 'remove');
    });
  }

  /** Where `role`'s loop is now ('CAMPAIGNING', 'HOLDING', 'AT_RISK',
   *  'SUSPENDED'); KrabkaError INVALID_ARG naming the role when it is not
   *  in the set. Never blocks. */
  state(role) {
    const r = nameBytes(role, 'state: role');
    const out = [0];
    callErr[0] = 0;
    check(fns().krabka_elector_set_state(this.#live('state'), r, r.length, out, callErr, callErr.length), 'state');
    return abi.ElectorStateName[out[0]];
  }

  #count() {
    if (this.#closing) return [0, 0];
    const roles = [0];
    const held = [0];
    callErr[0] = 0;
    check(fns().krabka_elector_set_count(this.#handle, roles, held, callErr, callErr.length), 'count');
    return [Number(roles[0]), Number(held[0])];
  }

  /** How many roles are in the set now (0 once closed). Never blocks. */
  get size() {
    return this.#count()[0];
  }

  /** How many roles of the set it holds now (a term runs). Never blocks. */
  get heldCount() {
    return this.#count()[1];
  }

  /**
   * Ends every role's loop: held terms are resigned (their STOPPED and
   * every role's ELECTOR_STOPPED still come as events), then the iteration
   * ends. Idempotent: every call returns the same Promise.
   */
  close() {
    if (this.#closing) return this.#closing;
    if (this.#signal) this.#signal.removeEventListener('abort', this.#onAbort);
    this.#closing = calls.destroyOnPool('electorSet', this.#handle).then((code) => {
      calls.drain(); // what destroy posted before it returned
      this.#stream.drop();
      for (const item of this.#events) {
        if (item[1]) calls.destroyEvent(item[1]);
        item[1] = null;
      }
      this.#releaseHeld();
      this.#closedDone = true;
      this.#wake();
      this.#onClosed(this);
      if (code !== 0 && code !== ErrorCode.INVALID_HANDLE) throw makeError(code, 'destroying the elector set');
    });
    return this.#closing;
  }
}

module.exports = { ElectorSet, electorSetOptions };
