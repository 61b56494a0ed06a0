'use strict';
// Pure functions of the C API: tokens, names, murmur2, role partition and the
// frozen record format. None blocks; all run on the calling thread.

const { native, NAME_BUF, NAME_MAX, ERRSTR_SIZE } = require('./native');
const { check, makeError, ErrorCode } = require('./errors');
const { nameBytes, bytesArg, ptr, int64Arg, intArg, big, describe } = require('./args');

// Scratch buffers for synchronous calls (the JS thread is the only user).
const errbuf = Buffer.alloc(ERRSTR_SIZE);
const i32out = new Int32Array(1);
const sizeOut = new BigUint64Array(1);
let encBuf = Buffer.alloc(1024);

const C = Symbol('krabka.ctoken');
let rawConstruct = false; // set while building a token that came from C
const fns = () => native().fns;

/** Decodes a fixed name array of a C struct (len bytes of UTF-8). */
function nameFrom(arr, len) {
  return Buffer.from(arr.buffer, arr.byteOffset, len).toString('utf8');
}

/** The fixed 256-byte array for a name; names the struct cannot hold get the
 *  library's own verdict (too long) on the full bytes. */
function nameArray(bytes, what, validate) {
  if (bytes.length > NAME_MAX) {
    errbuf[0] = 0;
    const code = fns()[validate](bytes, bytes.length, errbuf, errbuf.length);
    if (code !== 0) check(code, errbuf);
    throw new RangeError(`${what} is longer than ${NAME_MAX} bytes`);
  }
  const arr = new Uint8Array(NAME_BUF);
  arr.set(bytes);
  return arr;
}

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
      // In JavaScript, not through the library: every call from the main
      // thread into it costs ~100 us (docs/PERFORMANCE.md); the token
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

/** Checks a role name (string or UTF-8 bytes); throws DecodeError
 *  (empty_role, role_too_long, invalid_utf8). Returns the name's bytes. */
function validateRole(role) {
  const b = nameBytes(role, 'role');
  errbuf[0] = 0;
  check(fns().krabka_role_validate(ptr(b), b.length, errbuf, errbuf.length), errbuf);
  return b;
}

/** Checks a member id; throws DecodeError (empty_member, member_too_long,
 *  invalid_utf8). Returns the id's bytes. */
function validateMember(member) {
  const b = nameBytes(member, 'member');
  errbuf[0] = 0;
  check(fns().krabka_member_validate(ptr(b), b.length, errbuf, errbuf.length), errbuf);
  return b;
}

/** Kafka's murmur2 of the bytes (a string is hashed as UTF-8): signed 32-bit. */
function murmur2(data) {
  const b = bytesArg(data, 'data');
  return fns().krabka_murmur2(ptr(b), b.length);
}

/** The coordination partition of a role among `partitions` (>= 1; below 1
 *  throws DecodeError invalid_partition_count). */
function rolePartition(role, partitions) {
  const b = nameBytes(role, 'role');
  const p = intArg(partitions, 'partitions', 32);
  errbuf[0] = 0;
  check(fns().krabka_role_partition(ptr(b), b.length, p, i32out, errbuf, errbuf.length), errbuf);
  return i32out[0];
}

/** True if a record value read from the log is a tombstone (null, undefined
 *  or zero-length). */
function isTombstone(value) {
  if (value === null || value === undefined) return fns().krabka_value_is_tombstone(null, 0) === 1;
  const b = bytesArg(value, 'value', { allowString: false });
  return fns().krabka_value_is_tombstone(ptr(b), b.length) === 1;
}

/** Kinds of coordination records. */
const Kind = Object.freeze({ REGISTRATION: 0, LEASE: 1 });

function kindArg(kind) {
  if (kind === 'registration') return 0;
  if (kind === 'lease') return 1;
  if (kind === 0 || kind === 1) return kind;
  if (typeof kind === 'number') return intArg(kind, 'key.kind', 32); // other kinds: the library decides
  throw new TypeError(`key.kind must be 0, 1, 'registration' or 'lease', got ${describe(kind)}`);
}

function objArg(o, what) {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`${what} must be an object, got ${describe(o)}`);
  return o;
}

