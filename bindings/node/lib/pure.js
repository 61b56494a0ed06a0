'use strict';
// Pure functions of the C API: tokens, names, murmur2, role partition and the
// frozen record format. None blocks; all run on the calling thread.

const abi = require('./abi');
const { native, CONSTANTS, ERRSTR_SIZE } = require('./native');
const { check, ErrorCode } = require('./errors');
const { nameBytes, bytesArg, ptr, int64Arg, intArg, big, describe } = require('./args');
const { FencingToken, tokenArg, C } = require('./token');
const { nameFrom, leaseFromC } = require('./values');

const { NAME_BUF, NAME_MAX } = CONSTANTS;

// Scratch buffers for synchronous calls (the JS thread is the only user).
const errbuf = Buffer.alloc(ERRSTR_SIZE);
const i32out = new Int32Array(1);
const sizeOut = [0]; // size_t out (koffi writes a number)
let encBuf = Buffer.alloc(1024);

const fns = () => native().fns;

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

/** Kinds of coordination records (krabka_kind_t). */
const Kind = abi.Kind;

function kindArg(kind) {
  if (typeof kind === 'string') {
    const k = kind.toUpperCase();
    if (Object.prototype.hasOwnProperty.call(Kind, k)) return Kind[k];
  }
  if (typeof kind === 'number') return intArg(kind, 'key.kind', 32); // other kinds: the library decides
  throw new TypeError(`key.kind must be a number or one of ${Object.keys(Kind).map((k) => `'${k}'`).join(', ')} (any letter case), got ${describe(kind)}`);
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

/** Version of the loaded library ("2.0.0"). */
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
  tokenArg,
  version,
};
