'use strict';
// The value readers: everything the binding reads out of C objects into
// JavaScript values (tokens, leases, roster entries, metadata, a describe
// result, a watch event, a guarded write's results, a leadership's getters,
// the names of enum values). None blocks; none takes or frees a handle (the
// caller owns what it reads).

const abi = require('./abi');
const { koffi, native, CONSTANTS } = require('./native');
const { check } = require('./errors');
const { FencingToken } = require('./token');
const { big } = require('./args');

const fns = () => native().fns;

// Scratch buffers for the synchronous readers (the JS thread is their only user).
const nameBuf = Buffer.alloc(CONSTANTS.NAME_BUF);
const metaScratch = Buffer.alloc(CONSTANTS.MAX_METADATA_BYTES);

/** The name of enum value n of `names` (a generated <Enum>Name object):
 *  'FENCED', 'HOLDER_CHANGED' (UPPER_SNAKE, as in C); a value this binding
 *  does not know (a newer library) is its number as text. */
function enumName(names, n) {
  return Object.prototype.hasOwnProperty.call(names, n) ? names[n] : String(n);
}
const stateName = (n) => enumName(abi.LeadershipStateName, n);
const kindName = (n) => enumName(abi.WatchEventKindName, n);
const logLevelName = (n) => enumName(abi.LogLevelName, n);
const verdictName = (n) => enumName(abi.VerdictName, n);

/** Decodes a fixed name array of a C struct (len bytes of UTF-8). */
function nameFrom(arr, len) {
  return Buffer.from(arr.buffer, arr.byteOffset, len).toString('utf8');
}

/** A krabka_lease_t as { member, token, grantedAt, deadline } (frozen). */
function leaseFromC(l) {
  return Object.freeze({
    member: nameFrom(l.member, l.member_len),
    token: FencingToken.fromC(l.token),
    grantedAt: big(l.granted_at),
    deadline: big(l.deadline),
  });
}

/** A krabka_roster_entry_t as { member, offset, registeredAt, rank } (plus `extra`). */
function rosterEntryFromC(e, extra) {
  return Object.freeze({
    member: nameFrom(e.member, e.member_len),
    offset: big(e.offset),
    registeredAt: big(e.registered_at),
    rank: e.rank,
    ...extra,
  });
}

/**
 * Metadata copied out of C: call(buf, bufSize, lenOut) is one of the
 * krabka_*_metadata functions. A Buffer of its own, or null for none.
 */
function metadataFrom(call) {
  const len = [0];
  let buf = metaScratch;
  let code = call(buf, buf.length, len);
  if (code !== 0 && Number(len[0]) > buf.length) {
    // A library with a larger limit than this binding knows: one more try.
    buf = Buffer.alloc(Number(len[0]));
    code = call(buf, buf.length, len);
  }
  check(code);
  const n = Number(len[0]);
  return n === 0 ? null : Buffer.from(buf.subarray(0, n));
}

/** A name copied out by call(buf, size, len) (krabka_watch_event_role). */
function nameOf(call) {
  const len = [0];
  check(call(nameBuf, nameBuf.length, len));
  return nameBuf.toString('utf8', 0, Number(len[0]));
}

/** A name that may be absent, copied out by call(has, buf, size, len): null when *has is 0. */
function optionalNameOf(call) {
  const has = [0];
  const len = [0];
  check(call(has, nameBuf, nameBuf.length, len));
  return has[0] ? nameBuf.toString('utf8', 0, Number(len[0])) : null;
}

/** The token an accessor call(out) writes. */
function tokenOf(call) {
  const out = {};
  check(call(out));
  return FencingToken.fromC(out);
}

/** A scalar an accessor call(out) writes. */
function scalarOf(call) {
  const out = [0];
  check(call(out));
  return out[0];
}

// ---- describe results (krabka_status_t) -----------------------------------

/** Reads a describe result into a frozen Status. */
function readStatus(h, roleName) {
  const n = fns();
  const hasLease = [0];
  const l = {};
  check(n.krabka_status_lease(h, hasLease, l));
  const count = Number(scalarOf((o) => n.krabka_status_roster_count(h, o)));
  const roster = [];
  for (let i = 0; i < count; i++) {
    const e = {};
    check(n.krabka_status_roster_entry(h, i, e));
    roster.push(rosterEntryFromC(e, { metadata: metadataFrom((buf, size, len) => n.krabka_status_roster_metadata(h, i, buf, size, len)) }));
  }
  return Object.freeze({
    role: roleName,
    partition: scalarOf((o) => n.krabka_status_partition(h, o)),
    token: tokenOf((o) => n.krabka_status_token(h, o)),
    current: scalarOf((o) => n.krabka_status_current(h, o)) === 1,
    holder: optionalNameOf((has, buf, size, len) => n.krabka_status_holder(h, has, buf, size, len)),
    lease: hasLease[0] ? leaseFromC(l) : null,
    metadata: metadataFrom((buf, size, len) => n.krabka_status_metadata(h, buf, size, len)),
    roster: Object.freeze(roster),
    skipped: Number(scalarOf((o) => n.krabka_status_skipped(h, o))),
    removed: Number(scalarOf((o) => n.krabka_status_removed(h, o))),
  });
}

