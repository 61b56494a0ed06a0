'use strict';
// The elector: client.elect(role, member) runs the election loop of one
// member for one role on the library's threads (krabka_elector_new; the Go
// core's coord.Elector: campaign, renew in the background, stop the term
// before the lease runs out, campaign again) and posts its events to the
// process's queue with a tag of its own (calls.stream). Each event is read
// once, in the drain, with a few accessor calls (kind, term, and what the
// kind carries); nothing polls per event.
//
// The Elector is an async iterable of Terms, one per won term, in order.
// The release rule: the library campaigns again only once the STOPPED event
// of the last term was destroyed, so this binding keeps that event alive
// until JavaScript is done with the term: its stop was delivered (signal
// aborted, `stopped` resolved, 'stopped' emitted) and the consumer asked
// for the next term (next(), the next turn of `for await`), or closed the
// elector. A new term is therefore never yielded, nor even campaigned for,
// while the loop body of the previous one still runs.

const EventEmitter = require('node:events');
const abi = require('./abi');
const { native, ERRSTR_SIZE, CONSTANTS } = require('./native');
const { makeError, errText, ErrorCode } = require('./errors');
const { nameBytes, timeoutArg, describe, big } = require('./args');
const { FencingToken } = require('./token');
const { Leadership } = require('./leadership');
const calls = require('./calls');

const fns = () => native().fns;
const DONE = Object.freeze({ done: true, value: undefined });

// Scratch buffers of the drain (the JS thread is their only user).
const evErr = Buffer.alloc(ERRSTR_SIZE);
const holderBuf = Buffer.alloc(CONSTANTS.NAME_BUF);
const reasonBuf = Buffer.alloc(ERRSTR_SIZE);

const OPTION_KEYS = new Set(['signal', 'recampaign', 'eligible', 'metadata', 'memberMetadata']);

/** The options of client.elect, checked: { signal, recampaign, eligible }. */
function electOptions(options) {
  if (options === undefined || options === null) return { signal: null, recampaign: true, eligible: true, raw: {} };
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`elect: options must be an object such as { signal, recampaign, eligible }, got ${describe(options)}`);
  }
  for (const k of Object.keys(options)) {
    if (!OPTION_KEYS.has(k)) throw new TypeError(`elect: unknown option '${k}' (known: ${[...OPTION_KEYS].join(', ')})`);
  }
  const flag = (k) => {
    const v = options[k];
    if (v === undefined) return true;
    if (typeof v !== 'boolean') throw new TypeError(`elect: options.${k} must be a boolean, got ${describe(v)}`);
    return v;
  };
  const s = options.signal;
  if (s !== undefined && s !== null && !(s instanceof AbortSignal)) {
    throw new TypeError(`elect: options.signal must be an AbortSignal, got ${describe(s)}`);
  }
  return { signal: s || null, recampaign: flag('recampaign'), eligible: flag('eligible'), raw: options };
}

// ---- reading TERM events -----------------------------------------------------

function acc(name, ev, out) {
  evErr[0] = 0;
  const code = fns()[name](ev, out, evErr, evErr.length);
  if (code !== 0) throw makeError(code, errText(evErr));
  return out;
}

const scalar = (name, ev) => acc(name, ev, [0])[0];
const tokenOf = (ev) => FencingToken.fromC(acc('krabka_event_token', ev, {}));
const deadlineOf = (ev) => big(scalar('krabka_event_deadline', ev));

function holderOf(ev) {
  const len = [0];
  evErr[0] = 0;
  const code = fns().krabka_event_holder(ev, holderBuf, holderBuf.length, len, evErr, evErr.length);
  if (code !== 0) throw makeError(code, errText(evErr));
  return holderBuf.toString('utf8', 0, Number(len[0]));
}

