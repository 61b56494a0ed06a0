'use strict';
// Watching a role: client.watch(role) resolves to a Watch, an async
// iterator of watch events. Each next() is a krabka_watch_next_async call
// on the process's event queue (lib/calls.js): no libuv pool thread.

const { native } = require('./native');
const { makeError, ErrorCode } = require('./errors');
const { signalArg, abortError } = require('./args');
const values = require('./values');
const calls = require('./calls');

const finalizer = new FinalizationRegistry((handle) => calls.destroyOnPool('watch', handle));

const DONE = Object.freeze({ done: true, value: undefined });

/** WATCH: the watch event, taken from the queue event, read and released. */
function readNext(ev) {
  const h = calls.take(ev, 'watchEvent');
  if (!h) return DONE;
  try {
    return { done: false, value: values.readWatchEvent(h) };
  } finally {
    calls.free('watchEvent', h);
  }
}

/**
 * A subscription to the changes of one role (client.watch). Holds no epoch
 * and registers nothing. `for await (const ev of watch)`; the iteration
 * ends when the watch or its client is closed. A pending next() keeps the
 * process alive.
 *
 * One krabka_watch_next_async call at a time, so events come in the
 * watch's order: next() calls made while one is in flight wait for it, in
 * order.
 */
class Watch {
  #handle;
  #closed = null;
  #late = []; // events that arrived when no next() was waiting (aborted)
  #inflight = null; // the library call in flight (calls.begin's handle)
  #waiters = []; // next() calls waiting for it: { resolve, reject, done }

  /** @internal */
  constructor(handle, role) {
    this.#handle = handle;
    this.role = role;
    finalizer.register(this, handle, this);
  }

  /**
   * The next event: { done: false, value } or { done: true } once the watch
   * ended. options.signal (an AbortSignal): when it aborts, the Promise
   * rejects at once with an AbortError and no longer keeps the process
   * alive; an event that arrives after the abort is not lost: the next
   * next() returns it.
   */
  next(options) {
    const signal = signalArg(options, 'next');
    if (signal && signal.aborted) return Promise.reject(abortError(signal, 'next'));
    if (this.#late.length > 0) return Promise.resolve(this.#late.shift());
    if (this.#closed) return Promise.resolve(DONE);
    return new Promise((resolve, reject) => {
      const w = { resolve, reject, done: () => {} };
      if (signal) {
        const onAbort = () => {
          const i = this.#waiters.indexOf(w);
          if (i < 0) return;
          this.#waiters.splice(i, 1);
          this.#keep();
          reject(abortError(signal, 'next'));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        w.done = () => signal.removeEventListener('abort', onAbort);
      }
      this.#waiters.push(w);
      if (this.#inflight) this.#keep();
      else this.#start();
    });
  }

  // The call in flight keeps the process alive while a next() waits for it.
  #keep() {
    if (!this.#inflight) return;
    if (this.#waiters.length > 0) this.#inflight.retain();
    else this.#inflight.release();
  }

  #start() {
    const c = calls.begin({
      what: 'next',
      start: (q, tag) => native().fns.krabka_watch_next_async(this.#handle, 0, q, tag),
      read: readNext,
    });
    this.#inflight = c;
    c.promise.then(
      (r) => this.#completed(c, r, null),
      (e) => this.#completed(c, null, e),
    );
  }

  // Call c completed: r is { done, value }, or null with e the call's error.
  #completed(c, r, e) {
    if (this.#inflight === c) this.#inflight = null;
    let result = r;
    let error = null;
    if (!result) {
      // The watch was destroyed (close()) or ended (its client closed): done.
      if (e && (e.code === ErrorCode.CLOSED || e.code === ErrorCode.INVALID_HANDLE)) result = DONE;
      else error = e || makeError(ErrorCode.INTERNAL, 'next: no result');
    }
    const w = this.#waiters.shift();
    if (w) {
      w.done();
      if (result) w.resolve(result);
      else w.reject(error);
    } else if (result && !result.done) {
      this.#late.push(result);
    }
    if (this.#waiters.length === 0) return;
    if (this.#closed || (result && result.done)) {
      for (const x of this.#waiters.splice(0)) {
        x.done();
        x.resolve(DONE);
      }
    } else if (!this.#inflight) {
      this.#start();
    } else {
      this.#keep();
    }
  }

  /** Ends the watch (idempotent); pending next() calls resolve done. */
  close() {
    if (!this.#closed) {
      finalizer.unregister(this);
      this.#closed = calls.destroyOnPool('watch', this.#handle).then(() => {});
    }
    return this.#closed;
  }

  /** Called by `break` in for await: closes the watch. */
  async return() {
    await this.close();
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }
}

module.exports = { Watch };