// ---- watch events (krabka_watch_event_t) ------------------------------------

/** Reads a watch event into a frozen WatchEvent. */
function readWatchEvent(h) {
  const n = fns();
  const hasLease = [0];
  const l = {};
  check(n.krabka_watch_event_lease(h, hasLease, l));
  const count = Number(scalarOf((o) => n.krabka_watch_event_roster_count(h, o)));
  const roster = [];
  for (let i = 0; i < count; i++) {
    const e = {};
    check(n.krabka_watch_event_roster_entry(h, i, e));
    roster.push(rosterEntryFromC(e));
  }
  return Object.freeze({
    kind: kindName(scalarOf((o) => n.krabka_watch_event_kind(h, o))),
    role: nameOf((buf, size, len) => n.krabka_watch_event_role(h, buf, size, len)),
    holder: optionalNameOf((has, buf, size, len) => n.krabka_watch_event_holder(h, has, buf, size, len)),
    token: tokenOf((o) => n.krabka_watch_event_token(h, o)),
    prevHolder: optionalNameOf((has, buf, size, len) => n.krabka_watch_event_prev_holder(h, has, buf, size, len)),
    prevToken: tokenOf((o) => n.krabka_watch_event_prev_token(h, o)),
    lease: hasLease[0] ? leaseFromC(l) : null,
    metadata: metadataFrom((buf, size, len) => n.krabka_watch_event_metadata(h, buf, size, len)),
    roster: Object.freeze(roster),
    offset: big(scalarOf((o) => n.krabka_watch_event_offset(h, o))),
    atMs: big(scalarOf((o) => n.krabka_watch_event_at(h, o))),
  });
}

// ---- queue events --------------------------------------------------------

let resultLayout = null;

/** PRODUCE: where each message landed, [{ partition, offset }] in order. */
function readResults(ev, expected, errbuf) {
  const n = native();
  if (!resultLayout) {
    const t = n.types.krabka_produce_result_t;
    resultLayout = { size: koffi.sizeof(t), partition: koffi.offsetof(t, 'partition'), offset: koffi.offsetof(t, 'offset') };
  }
  const { size, partition, offset } = resultLayout;
  const buf = Buffer.alloc(size * Math.max(expected, 1));
  const count = [0];
  check(n.fns.krabka_event_results(ev, buf, expected, count, errbuf, errbuf.length), errbuf);
  const got = Math.min(Number(count[0]), expected);
  const out = [];
  for (let i = 0; i < got; i++) {
    const at = size * i;
    out.push({ partition: buf.readInt32LE(at + partition), offset: buf.readBigInt64LE(at + offset) });
  }
  return out;
}

/** TRY_ACQUIRE not won: when trying again can change the answer (bigint epoch ms). */
function readRetryAt(ev, errbuf) {
  const out = [0];
  check(native().fns.krabka_event_retry_at(ev, out, errbuf, errbuf.length), errbuf);
  return big(out[0]);
}

/** ENDED: the final state's name. */
function readEndState(ev, errbuf) {
  const out = [0];
  check(native().fns.krabka_event_state(ev, out, errbuf, errbuf.length), errbuf);
  return stateName(out[0]);
}

/** LOG: { level, message }. */
function readLog(ev, errbuf) {
  const level = [0];
  const line = [null];
  check(native().fns.krabka_event_log(ev, level, line, errbuf, errbuf.length), errbuf);
  return { level: logLevelName(level[0]), message: line[0] || '' };
}

// ---- a leadership's getters ---------------------------------------------

const leadershipToken = (h) => tokenOf((o) => fns().krabka_leadership_token(h, o));

function leadershipLease(h) {
  const out = {};
  check(fns().krabka_leadership_lease(h, out));
  return leaseFromC(out);
}

const leadershipStateNumber = (h) => scalarOf((o) => fns().krabka_leadership_state(h, o));
const leadershipState = (h) => stateName(leadershipStateNumber(h));
const leadershipRenewDue = (h) => scalarOf((o) => fns().krabka_leadership_renew_due(h, o)) === 1;
const leadershipMetadata = (h) => metadataFrom((buf, size, len) => fns().krabka_leadership_metadata(h, buf, size, len));

module.exports = {
  enumName,
  stateName,
  kindName,
  logLevelName,
  verdictName,
  nameFrom,
  leaseFromC,
  rosterEntryFromC,
  metadataFrom,
  readStatus,
  readWatchEvent,
  readResults,
  readRetryAt,
  readEndState,
  readLog,
  leadershipToken,
  leadershipLease,
  leadershipStateNumber,
  leadershipState,
  leadershipRenewDue,
  leadershipMetadata,
};
