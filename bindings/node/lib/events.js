'use strict';
// The completion path of the waiting calls (acquire, Leadership.ended,
// watches) and of the log lines: one krabka_queue_t for the process. The
// library waits on its own threads and posts one event per call to the
// queue; the queue's fd (the read end of a pipe) is watched by libuv as a
// stream on the JavaScript thread, which drains the queue and settles the
// matching Promise. No libuv pool thread is held while a call waits, so any
// number can wait at once.
//
// The stream is unref'd unless a call that should keep the process alive is
// pending (an acquire, a watch's next event, an `ended` whose leadership has
// ended). A pending `ended` of a leadership that is still active does not
// keep the event loop alive; once the leadership ended its event is on its
// way (a library goroutine posts it after the end, possibly after the call
// that ended it returned), and from then on it keeps the loop alive until
// it is delivered: otherwise the completion of a resign, a refused write or
// a client's close could leave nothing referenced and the process would
// exit with `ended` pending.

const net = require('node:net');
const { native, T } = require('./native');
const { check, makeError } = require('./errors');

const EVENT_NONE = 0;
const EVENT_ACQUIRE = 1;
const EVENT_ENDED = 2;
const EVENT_LOG = 3;
const EVENT_WATCH = 4;

let queue = null; // { handle, socket }
let nextTag = 1;
const waiting = new Map(); // tag -> { onEvent, keepAlive }
// Tags of `ended` waiters not yet keeping the loop alive -> over(), true
// once their leadership is known to have ended (see holdIfOver).
const endWaiters = new Map();
const logSinks = new Map(); // tag -> (level, line) => void
let keepAlive = 0;

const LOG_LEVELS = { 3: 'error', 4: 'warning', 6: 'info', 7: 'debug' };

function refresh() {
  if (!queue) return;
  if (keepAlive > 0) queue.socket.ref();
  else queue.socket.unref();
}

// A reader for watch events (set by the watch module).
let watchReader = null;
function setWatchReader(fn) {
  watchReader = fn;
}

function drain() {
  const n = native().fns;
  for (;;) {
    const ev = {};
    const code = n.krabka_queue_poll(queue.handle, ev);
    if (code !== 0 || ev.type === EVENT_NONE) return;
    const tag = Number(ev.tag);
    if (ev.type === EVENT_LOG) {
      const sink = logSinks.get(tag);
      if (sink) {
        try {
          sink(LOG_LEVELS[ev.log_level] || 'info', ev.log_line || '');
        } catch {
          /* a listener's bug must not stop the drain */
        }
      }
      continue;
    }
    const w = waiting.get(tag);
    const watchEvent = ev.type === EVENT_WATCH && ev.watch_event && watchReader ? watchReader(ev.watch_event) : null;
    if (!w) {
      if (ev.leadership) n.krabka_leadership_destroy(ev.leadership);
      continue;
    }
    waiting.delete(tag);
    endWaiters.delete(tag);
    if (w.keepAlive) {
      keepAlive--;
      refresh();
    }
    try {
      w.onEvent({ type: ev.type, err: ev.err, errstr: ev.errstr || '', leadership: ev.leadership, state: ev.state, watchEvent });
    } catch {
      /* the handler settles a Promise; it does not throw */
    }
  }
}

/** The process's queue handle (created on first use). */
function queueHandle() {
  if (queue) return queue.handle;
  const n = native().fns;
  const out = [null];
  check(n.krabka_queue_new(out));
  const fd = [0];
  check(n.krabka_queue_fd(out[0], fd));
  // libuv watches the pipe like any stream (epoll on the JS thread). The
  // queue, and so the fd, live as long as the process.
  const socket = new net.Socket({ fd: fd[0], readable: true, writable: false });
  socket.on('data', drain);
  socket.on('error', () => {});
  queue = { handle: out[0], socket };
  refresh();
  return queue.handle;
}

/**
 * Registers the handler of the one event of a new call and returns its tag.
 * keepAlive: keep the process alive until it arrives.
 */
function expect(onEvent, keep) {
  queueHandle();
  const tag = nextTag++;
  waiting.set(tag, { onEvent, keepAlive: keep });
  if (keep) {
    keepAlive++;
    refresh();
  }
  return tag;
}

/**
 * Registers the handler of a leadership's end event (Leadership.ended) and
 * returns its tag. It does not keep the process alive while over() is
 * false (the leadership is active); holdIfOver(tag) and holdEndedIfOver()
 * check over() again and, once it is true, keep the process alive until the
 * event arrives. The caller checks once after starting the wait (a
 * leadership that had already ended).
 */
function expectEnd(onEvent, over) {
  const tag = expect(onEvent, false);
  endWaiters.set(tag, over);
  return tag;
}

function hold(tag, over) {
  let ended;
  try {
    ended = over();
  } catch {
    ended = true; // the handle is gone: its end event is posted
  }
  if (!ended) return;
  endWaiters.delete(tag);
  const w = waiting.get(tag);
  if (!w || w.keepAlive) return;
  w.keepAlive = true;
  keepAlive++;
  refresh();
}

/** After a call that may have ended the leadership of the `ended` waiter
 *  `tag` (its renew, produce, resign, close): keeps the process alive until
 *  the event arrives if the leadership ended. */
function holdIfOver(tag) {
  const over = endWaiters.get(tag);
  if (over) hold(tag, over);
}

/** holdIfOver for every `ended` waiter (after a client's close, which ends
 *  all its leaderships). */
function holdEndedIfOver() {
  for (const [tag, over] of [...endWaiters]) hold(tag, over);
}

/** Forgets a tag whose call failed to start. */
function forget(tag) {
  const w = waiting.get(tag);
  if (!w) return;
  waiting.delete(tag);
  endWaiters.delete(tag);
  if (w.keepAlive) {
    keepAlive--;
    refresh();
  }
}

/** Stops a pending call from keeping the process alive (its event is
 *  still delivered to its handler if the process lives on). */
function release(tag) {
  const w = waiting.get(tag);
  if (!w || !w.keepAlive) return;
  w.keepAlive = false;
  keepAlive--;
  refresh();
}

/** Undoes release(tag): the pending call keeps the process alive again. */
function retain(tag) {
  const w = waiting.get(tag);
  if (!w || w.keepAlive) return;
  w.keepAlive = true;
  keepAlive++;
  refresh();
}

/** A tag for a client's log lines; sink(level, line) receives them. */
function logTag(sink) {
  queueHandle();
  const tag = nextTag++;
  logSinks.set(tag, sink);
  return tag;
}

function dropLogTag(tag) {
  logSinks.delete(tag);
}

/** The error of a failed completion. */
function eventError(e) {
  return makeError(e.err, e.errstr);
}

module.exports = {
  EVENT_ACQUIRE,
  EVENT_ENDED,
  EVENT_WATCH,
  queueHandle,
  expect,
  expectEnd,
  holdIfOver,
  holdEndedIfOver,
  forget,
  release,
  retain,
  logTag,
  dropLogTag,
  eventError,
  setWatchReader,
  drain,
  T,
};
