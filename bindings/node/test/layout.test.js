'use strict';
// The koffi struct declarations match the C header: sizes and field offsets
// of every value struct, as a C compiler sees include/krabka_coord.h. It
// skips only when there is no C compiler; a compile error fails it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { koffi, T } = require('../lib/native');

const header = path.resolve(__dirname, '..', '..', '..', 'include', 'krabka_coord.h');

const FIELDS = {
  token: ['krabka_token_t', ['producer_id', 'producer_epoch']],
  key: ['krabka_key_t', ['kind', 'role_len', 'role', 'member_len', 'member']],
  registration: ['krabka_registration_t', ['member_len', 'member', 'registered_at']],
  lease: ['krabka_lease_t', ['member_len', 'member', 'token', 'granted_at', 'deadline']],
  message: ['krabka_message_t', ['topic', 'partition', 'key', 'key_len', 'value', 'value_len']],
  produceResult: ['krabka_produce_result_t', ['partition', 'offset']],
  rosterEntry: ['krabka_roster_entry_t', ['member_len', 'member', 'offset', 'registered_at', 'rank']],
  header: ['krabka_header_t', ['key', 'value', 'value_len']],
};

// The C compiler to use: $CC when set (its first word is the program; a
// CC that names no program fails the test), else the first of cc and gcc
// found on PATH; null when there is none.
function findCompiler() {
  const onPath = (name) => {
    if (name.includes('/')) return fs.existsSync(name) ? name : null;
    for (const dir of (process.env.PATH || '').split(path.delimiter)) {
      if (!dir) continue;
      const file = path.join(dir, name);
      try {
        fs.accessSync(file, fs.constants.X_OK);
        if (fs.statSync(file).isFile()) return file;
      } catch {
        /* not here */
      }
    }
    return null;
  };
  const cc = (process.env.CC || '').trim();
  if (cc) {
    const [cmd, ...args] = cc.split(/\s+/);
    const file = onPath(cmd);
    assert.ok(file, `CC=${cc}: ${cmd} is not found${cmd.includes('/') ? '' : ' on PATH'}`);
    return { file, args, name: `CC=${cc}` };
  }
  for (const name of ['cc', 'gcc']) {
    const file = onPath(name);
    if (file) return { file, args: [], name };
  }
  return null;
}

test('koffi struct layouts equal the C layouts of include/krabka_coord.h', (t) => {
  if (!fs.existsSync(header)) {
    t.skip('include/krabka_coord.h is not next to this package');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-layout-'));
  const lines = ['#include <stdio.h>', '#include <stddef.h>', `#include "${header}"`, 'int main(void) {'];
  for (const [key, [ctype, fields]] of Object.entries(FIELDS)) {
    lines.push(`  printf("${key} size %zu\\n", sizeof(${ctype}));`);
    for (const f of fields) lines.push(`  printf("${key} ${f} %zu\\n", offsetof(${ctype}, ${f}));`);
  }
  lines.push('  return 0;', '}');
  fs.writeFileSync(path.join(dir, 'layout.c'), lines.join('\n'));
  const cc = findCompiler();
  if (!cc) {
    // The only skip: nothing to compile with. A compiler that exists and
    // fails (a header that no longer compiles) fails the test.
    t.skip('no C compiler: CC is not set and neither cc nor gcc is on PATH');
    return;
  }
  try {
    execFileSync(cc.file, [...cc.args, '-o', path.join(dir, 'layout'), path.join(dir, 'layout.c')], { stdio: 'pipe' });
  } catch (e) {
    const stderr = e.stderr ? e.stderr.toString() : '';
    assert.fail(`${cc.name} (${cc.file}) failed to compile the layout program over ${header}: ${e.message}\n${stderr}`);
  }
  const out = execFileSync(path.join(dir, 'layout'), { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  for (const line of out.trim().split('\n')) {
    const [key, what, n] = line.split(' ');
    const type = T[key];
    const got = what === 'size' ? koffi.sizeof(type) : koffi.offsetof(type, what);
    assert.equal(got, Number(n), `${FIELDS[key][0]} ${what}: koffi ${got}, C ${n}`);
  }
});