/** STOPPED: { reason, error } (reason a StopReason name). */
function stopOf(ev) {
  const reason = abi.StopReasonName[scalar('krabka_event_stop_reason', ev)] || 'NONE';
  const code = [0];
  evErr[0] = 0;
  fns().krabka_event_error(ev, code, evErr, evErr.length);
  return Object.freeze({ reason, error: code[0] ? makeError(code[0], errText(evErr)) : null });
}

// ---- Term ------------------------------------------------------------------

/**
 * One won term of an Elector: number (1, 2, ... per elector), token,
 * deadline (the last lease deadline the elector reported, bigint epoch ms),
 * leadership (for guarded writes), signal (aborts when the term ends),
 * stopped (resolves once, with { reason, error }), atRisk. Emits 'atRisk'
 * (deadline), 'recovered' (deadline) and 'stopped' ({ reason, error }).
 */
class Term extends EventEmitter {
  #controller = new AbortController();
  #resolveStopped;
  #stop = null;

  /** @internal */
  constructor(elector, number, token, deadline, leadership) {
    super();
    this.elector = elector;
    this.number = number;
    this.token = token;
    this.deadline = deadline;
    this.leadership = leadership;
    this.atRisk = false;
    this.stopped = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
    // @internal: the release bookkeeping (see Elector)
    this._consumed = false; // the consumer asked for the next term after this one
    this._kept = null; // its STOPPED event, until released
  }

  get role() {
    return this.elector.role;
  }

  get member() {
    return this.elector.member;
  }

  /** Aborts when the term ends (reason: the stop's error, or a KrabkaError NOT_LEADER). */
  get signal() {
    return this.#controller.signal;
  }

  /** True until the term's stop was delivered. */
  get active() {
    return this.#stop === null;
  }

