'use strict';
// A term of an Elector (elect.js) and the reading of the TERM events that
// make it: each event is read once, in the drain, with a few accessor calls
// (kind, term, and what the kind carries). The kind is a code
// (krabka_term_event_kind_t); no state is ever read from text.

const EventEmitter = require('node:events');
const abi = require('./abi');
const { native, ERRSTR_SIZE, CONSTANTS } = require('./native');
const { makeError, errText, ErrorCode } = require('./errors');
const { big } = require('./args');
const { FencingToken } = require('./token');

const fns = () => native().fns;

// Scratch buffers of the drain (the JS thread is their only user).
const evErr = Buffer.alloc(ERRSTR_SIZE);
const holderBuf = Buffer.alloc(CONSTANTS.NAME_BUF);

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

/** The event's error: null when KRABKA_OK, else the KrabkaError. */
function errorOf(ev) {
  const code = [0];
  evErr[0] = 0;
  fns().krabka_event_error(ev, code, evErr, evErr.length);
  return code[0] ? makeError(code[0], errText(evErr)) : null;
}

/** STOPPED: { reason, error } (reason a StopReason name). */
function stopOf(ev) {
  const reason = abi.StopReasonName[scalar('krabka_event_stop_reason', ev)] || 'NONE';
  return Object.freeze({ reason, error: errorOf(ev) });
}

// ---- Term ------------------------------------------------------------------

/**
 * One won term of an Elector: number (1, 2, ... per elector), token,
 * deadline (the last lease deadline the elector reported, bigint epoch ms),
 * leadership (for guarded writes), signal (aborts when the term ends),
 * stopped (resolves once, with { reason, error }), atRisk, suspended (the
 * term rides out an outage: dispatch nothing until 'recovered'). Emits
 * 'atRisk' (deadline), 'suspended' (deadline), 'recovered' (deadline) and
 * 'stopped' ({ reason, error }).
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
    this.suspended = false;
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
    return `Term(${this.role}, ${this.member}, #${this.number}, ${this.token}, ${this.#stop ? `stopped ${this.#stop.reason}` : this.suspended ? 'suspended' : this.atRisk ? 'at risk' : 'active'})`;
  }

  /** @internal kind: AT_RISK, SUSPENDED or RECOVERED (the event name it emits). */
  _lease(kind, deadline) {
    if (this.#stop) return;
    if (kind === 'atRisk') this.atRisk = true;
    else if (kind === 'suspended') this.suspended = true;
    else this.atRisk = this.suspended = false;
    this.deadline = deadline;
    safeEmit(this, kind, deadline);
  }

  /** @internal Delivers the stop (once). */
  _stopped(stop) {
    if (this.#stop) return false;
    this.#stop = stop;
    this.atRisk = this.suspended = false;
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

module.exports = { Term, safeEmit, scalar, tokenOf, deadlineOf, holderOf, stopOf, errorOf };
