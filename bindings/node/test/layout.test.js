'use strict';
// The koffi struct declarations of the generated lib/abi.js match the C
// header: the size, the alignment and every field offset of EVERY struct
// abi.js defines, as a C compiler sees include/krabka_coord.h. The list of
// structs and fields is read from the loaded types (a struct the generator
// adds is checked without an edit here), and it is checked against the
// header's own `typedef struct ... {` definitions, so a struct the
// generator left out fails too. A missing C compiler fails the test (CI
// has gcc); so does one that cannot compile the header.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { koffi, native } = require('../lib/native');

const header = path.resolve(__dirname, '..', '..', '..', 'include', 'krabka_coord.h');

// The C compiler to use: $CC when set (its first word is the program), else
// the first of cc and gcc found on PATH.
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
  assert.fail('no C compiler: CC is not set and neither cc nor gcc is on PATH (the layout check needs one; CI has gcc)');
}

// Every struct type abi.js defined: name -> { size, alignment, fields: [[name, offset]] }.
function koffiStructs() {
  const out = {};
  for (const [name, type] of Object.entries(native().types)) {
    const info = koffi.type(type);
    if (info.primitive !== 'Record') continue;
    out[name] = {
      size: info.size,
      alignment: info.alignment,
      fields: Object.entries(info.members).map(([f, m]) => [f, m.offset]),
    };
  }
  return out;
}

test('abi.js defines a koffi struct for every struct the header defines', () => {
  const text = fs.readFileSync(header, 'utf8');
  const defined = [...text.matchAll(/typedef\s+struct\s+\w+\s*\{[^}]*\}\s*(\w+)\s*;/g)].map((m) => m[1]).sort();
  assert.ok(defined.length > 0, `the header's struct definitions were not found (${defined.join(', ')})`);
  assert.deepEqual(Object.keys(koffiStructs()).sort(), defined);
});

test('every koffi struct of abi.js has the C size, alignment and field offsets of include/krabka_coord.h', () => {
  const structs = koffiStructs();
  assert.ok(Object.keys(structs).length > 0, 'abi.js defined no struct');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-layout-'));
  const lines = ['#include <stdio.h>', '#include <stddef.h>', '#include <stdalign.h>', `#include "${header}"`, 'int main(void) {'];
  for (const [name, s] of Object.entries(structs)) {
    lines.push(`  printf("${name} size %zu\\n", sizeof(${name}));`);
    lines.push(`  printf("${name} align %zu\\n", alignof(${name}));`);
    for (const [f] of s.fields) lines.push(`  printf("${name} .${f} %zu\\n", offsetof(${name}, ${f}));`);
  }
  lines.push('  return 0;', '}');
  fs.writeFileSync(path.join(dir, 'layout.c'), lines.join('\n'));
  const cc = findCompiler();
  try {
    execFileSync(cc.file, [...cc.args, '-std=c11', '-o', path.join(dir, 'layout'), path.join(dir, 'layout.c')], { stdio: 'pipe' });
  } catch (e) {
    const stderr = e.stderr ? e.stderr.toString() : '';
    assert.fail(`${cc.name} (${cc.file}) failed to compile the layout program over ${header}: ${e.message}\n${stderr}`);
  }
  const out = execFileSync(path.join(dir, 'layout'), { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  const c = {};
  for (const line of out.trim().split('\n')) {
    const [name, what, n] = line.split(' ');
    c[`${name} ${what}`] = Number(n);
  }
  let checked = 0;
  for (const [name, s] of Object.entries(structs)) {
    assert.equal(s.size, c[`${name} size`], `${name}: sizeof: koffi ${s.size}, C ${c[`${name} size`]}`);
    assert.equal(s.alignment, c[`${name} align`], `${name}: alignof: koffi ${s.alignment}, C ${c[`${name} align`]}`);
    for (const [f, off] of s.fields) {
      assert.equal(off, c[`${name} .${f}`], `${name}.${f}: offset: koffi ${off}, C ${c[`${name} .${f}`]}`);
      checked++;
    }
  }
  assert.equal(checked, Object.keys(c).length - 2 * Object.keys(structs).length, 'every offset the C program printed was compared');
});
