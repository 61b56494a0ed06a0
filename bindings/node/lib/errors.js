'use strict';
// Error classes. Codes and their names, descriptions and retriable/fatal
// flags come from the C library (krabka_err2name & co), so they never drift.

const { native } = require('./native');

/** Error numbers of include/krabka_coord.h (they never change). */
const ErrorCode = Object.freeze({
  OK: 0,
  INVALID_ARG: 1,
  INVALID_HANDLE: 2,
  BUFFER_TOO_SMALL: 3,
  UNKNOWN_CONFIG: 4,
  INVALID_CONFIG: 5,
  TRUNCATED: 10,
  TRAILING_BYTES: 11,
  UNSUPPORTED_VERSION: 12,
  UNKNOWN_KIND: 13,
  NEGATIVE_LENGTH: 14,
  INVALID_UTF8: 15,
  LEASE_KEY_HAS_MEMBER: 16,
  EMPTY_ROLE: 17,
  EMPTY_MEMBER: 18,
  ROLE_TOO_LONG: 19,
  MEMBER_TOO_LONG: 20,
  NEGATIVE_TOKEN: 21,
  TOKEN_FORM: 22,
  INVALID_PARTITION_COUNT: 23,
  INVALID_LEASE_CONFIG: 24,
  FENCED: 30,
  LEASE_EXPIRED: 31,
  NOT_LEADER: 32,
  TIMEOUT: 33,
  AUTHORIZATION: 34,
  UNSUPPORTED: 35,
  TRANSPORT: 36,
  CLOSED: 37,
  AUTHENTICATION: 38,
  MESSAGE_TOO_LARGE: 39,
  UNKNOWN_TOPIC_OR_PARTITION: 40,
  TLS: 41,
  FORKED: 42,
  INTERNAL: 50,
});

const isDataCode = (code) => code >= 10 && code <= 24;

/** The conformance-vocabulary word of a data error code ("truncated"), else null. */
function categoryOf(code) {
  if (!isDataCode(code)) return null;
  for (const [name, value] of Object.entries(ErrorCode)) if (value === code) return name.toLowerCase();
  return null;
}

/**
 * Every failure reported by libkrabka_coord.
 * - code: the numeric krabka_err_t (stable); codeName: its symbolic name ("FENCED").
 * - message: the library's reason text (errstr), or the code's description.
 * - retriable: the same call may succeed later (TIMEOUT, TRANSPORT).
 * - fatal: the object can no longer be used for that purpose
 *   (FENCED, LEASE_EXPIRED, NOT_LEADER, CLOSED, INTERNAL).
 * - category: the conformance word for data errors ("truncated"), else null.
 */
class KrabkaError extends Error {
  constructor(code, reason) {
    const n = native().fns;
    const description = n.krabka_err2str(code);
    super(reason || description);
    this.code = code;
    this.codeName = n.krabka_err2name(code);
    this.description = description;
    this.reason = reason || description;
    this.retriable = n.krabka_err_is_retriable(code) === 1;
    this.fatal = n.krabka_err_is_fatal(code) === 1;
    this.category = categoryOf(code);
  }
  get name() {
    return this.constructor.name;
  }
}

/** The cluster superseded this leadership: stop dispatching at once. */
class FencedError extends KrabkaError {}
/** Renewal failed until the lease deadline: the leadership ended by itself. */
class LeaseExpiredError extends KrabkaError {}
/** Bytes or text that do not form a valid value (a record, a name, a token,
 *  a partition count); `category` is the conformance word. */
class DecodeError extends KrabkaError {}

function makeError(code, reason) {
  if (code === ErrorCode.FENCED) return new FencedError(code, reason);
  if (code === ErrorCode.LEASE_EXPIRED) return new LeaseExpiredError(code, reason);
  if (isDataCode(code)) return new DecodeError(code, reason);
  return new KrabkaError(code, reason);
}

/** Reads a NUL-terminated errstr buffer. */
function errText(buf) {
  if (!buf) return '';
  const end = buf.indexOf(0);
  return buf.toString('utf8', 0, end < 0 ? buf.length : end);
}

/** Throws the error for a non-zero code, with the errstr reason. */
function check(code, errbuf) {
  if (code !== 0) throw makeError(code, errText(errbuf));
}

module.exports = {
  ErrorCode,
  KrabkaError,
  FencedError,
  LeaseExpiredError,
  DecodeError,
  makeError,
  check,
  errText,
  categoryOf,
};
