'use strict';
// Argument checks done before anything reaches C: wrong types throw
// TypeError, out-of-range numbers RangeError, with the argument's name.

const { makeError, ErrorCode } = require('./errors');

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const EMPTY = Buffer.alloc(1); // a valid pointer for zero-length inputs

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? `an object (${v.constructor ? v.constructor.name : 'Object'})` : `a ${typeof v}`;
}

/**
 * A role or member id (string or bytes) as the UTF-8 Buffer passed to C.
 * Content rules (empty, too long, invalid UTF-8) are checked by the library.
 */
function nameBytes(value, what) {
  if (typeof value === 'string') {
    if (!value.isWellFormed()) {
      throw makeError(ErrorCode.INVALID_UTF8, `${what} is not a well-formed string (it holds a lone surrogate)`);
    }
    return Buffer.from(value, 'utf8');
  }
  if (value instanceof Uint8Array) return value;
  throw new TypeError(`${what} must be a string or a Buffer, got ${describe(value)}`);
}

/** Bytes for a byte-string argument (Buffer/Uint8Array; strings as UTF-8). */
function bytesArg(value, what, { allowString = true } = {}) {
  if (value instanceof Uint8Array) return value;
  if (allowString && typeof value === 'string') return Buffer.from(value, 'utf8');
  throw new TypeError(`${what} must be a Buffer${allowString ? ' or a string' : ''}, got ${describe(value)}`);
}

/** Pointer-safe view: C never sees a zero-length buffer pointer. */
const ptr = (buf) => (buf.length === 0 ? EMPTY : buf);

/** A signed 64-bit integer from a bigint or a safe-integer number. */
function int64Arg(value, what) {
  if (typeof value === 'bigint') {
    if (value < INT64_MIN || value > INT64_MAX) throw new RangeError(`${what} ${value} is outside the signed 64-bit range`);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new RangeError(`${what} must be an integer (a bigint beyond 2^53), got ${value}`);
    }
    return BigInt(value);
  }
  throw new TypeError(`${what} must be a bigint or an integer number, got ${describe(value)}`);
}

/** A signed integer of `bits` (16 or 32) bits, from a number or a bigint. */
function intArg(value, what, bits) {
  const lo = -(2 ** (bits - 1));
  const hi = 2 ** (bits - 1) - 1;
  if (typeof value === 'bigint') {
    if (value < BigInt(lo) || value > BigInt(hi)) throw new RangeError(`${what} ${value} is outside the signed ${bits}-bit range`);
    return Number(value);
  }
  if (typeof value !== 'number') throw new TypeError(`${what} must be an integer number, got ${describe(value)}`);
  if (!Number.isInteger(value)) throw new RangeError(`${what} must be an integer, got ${value}`);
  if (value < lo || value > hi) throw new RangeError(`${what} ${value} is outside the signed ${bits}-bit range`);
  return value;
}

/** The options object of a blocking call and its timeoutMs (0 = the default). */
function timeoutArg(options, what) {
  if (options === undefined || options === null) return 0n;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${what}: options must be an object such as { timeoutMs: 5000 }, got ${describe(options)}`);
  }
  const t = options.timeoutMs;
  if (t === undefined) return 0n;
  const v = int64Arg(t, `${what}: timeoutMs`);
  if (v < 0n) throw new RangeError(`${what}: timeoutMs must be >= 0 (0 = the default), got ${t}`);
  return v;
}

/**
 * The AbortSignal of a blocking call's options (options.signal), or null.
 * Anything else there is a TypeError.
 */
function signalArg(options, what) {
  if (options === undefined || options === null || typeof options !== 'object') return null;
  const s = options.signal;
  if (s === undefined || s === null) return null;
  if (!(s instanceof AbortSignal)) throw new TypeError(`${what}: options.signal must be an AbortSignal, got ${describe(s)}`);
  return s;
}

/** The AbortError a call rejects with once its signal aborted (Node's own
 *  form: name 'AbortError', code 'ABORT_ERR', the signal's reason as cause). */
function abortError(signal, what) {
  const e = new Error(`${what}: the operation was aborted`, { cause: signal.reason });
  e.name = 'AbortError';
  e.code = 'ABORT_ERR';
  return e;
}

/** Converts an int64 that koffi gave as number or bigint into a bigint. */
const big = (v) => (typeof v === 'bigint' ? v : BigInt(v));

module.exports = { nameBytes, bytesArg, ptr, int64Arg, intArg, timeoutArg, signalArg, abortError, big, describe, EMPTY };
