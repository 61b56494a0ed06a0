'use strict';
// The fencing token: (producer id, producer epoch). Its rules (order, text
// form, validation) run in JavaScript: a call into the library from the main
// thread costs about 1 µs (it cost 100-2000 us before capi/kc_stack.c;
// docs/PERFORMANCE.md) against well under 0.1 µs here, and the token vectors
// of the conformance suite hold this code to the contract.

const { native } = require('./native');
const { makeError, ErrorCode } = require('./errors');
const { bytesArg, int64Arg, intArg, big, describe } = require('./args');

const C = Symbol('krabka.ctoken');
let rawConstruct = false; // set while building a token that came from C
const fns = () => native().fns;

/**
 * A fencing token: (producer id, producer epoch), ordered lexicographically
 * (producer id first). Immutable. Never compare epochs alone.
 */
class FencingToken {
  /**
   * @param {bigint|number} producerId signed 64-bit, >= 0
   * @param {number} producerEpoch signed 16-bit, >= 0
   * Throws DecodeError (category negative_token) for negative halves.
   */
  constructor(producerId, producerEpoch) {
    const id = int64Arg(producerId, 'producerId');
    const epoch = intArg(producerEpoch, 'producerEpoch', 16);
    const c = { producer_id: id, producer_epoch: epoch };
    if (!rawConstruct) {
      // In JavaScript, not through the library: a call from the main
      // thread into it costs about 1 µs (docs/PERFORMANCE.md); the token
      // vectors of the conformance suite guard these rules.
      if (id < 0n) throw makeError(ErrorCode.NEGATIVE_TOKEN, `krabka: token: producer_id: negative_token: ${id} is negative`);
      if (epoch < 0) throw makeError(ErrorCode.NEGATIVE_TOKEN, `krabka: token: producer_epoch: negative_token: ${epoch} is negative`);
    }
    /** @type {bigint} */
    this.producerId = id;
    /** @type {number} */
    this.producerEpoch = epoch;
    Object.defineProperty(this, C, { value: c });
    Object.freeze(this);
  }

  /** -1, 0 or 1 as this token is below, equal to or above `other`. */
  compare(other) {
    tokenArg(other, 'other');
    if (this.producerId !== other.producerId) return this.producerId < other.producerId ? -1 : 1;
    if (this.producerEpoch !== other.producerEpoch) return this.producerEpoch < other.producerEpoch ? -1 : 1;
    return 0;
  }

  /** True if this token supersedes `other` (compare(other) === 1). */
  supersedes(other) {
    return this.compare(other) === 1;
  }

  /** True if both halves are equal. */
  equals(other) {
    return other instanceof FencingToken && this.compare(other) === 0;
  }

  /** True for NO_EPOCH (-1:-1), the token of a role nobody has taken. */
  get isNoEpoch() {
    return this.producerId === -1n && this.producerEpoch === -1;
  }

  /** The text form "<producer_id>:<producer_epoch>", e.g. "4242:7". */
  toString() {
    return `${this.producerId}:${this.producerEpoch}`;
  }

  toJSON() {
    return this.toString();
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `FencingToken(${this.toString()})`;
  }

  /** Parses the text form; throws DecodeError (token_form or negative_token). */
  static parse(text) {
    // The rules of core.ParseFencingToken, on the bytes: exactly one colon,
    // a signed 64-bit id and a signed 16-bit epoch in ASCII decimal (an
    // optional '+' or '-' each), else token_form; negative halves are
    // negative_token.
    const s = bytesArg(text, 'text').toString('latin1');
    const i = s.indexOf(':');
    if (i < 0 || s.indexOf(':', i + 1) >= 0) {
      throw makeError(ErrorCode.TOKEN_FORM, 'krabka: token: text: token_form: must contain exactly one colon');
    }
    const id = parseDecimal(s.slice(0, i), 64);
    if (id === null) throw makeError(ErrorCode.TOKEN_FORM, 'krabka: token: producer_id: token_form: is not a 64-bit decimal integer');
    const epoch = parseDecimal(s.slice(i + 1), 16);
    if (epoch === null) throw makeError(ErrorCode.TOKEN_FORM, 'krabka: token: producer_epoch: token_form: is not a 16-bit decimal integer');
    return new FencingToken(id, Number(epoch));
  }

  /** @internal a token from a C struct (no validation: NO_EPOCH is legal here). */
  static fromC(c) {
    rawConstruct = true;
    try {
      return new FencingToken(big(c.producer_id), c.producer_epoch);
    } finally {
      rawConstruct = false;
    }
  }
}

/** An optionally signed run of ASCII digits that fits a signed integer of
 *  `bits` bits, as a bigint; null otherwise. */
function parseDecimal(s, bits) {
  if (!/^[+-]?[0-9]+$/.test(s)) return null;
  const v = BigInt(s);
  const lim = 1n << BigInt(bits - 1);
  return v < -lim || v >= lim ? null : v;
}

function tokenArg(t, what) {
  if (t instanceof FencingToken) return t[C];
  throw new TypeError(`${what} must be a FencingToken, got ${describe(t)}`);
}

let noEpoch = null;
Object.defineProperty(FencingToken, 'NO_EPOCH', {
  enumerable: true,
  get() {
    if (!noEpoch) noEpoch = FencingToken.fromC(fns().krabka_token_no_epoch());
    return noEpoch;
  },
});

module.exports = { FencingToken, tokenArg, C };
