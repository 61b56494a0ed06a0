'use strict';
// TLS through the Node binding against the SASL cluster's TLS listeners
// (tests/kafka/cluster.sh --tls; make test exports KRABKA_TLS_*): SSL with
// ssl.ca.location, SASL_SSL, mutual TLS with an encrypted key, and
// misconfigurations that fail at once naming the problem. Run by
// `make tls-test`.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const k = require('../../bindings/node');

const env = ['KRABKA_TLS_BOOTSTRAP', 'KRABKA_TLS_SASL_BOOTSTRAP', 'KRABKA_TLS_MTLS_BOOTSTRAP', 'KRABKA_TLS_CERTS'];
const missing = env.filter((e) => !process.env[e]);
const cert = (name) => path.join(process.env.KRABKA_TLS_CERTS || '', name);
const role = () => `alice.node-tls-${process.pid}-${Date.now().toString(36)}`;

test('KRABKA_TLS_* are set', () => {
  assert.deepEqual(missing, [], 'run under make test (with-clusters.sh starts the SASL cluster with --tls)');
});

const ok = missing.length === 0;
const cases = ok
  ? {
      ssl: [process.env.KRABKA_TLS_BOOTSTRAP, { 'security.protocol': 'SSL', 'ssl.ca.location': cert('ca.pem') }],
      sasl_ssl: [process.env.KRABKA_TLS_SASL_BOOTSTRAP, {
        'security.protocol': 'SASL_SSL', 'ssl.ca.location': cert('ca.pem'), 'sasl.mechanism': 'SCRAM-SHA-256',
        'sasl.username': 'alice', 'sasl.password': 'alice-secret',
      }],
      mtls: [process.env.KRABKA_TLS_MTLS_BOOTSTRAP, {
        'security.protocol': 'SSL', 'ssl.ca.location': cert('ca.pem'),
        'ssl.certificate.location': cert('client.pem'), 'ssl.key.location': cert('client.key'),
        'ssl.key.password': fs.readFileSync(cert('client.password'), 'utf8').trim(),
      }],
    }
  : {};

for (const [label, [bootstrap, extra]] of Object.entries(cases)) {
  test(`${label}: acquire, renew, describe, resign`, { timeout: 90_000 }, async () => {
    const client = new k.Client({ 'bootstrap.servers': bootstrap, 'request.timeout.ms': 10000, ...extra });
    try {
      const r = role();
      const lead = await client.acquire(r, `node-${label}`, { timeoutMs: 30000 });
      await lead.renew();
      const st = await client.describe(r, { timeoutMs: 10000 });
      assert.equal(st.current, true);
      assert.equal(st.holder, `node-${label}`);
      assert.equal(st.token.toString(), lead.token.toString());
      await lead.resign();
      await lead.close();
    } finally {
      await client.close();
    }
  });
}

if (ok) {
  const bad = [
    ['wrong CA', process.env.KRABKA_TLS_BOOTSTRAP, { 'security.protocol': 'SSL', 'ssl.ca.location': cert('other-ca.pem') },
      'TLS', 'not signed by a CA in ssl.ca.location'],
    ['plaintext on the TLS port', process.env.KRABKA_TLS_BOOTSTRAP, {}, 'TRANSPORT', 'on a TLS listener'],
    ['expired client certificate', process.env.KRABKA_TLS_MTLS_BOOTSTRAP, {
      'security.protocol': 'SSL', 'ssl.ca.location': cert('ca.pem'),
      'ssl.certificate.location': cert('expired.pem'), 'ssl.key.location': cert('expired.key'),
    }, 'INVALID_CONFIG', 'expired'],
    ['no client certificate', process.env.KRABKA_TLS_MTLS_BOOTSTRAP, { 'security.protocol': 'SSL', 'ssl.ca.location': cert('ca.pem') },
      'TLS', 'client certificate'],
  ];
  for (const [label, bootstrap, extra, code, mention] of bad) {
    test(`${label} fails naming the problem`, { timeout: 60_000 }, async () => {
      let client = null;
      await assert.rejects(async () => {
        client = new k.Client({ 'bootstrap.servers': bootstrap, 'request.timeout.ms': 10000, ...extra });
        await client.describe(role(), { timeoutMs: 30000 });
      }, (err) => {
        assert.ok(err instanceof k.KrabkaError, String(err));
        assert.equal(err.codeName, code, err.message);
        assert.ok(err.message.includes(mention), err.message);
        return true;
      });
      if (client) await client.close();
    });
  }
}
