'use strict';
// Error classes. The codes and their names, descriptions and retriable/fatal
// flags are the loaded library's own table (krabka_get_err_descs; the
// generated ERROR_DESCS of lib/abi.js for a code only the binding knows), so
// a code the library adds needs no edit here: it rejects with a KrabkaError
// carrying the library's name and text for it. The data codes (DecodeError,
// `category`) are the generated DATA_CATEGORIES.

const abi = require('./abi');
const { koffi, native } = require('./native');

/** Error numbers of include/krabka_coord.h (they never change). */
const ErrorCode = abi.ErrorCode;

let table = null; // code -> { name, text, retriable, fatal }

/** code -> its row, the library's answers over the generated ones. */
function errorTable() {
  if (table) return table;
  const t = new Map();
  for (const d of abi.ERROR_DESCS) t.set(d.code, d);
  const n = native();
  const descs = [null];
  const count = [0];
  n.fns.krabka_get_err_descs(descs, count);
  const len = Number(count[0]);
  if (descs[0] && len > 0) {
    for (const d of koffi.decode(descs[0], n.types.krabka_err_desc_t, len)) {
      t.set(d.code, { code: d.code, name: d.name, text: d.desc, retriable: d.retriable === 1, fatal: d.fatal === 1 });
    }
  }
  table = t;
  return t;
}

/**
 * { name, text, retriable, fatal } of a code: the library's table, and for a
 * code no table holds the library's own answers (krabka_err2name says
 * "UNKNOWN", krabka_err2str "unknown error").
 */
function describeCode(code) {
  const row = errorTable().get(code);
  if (row) return row;
  const f = native().fns;
  return { name: f.krabka_err2name(code), text: f.krabka_err2str(code), retriable: f.krabka_err_is_retriable(code) === 1, fatal: f.krabka_err_is_fatal(code) === 1 };
}

/** The conformance-vocabulary word of a data error code ("truncated"), else null. */
function categoryOf(code) {
  return Object.prototype.hasOwnProperty.call(abi.DATA_CATEGORIES, code) ? abi.DATA_CATEGORIES[code] : null;
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
    const d = describeCode(code);
    super(reason || d.text);
    this.code = code;
    this.codeName = d.name;
    this.description = d.text;
    this.reason = reason || d.text;
    this.retriable = d.retriable;
    this.fatal = d.fatal;
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
  if (categoryOf(code) !== null) return new DecodeError(code, reason);
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
  describeCode,
};