  /** { reason, error } once stopped, else null. */
  get stop() {
    return this.#stop;
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Term(${this.role}, ${this.member}, #${this.number}, ${this.token}, ${this.#stop ? `stopped ${this.#stop.reason}` : this.atRisk ? 'at risk' : 'active'})`;
  }

  /** @internal */
  _risk(atRisk, deadline) {
    if (this.#stop) return;
    this.atRisk = atRisk;
    this.deadline = deadline;
    safeEmit(this, atRisk ? 'atRisk' : 'recovered', deadline);
  }

  /** @internal Delivers the stop (once). */
  _stopped(stop) {
    if (this.#stop) return false;
    this.#stop = stop;
    this.atRisk = false;
    const why = stop.error || makeError(ErrorCode.NOT_LEADER, `term ${this.number} of ${this.role}/${this.member} stopped: ${stop.reason}`);
    try {
      this.#controller.abort(why);
    } catch {
      /* an abort listener's bug */
    }
    this.#resolveStopped(stop);
    safeEmit(this, 'stopped', stop);
    return true;
  }
}

function safeEmit(emitter, ...args) {
  try {
    emitter.emit(...args);
  } catch {
    /* a listener's bug must not stop the drain */
  }
}

// ---- Elector ---------------------------------------------------------------

/**
 * client.elect(role, member, options): see index.d.ts and README.md.
 * Events: 'started' (term), 'atRisk' (term, deadline), 'recovered' (term,
 * deadline), 'stopped' (term, { reason, error }), 'leader' ({ holder,
 * token, deadline }).
 */
class Elector extends EventEmitter {
  #handle = null;
  #stream = null;
  #roleBytes;
  #memberBytes;
  #recampaign;
  #eligible;
  #signal = null;
  #onAbort = null;
  #onClosed;
  #current = null; // the term between its STARTED and its STOPPED
  #ready = []; // terms started and not yet yielded
  #yielded = null; // the term the consumer's loop body is working on
  #waiters = []; // pending next(): { resolve, reject }
  #closing = null;
  #ended = null; // DONE, or { error } once the iteration is over
  #termsStopped = 0;
  #loopTimer = null;
  #loopDelay = 25;
  #releaseScheduled = false;

  /** @internal clientHandle: the live client's handle; onClosed(elector). */
  constructor(clientHandle, roleBytes, memberBytes, opts, onClosed) {
    super();
    this.#roleBytes = roleBytes;
    this.#memberBytes = memberBytes;
    this.#recampaign = opts.recampaign;
    this.#eligible = opts.eligible;
    this.#onClosed = onClosed;
    if (opts.signal && opts.signal.aborted) {
      // Nothing starts: the iteration is over before it began.
      this.#ended = DONE;
      this.#closing = Promise.resolve();
      onClosed(this);
      return;
    }
    const n = fns();
    const c = native().constants;
    const flags = (opts.recampaign ? 0 : c.ELECT_NO_RECAMPAIGN) | (opts.eligible ? 0 : c.ELECT_INELIGIBLE);
    const st = calls.stream((_n, ev) => this.#event(ev));
    const out = [null];
    const eb = Buffer.alloc(ERRSTR_SIZE);
    let code;
    try {
      // opts.acquireOptions: the client's krabka_acquire_options_t (the metadata), copied by the call
      code = n.krabka_elector_new_opts(clientHandle, roleBytes, roleBytes.length, memberBytes, memberBytes.length, opts.acquireOptions, flags, calls.queueHandle(), st.tag, out, eb, eb.length);
    } catch (e) {
      st.drop();
      throw e;
    }
    if (code !== 0) {
      st.drop();
      throw makeError(code, errText(eb));
    }
    this.#handle = out[0];
    this.#stream = st;
    st.hold(); // an open elector keeps the process alive, like a listening server
    if (opts.signal) {
      this.#signal = opts.signal;
      this.#onAbort = () => {
        this.close().catch(() => {});
      };
      opts.signal.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  /** The role (decoded as UTF-8). */
  get role() {
    return this.#roleBytes.toString('utf8');
  }

  /** The member id (decoded as UTF-8). */
  get member() {
    return this.#memberBytes.toString('utf8');
  }

  /** True once close() was called (or the signal aborted, or the client closed). */
  get closed() {
    return this.#closing !== null;
  }

  /** The term held now (between its start and its stop), or null. */
  get current() {
    return this.#current;
  }

  /** The candidacy as last set (options.eligible, setEligible). */
  get eligible() {
    return this.#eligible;
  }

  #live(what) {
    if (this.#closing) throw makeError(ErrorCode.CLOSED, `${what}: the elector of ${this.role}/${this.member} is closed`);
    return this.#handle;
  }

  // ---- the events (called in the drain) ----

  #event(ev) {
    const kind = scalar('krabka_event_term_kind', ev);
    if (kind === abi.TermEventKind.NEW_LEADER) {
      const leader = Object.freeze({ holder: holderOf(ev), token: tokenOf(ev), deadline: deadlineOf(ev) });
      safeEmit(this, 'leader', leader);
      return false;
    }
    const number = Number(scalar('krabka_event_term', ev));
    switch (kind) {
      case abi.TermEventKind.STARTED: {
        const token = tokenOf(ev);
        const deadline = deadlineOf(ev);
        const h = calls.take(ev, 'leadership');
        const l = h ? new Leadership(h, this.#roleBytes, this.#memberBytes) : null;
        const t = new Term(this, number, token, deadline, l);
        this.#current = t;
        this.#stopLoopWatch();
        safeEmit(this, 'started', t);
        if (this.#ended) {
          t._consumed = true; // never yielded: closing
        } else if (this.#waiters.length > 0) {
          this.#yield(this.#waiters.shift(), t);
        } else {
          this.#ready.push(t);
        }
        return false;
      }
      case abi.TermEventKind.AT_RISK:
      case abi.TermEventKind.RECOVERED: {
        const t = this.#current;
        if (!t || t.number !== number) return false;
        const deadline = deadlineOf(ev);
        const atRisk = kind === abi.TermEventKind.AT_RISK;
        t._risk(atRisk, deadline);
        safeEmit(this, atRisk ? 'atRisk' : 'recovered', t, deadline);
        return false;
      }
      case abi.TermEventKind.STOPPED: {
        const t = this.#current;
        if (!t || t.number !== number) return false; // not ours to hold: released now
        const stop = stopOf(ev);
        this.#current = null;
        this.#termsStopped++;
        t._kept = ev; // destroyed once JavaScript is done with the term
        t._stopped(stop);
        safeEmit(this, 'stopped', t, stop);
        if (t._consumed) this.#scheduleRelease();
        return true;
      }
      default:
        return false;
    }
  }

  // Destroys the kept STOPPED of every term the consumer is done with, on
  // a later turn of the event loop (so the `stopped` handlers ran).
  #scheduleRelease() {
    if (this.#releaseScheduled) return;
    this.#releaseScheduled = true;
    setImmediate(() => {
      this.#releaseScheduled = false;
      this.#releaseDone();
    });
  }

  #releaseDone() {
    for (const t of [this.#yielded, ...this.#ready, this.#lastReleased].filter(Boolean)) {
      if (t._consumed && t._kept) this.#release(t);
    }
  }

  #lastReleased = null; // the term whose body ended last (its STOPPED may still be kept)

  #release(t) {
    const ev = t._kept;
    t._kept = null;
    if (!ev) return;
    calls.destroyEvent(ev); // the elector may campaign again
    if (!this.#closing) this.#watchLoop();
  }

  // The loop can end without an event (the cluster refused the member for
  // good; with recampaign false, after the first lost term): while someone
  // waits for a term and none is held, healthy() is asked now and then
  // (25 ms after a release, doubling to 1 s), and an ended loop ends the
  // iteration.
  #watchLoop() {
    this.#loopDelay = 25;
    this.#armLoopWatch();
  }

  #armLoopWatch() {
    if (this.#loopTimer || this.#closing) return;
    this.#loopTimer = setTimeout(() => {
      this.#loopTimer = null;
      if (this.#closing || this.#current) return;
      const h = this.#probe();
      if (h && !h.healthy && /: stopped(: |$)/.test(h.reason)) {
        this.#loopEnded(h.reason);
        return;
      }
      if (this.#waiters.length > 0 || this.#loopDelay < 1000) {
        this.#loopDelay = Math.min(this.#loopDelay * 2, 1000);
        this.#armLoopWatch();
      }
    }, this.#loopDelay);
    this.#loopTimer.unref();
  }

  #stopLoopWatch() {
    if (this.#loopTimer) clearTimeout(this.#loopTimer);
    this.#loopTimer = null;
  }

  #probe() {
    if (!this.#handle || this.#closing) return null;
    const ok = [0];
    reasonBuf[0] = 0;
    if (fns().krabka_elector_healthy(this.#handle, ok, reasonBuf, reasonBuf.length) !== 0) return null;
    return { healthy: ok[0] === 1, reason: ok[0] === 1 ? null : errText(reasonBuf) };
  }

  #loopEnded(reason) {
    // With recampaign off the loop ends after the first lost term: that
    // loss was the term's stop. Otherwise it ended for good on an error.
    const expected = (!this.#recampaign && this.#termsStopped > 0) || /: stopped$/.test(reason);
    this.#finish(expected ? DONE : { error: makeError(ErrorCode.CLOSED, `the election loop ended: ${reason}`) });
    this.close().catch(() => {});
  }

  // ---- iteration ----

  #yield(w, t) {
    this.#yielded = t;
    w.resolve({ done: false, value: t });
  }

  // The iteration is over: pending and later next() calls get `end`.
  #finish(end) {
    if (this.#ended) return;
    this.#ended = end;
    for (const w of this.#waiters.splice(0)) {
      if (end.error) w.reject(end.error);
      else w.resolve(DONE);
    }
  }

  /**
   * The next term ({ done: false, value: term }), or { done: true } once the
   * elector was closed. Calling it says the consumer is done with the term
   * it got last: once that term's stop was delivered the elector may
   * campaign again.
   */
  next() {
    const last = this.#yielded;
    if (last) {
      this.#yielded = null;
      last._consumed = true;
      this.#lastReleased = last;
      if (last._kept) this.#scheduleRelease();
    }
    if (this.#ended) {
      if (this.#ended.error) {
        const e = this.#ended.error;
        this.#ended = DONE; // reported once
        return Promise.reject(e);
      }
      return Promise.resolve(DONE);
    }
    if (this.#ready.length > 0) {
      const t = this.#ready.shift();
      this.#yielded = t;
      return Promise.resolve({ done: false, value: t });
    }
    return new Promise((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      if (!this.#current && !this.#releaseScheduled) this.#armLoopWatch();
    });
  }

  /** Called by `break` (and a throw) in `for await`: closes the elector. */
  async return() {
    await this.close();
    return DONE;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  // ---- control ----

  /**
   * Withdraws (false) or restores (true) the candidacy: a holder resigns
   * (its term stops RESIGNED, the first standby takes over at once), a
   * standby leaves the roster; restored, the member registers again at the
   * tail of the roster. Resolves once that was written; rejects with the
   * KrabkaError that says why not (TIMEOUT after options.timeoutMs, default
   * request.timeout.ms). Runs on the libuv pool (the C call blocks).
   */
  setEligible(eligible, options) {
    if (typeof eligible !== 'boolean') throw new TypeError(`setEligible: eligible must be a boolean, got ${describe(eligible)}`);
    const t = timeoutArg(options, 'setEligible');
    const h = this.#live('setEligible');
    this.#eligible = eligible;
    const eb = Buffer.alloc(ERRSTR_SIZE);
    return calls.onPool('krabka_elector_set_eligible', h, eligible ? 1 : 0, t, eb, eb.length).then((code) => {
      if (code !== 0) throw makeError(code, errText(eb) || `setEligible(${eligible})`);
    });
  }

  /**
   * { healthy, reason } for a health endpoint: healthy while campaigning,
   * standing by, withdrawn, or holding the role with its lease renewed on
   * time; not (reason says why) while the held lease is at risk and after
   * the loop ended. Never blocks.
   */
  healthy() {
    const h = this.#live('healthy');
    const ok = [0];
    reasonBuf[0] = 0;
    const code = fns().krabka_elector_healthy(h, ok, reasonBuf, reasonBuf.length);
    if (code !== 0) throw makeError(code, errText(reasonBuf));
    return Object.freeze({ healthy: ok[0] === 1, reason: ok[0] === 1 ? null : errText(reasonBuf) });
  }

  /**
   * Ends the election: a held term is resigned (the first standby takes
   * over at once) and its stop delivered before the Promise resolves; the
   * iteration ends. Idempotent: every call returns the same Promise.
   */
  close() {
    if (this.#closing) return this.#closing;
    this.#stopLoopWatch();
    if (this.#signal) this.#signal.removeEventListener('abort', this.#onAbort);
    const h = this.#handle;
    this.#closing = calls.destroyOnPool('elector', h).then((code) => {
      calls.drain(); // the STOPPED that destroy posted before it returned
      const t = this.#current;
      if (t) {
        // Not posted (cannot happen while the queue lives): the term is over
        // all the same, the loop has ended.
        this.#current = null;
        const stop = Object.freeze({ reason: 'CLOSED', error: makeError(ErrorCode.CLOSED, 'the elector was closed') });
        t._stopped(stop);
        safeEmit(this, 'stopped', t, stop);
      }
      this.#stream.drop();
      for (const x of [this.#yielded, ...this.#ready, this.#lastReleased].filter(Boolean)) {
        x._consumed = true;
        this.#release(x);
      }
      this.#ready = [];
      this.#finish(DONE);
      this.#onClosed(this);
      if (code !== 0 && code !== ErrorCode.INVALID_HANDLE) throw makeError(code, 'destroying the elector');
    });
    return this.#closing;
  }
}

module.exports = { Elector, Term, electOptions };
