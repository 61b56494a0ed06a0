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
const { native, ERRSTR_SIZE } = require('./native');
const { makeError, errText, ErrorCode } = require('./errors');
const { timeoutArg, describe } = require('./args');
const { Leadership } = require('./leadership');
const { Term, safeEmit, scalar, tokenOf, deadlineOf, holderOf, stopOf, errorOf } = require('./term');
const calls = require('./calls');

const fns = () => native().fns;
const DONE = Object.freeze({ done: true, value: undefined });

// Scratch buffer of healthy() (the JS thread is its only user).
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

// ---- Elector ---------------------------------------------------------------

/**
 * client.elect(role, member, options): see index.d.ts and README.md.
 * Events: 'started' (term), 'atRisk' (term, deadline), 'suspended' (term,
 * deadline), 'recovered' (term, deadline), 'stopped' (term, { reason,
 * error }), 'leader' ({ holder, token, deadline }), 'ended' (error or
 * null: the loop ended, the ELECTOR_STOPPED event).
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
  #releaseScheduled = false;
  #endError = null; // why the loop ended by itself (its ELECTOR_STOPPED event)

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
    // opts.acquireOptions: the client's krabka_acquire_options_t (the metadata), copied by the call
    const { handle, stream } = calls.openStream((_n, ev) => this.#event(ev), (q, tag, out, eb) =>
      n.krabka_elector_new_opts(clientHandle, roleBytes, roleBytes.length, memberBytes, memberBytes.length, opts.acquireOptions, flags, q, tag, out, eb, eb.length));
    this.#handle = handle;
    this.#stream = stream;
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
    if (kind === abi.TermEventKind.ELECTOR_STOPPED) {
      this.#loopEnded(errorOf(ev));
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
      case abi.TermEventKind.SUSPENDED:
      case abi.TermEventKind.RECOVERED: {
        const t = this.#current;
        if (!t || t.number !== number) return false;
        const deadline = deadlineOf(ev);
        const name = kind === abi.TermEventKind.AT_RISK ? 'atRisk' : kind === abi.TermEventKind.SUSPENDED ? 'suspended' : 'recovered';
        t._lease(name, deadline);
        safeEmit(this, name, t, deadline);
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
  }

  // The loop ended (its ELECTOR_STOPPED event, the last one; error: null
  // when close() ended it). It ends the iteration as close() does when
  // the host ended it (close(), or its client closed: CLOSED) and, with
  // recampaign off, after the first lost term, whose stop was delivered.
  // Otherwise it ended for good (the cluster refused the member), and the
  // iteration rejects with that error.
  #loopEnded(error) {
    this.#endError = error;
    safeEmit(this, 'ended', error);
    if (this.#closing) return;
    const expected = error === null || error.code === ErrorCode.CLOSED || (!this.#recampaign && this.#termsStopped > 0);
    this.#finish(expected ? DONE : { error });
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
   * Where the loop is, a krabka_elector_state_t name: 'CAMPAIGNING' between
   * terms (standing by and withdrawn included), 'HOLDING', 'AT_RISK',
   * 'SUSPENDED' (a term rides out an outage: dispatch nothing), 'STOPPED'
   * once the loop ended (`error` says why) or the elector was closed.
   * Never blocks.
   */
  state() {
    if (this.#closing || !this.#handle) return 'STOPPED';
    const out = [0];
    const code = fns().krabka_elector_state(this.#handle, out);
    if (code === ErrorCode.INVALID_HANDLE) return 'STOPPED';
    if (code !== 0) throw makeError(code, 'krabka_elector_state');
    return abi.ElectorStateName[out[0]] || `ElectorState(${out[0]})`;
  }

  /**
   * Why the loop ended by itself (the KrabkaError of its ELECTOR_STOPPED
   * event: CLOSED when the client was closed, the lost term's error with
   * recampaign false, AUTHORIZATION, ...); null while it runs and when
   * close() ended it.
   */
  get error() {
    return this.#endError;
  }

  /**
   * { healthy, reason } for a health endpoint: healthy while campaigning,
   * standing by, withdrawn, or holding the role with its lease renewed on
   * time; not while the held lease is at risk, while a term is suspended
   * and after the loop ended. The reason is for people; state() is the
   * code. Never blocks.
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
