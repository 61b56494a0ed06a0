'use strict';
// Record headers (docs/PROTOCOL.md section 11): the metadata of a term and
// of a member, the headers of guarded writes, and the Verifier of consumed
// guarded writes. Argument checks; the rules (the 4096-byte limit, the
// reserved `krabka.` names, the verdicts) are the library's.

const { native, CONSTANTS } = require('./native');
const { check, makeError, ErrorCode } = require('./errors');
const { nameBytes, bytesArg, ptr, int64Arg, intArg, describe } = require('./args');
const { FencingToken, tokenArg } = require('./token');
const { verdictName } = require('./values');

/** Most bytes of metadata of a term or of a member (KRABKA_MAX_METADATA_BYTES). */
const MAX_METADATA_BYTES = CONSTANTS.MAX_METADATA_BYTES;

const fns = () => native().fns;

/**
 * Metadata given by the caller: a Buffer or Uint8Array (copied), or
 * null/undefined for none. A zero-length one is none too (the library reads
 * an empty krabka.meta as no metadata). Other types throw TypeError naming
 * `what`.
 */
function metadataArg(value, what) {
  if (value === undefined || value === null) return null;
  if (!(value instanceof Uint8Array)) throw new TypeError(`${what} must be a Buffer or a Uint8Array (or null), got ${describe(value)}`);
  return value.length === 0 ? null : Buffer.from(value);
}

/** The library's invalid-argument error for metadata over the limit (null if it fits). */
function metadataTooLong(bytes, what) {
  if (bytes === null || bytes.length <= MAX_METADATA_BYTES) return null;
  return makeError(ErrorCode.INVALID_ARG, `krabka: ${what} of ${bytes.length} bytes: at most ${MAX_METADATA_BYTES} allowed (krabka.meta)`);
}

/** Two metadata values (Buffer or null) hold the same bytes. */

/**
 * The headers of one guarded write: an object of name -> value, a Map, or
 * an array of [name, value] pairs (the order is kept; a name may repeat in
 * the array form). Names are strings (no NUL); values Buffers, Uint8Arrays
 * or strings (UTF-8). Returns [{ key, value: Buffer }], [] for none.
 * Reserved names (`krabka.`) are refused by the library, not here.
 */
function headersArg(headers, what) {
  if (headers === undefined || headers === null) return [];
  let pairs;
  if (Array.isArray(headers)) {
    pairs = headers.map((p, i) => {
      if (!Array.isArray(p) || p.length !== 2) throw new TypeError(`${what}[${i}] must be a [name, value] pair, got ${describe(p)}`);
      return [p[0], p[1], `${what}[${i}]`];
    });
  } else if (headers instanceof Map) {
    pairs = [...headers].map(([k, v]) => [k, v, `${what}`]);
  } else if (typeof headers === 'object' && !(headers instanceof Uint8Array) && [Object.prototype, null].includes(Object.getPrototypeOf(headers))) {
    pairs = Object.entries(headers).map(([k, v]) => [k, v, `${what}`]);
  } else {
    throw new TypeError(`${what} must be an object of name -> value or an array of [name, value] pairs, got ${describe(headers)}`);
  }
  return pairs.map(([key, value, where]) => {
    if (typeof key !== 'string') throw new TypeError(`${where}: a header name must be a string, got ${describe(key)}`);
    if (key.includes('\0')) throw new RangeError(`${where}: header name ${JSON.stringify(key)} must not contain NUL characters`);
    if (!key.isWellFormed()) throw makeError(ErrorCode.INVALID_UTF8, `${where}: header name ${JSON.stringify(key)} is not a well-formed string (it holds a lone surrogate)`);
    const v = bytesArg(value, `${where}: the value of header ${JSON.stringify(key)}`);
    return { key, value: Buffer.from(v) };
  });
}

// ---------------------------------------------------------------------------

const finalizer = new FinalizationRegistry((handle) => {
  try {
    fns().krabka_verifier_destroy(handle);
  } catch {
    /* process is exiting */
  }
});

/** A batch token: a FencingToken or { producerId, producerEpoch } (as a
 *  Kafka consumer reports the record batch's producer id and epoch). */
function batchArg(t, what) {
  if (t instanceof FencingToken) return tokenArg(t, what);
  if (t === null || typeof t !== 'object' || Array.isArray(t)) {
    throw new TypeError(`${what} must be a FencingToken or { producerId, producerEpoch }, got ${describe(t)}`);
  }
  return { producer_id: int64Arg(t.producerId, `${what}.producerId`), producer_epoch: intArg(t.producerEpoch, `${what}.producerEpoch`, 16) };
}

/**
 * Judges consumed guarded writes (docs/PROTOCOL.md 11.5): keeps the highest
 * token seen per scope (a role, or however the consumer groups its
 * writers) and compares a record's krabka.token header with the producer
 * id and epoch of its record batch, which the broker accepted. Never
 * blocks; the rules are the library's (core.Verifier).
 */
class Verifier {
  #handle;

  constructor() {
    const out = [null];
    check(fns().krabka_verifier_new(out));
    this.#handle = out[0];
    finalizer.register(this, this.#handle, this);
  }

  #live() {
    if (!this.#handle) throw makeError(ErrorCode.INVALID_HANDLE, 'the verifier was closed');
    return this.#handle;
  }

  /**
   * The verdict on one consumed record of `scope` (string or UTF-8 bytes):
   * `header` is the value of its krabka.token header (Buffer, Uint8Array or
   * string; null or undefined: the record has none), `batchToken` the
   * producer id and epoch of its record batch (a FencingToken or
   * { producerId, producerEpoch }). Checked in order: 'MISMATCH' (the header
   * is not the batch's token), 'STALE' (the batch's token is older than the
   * highest seen for the scope), 'UNSTAMPED' (no header), else 'OK' (the
   * names of krabka_verdict_t). A record that is neither 'MISMATCH' nor
   * 'STALE' raises the scope's highest.
   */
  judge(scope, header, batchToken) {
    const s = nameBytes(scope, 'scope');
    const h = header === undefined || header === null ? null : bytesArg(header, 'header');
    const batch = batchArg(batchToken, 'batchToken');
    const out = [0];
    check(fns().krabka_verifier_judge(this.#live(), ptr(s), s.length, h === null ? null : ptr(h), h === null ? 0 : h.length, batch, out));
    return verdictName(out[0]);
  }

  /** The highest token seen for scope (a FencingToken), or null if none yet. */
  highest(scope) {
    const s = nameBytes(scope, 'scope');
    const has = [0];
    const tok = {};
    check(fns().krabka_verifier_highest(this.#live(), ptr(s), s.length, has, tok));
    return has[0] ? FencingToken.fromC(tok) : null;
  }

  /** True once close() was called. */
  get closed() {
    return !this.#handle;
  }

  /** Releases the verifier (idempotent; never blocks). Later judge() and
   *  highest() calls throw KrabkaError INVALID_HANDLE. */
  close() {
    if (!this.#handle) return;
    finalizer.unregister(this);
    const h = this.#handle;
    this.#handle = null;
    check(fns().krabka_verifier_destroy(h));
  }

  /** Same as close() (for `using verifier = new Verifier()`). */
  [Symbol.dispose]() {
    this.close();
  }
}

module.exports = { metadataArg, metadataTooLong, headersArg, Verifier, MAX_METADATA_BYTES };