function encodeWith(fnName, struct) {
  const f = fns()[fnName];
  for (;;) {
    errbuf[0] = 0;
    const code = f(struct, encBuf, encBuf.length, sizeOut, errbuf, errbuf.length);
    if (code === ErrorCode.BUFFER_TOO_SMALL) {
      encBuf = Buffer.alloc(Number(sizeOut[0]) * 2);
      continue;
    }
    check(code, errbuf);
    return Buffer.from(encBuf.subarray(0, Number(sizeOut[0])));
  }
}

/** Encodes a record key { kind, role, member } (member ignored for a lease key). */
function encodeKey(key) {
  objArg(key, 'key');
  const kind = kindArg(key.kind);
  const role = nameBytes(key.role, 'key.role');
  const member = key.member === undefined || key.member === null ? Buffer.alloc(0) : nameBytes(key.member, 'key.member');
  return encodeWith('krabka_key_encode', {
    kind,
    role_len: role.length,
    role: nameArray(role, 'key.role', 'krabka_role_validate'),
    member_len: member.length,
    member: nameArray(member, 'key.member', 'krabka_member_validate'),
  });
}

function decodeWith(fnName, data) {
  const b = bytesArg(data, 'data', { allowString: false });
  const out = {};
  errbuf[0] = 0;
  check(fns()[fnName](ptr(b), b.length, out, errbuf, errbuf.length), errbuf);
  return out;
}

/** Decodes a record key: { kind: 0|1, role, member } (member '' for a lease key). */
function decodeKey(data) {
  const k = decodeWith('krabka_key_decode', data);
  return { kind: k.kind, role: nameFrom(k.role, k.role_len), member: nameFrom(k.member, k.member_len) };
}

/** Encodes a registration value { member, registeredAt } (epoch ms, bigint or number). */
function encodeRegistration(value) {
  objArg(value, 'value');
  const member = nameBytes(value.member, 'value.member');
  return encodeWith('krabka_registration_encode', {
    member_len: member.length,
    member: nameArray(member, 'value.member', 'krabka_member_validate'),
    registered_at: int64Arg(value.registeredAt, 'value.registeredAt'),
  });
}

/** Decodes a registration value: { member, registeredAt: bigint }. */
function decodeRegistration(data) {
  const r = decodeWith('krabka_registration_decode', data);
  return { member: nameFrom(r.member, r.member_len), registeredAt: big(r.registered_at) };
}

/** @internal */
function leaseFromC(l) {
  return Object.freeze({
    member: nameFrom(l.member, l.member_len),
    token: FencingToken.fromC(l.token),
    grantedAt: big(l.granted_at),
    deadline: big(l.deadline),
  });
}

/** Encodes a lease value { member, token, grantedAt, deadline }. `token` is a
 *  FencingToken or { producerId, producerEpoch } (encoded as given; the
 *  encoder rejects negative halves). */
function encodeLease(value) {
  objArg(value, 'value');
  const member = nameBytes(value.member, 'value.member');
  const t = value.token;
  let token;
  if (t instanceof FencingToken) token = t[C];
  else {
    objArg(t, 'value.token');
    token = { producer_id: int64Arg(t.producerId, 'value.token.producerId'), producer_epoch: intArg(t.producerEpoch, 'value.token.producerEpoch', 16) };
  }
  return encodeWith('krabka_lease_encode', {
    member_len: member.length,
    member: nameArray(member, 'value.member', 'krabka_member_validate'),
    token,
    granted_at: int64Arg(value.grantedAt, 'value.grantedAt'),
    deadline: int64Arg(value.deadline, 'value.deadline'),
  });
}

/** Decodes a lease value: { member, token: FencingToken, grantedAt, deadline } (bigint ms). */
function decodeLease(data) {
  return leaseFromC(decodeWith('krabka_lease_decode', data));
}

/** Version of the loaded library ("1.0.0"). */
function version() {
  return fns().krabka_version();
}

module.exports = {
  FencingToken,
  Kind,
  validateRole,
  validateMember,
  murmur2,
  rolePartition,
  isTombstone,
  encodeKey,
  decodeKey,
  encodeRegistration,
  decodeRegistration,
  encodeLease,
  decodeLease,
  leaseFromC,
  nameFrom,
  tokenArg,
  version,
};
