'use strict';
// krabka-coord: leader election, leases and fencing tokens on Apache Kafka.
// Node binding of libkrabka_coord.so (loaded with koffi; see README.md).

const { ABI_VERSION, libraryPath } = require('./native');
const errors = require('./errors');
const pure = require('./pure');
const { Client } = require('./client');
const { Leadership } = require('./leadership');
const { Input } = require('./input');
const { Watch } = require('./watch');
const { Elector, Term } = require('./elect');
const { GroupMember } = require('./group');
const { ElectorSet } = require('./electorset');
const { Verifier, MAX_METADATA_BYTES } = require('./headers');
const { pendingCalls } = require('./calls');

module.exports = {
  Client,
  Leadership,
  Input,
  Watch,
  Elector,
  GroupMember,
  ElectorSet,
  Term,
  Verifier,
  FencingToken: pure.FencingToken,
  Kind: pure.Kind,
  // errors
  KrabkaError: errors.KrabkaError,
  FencedError: errors.FencedError,
  LeaseExpiredError: errors.LeaseExpiredError,
  DecodeError: errors.DecodeError,
  ErrorCode: errors.ErrorCode,
  // pure functions
  validateRole: pure.validateRole,
  validateMember: pure.validateMember,
  murmur2: pure.murmur2,
  rolePartition: pure.rolePartition,
  isTombstone: pure.isTombstone,
  encodeKey: pure.encodeKey,
  decodeKey: pure.decodeKey,
  encodeRegistration: pure.encodeRegistration,
  decodeRegistration: pure.decodeRegistration,
  encodeLease: pure.encodeLease,
  decodeLease: pure.decodeLease,
  parseToken: (text) => pure.FencingToken.parse(text),
  formatToken: (token) => {
    pure.tokenArg(token, 'token');
    return token.toString();
  },
  // library
  version: pure.version,
  libraryPath,
  ABI_VERSION,
  MAX_METADATA_BYTES,
  /** The largest shard (or slot) count of a group (KRABKA_GROUP_MAX_SHARDS). */
  GROUP_MAX_SHARDS: require('./abi').CONSTANTS.GROUP_MAX_SHARDS,
  pendingCalls,
};
