// The README is what a game developer copies: its install lines name this
// package, and its ticket example keeps the player id, so that a
// reconnect is the same player and not a new guest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

test('the README installs this package from npm and from the copy the Go server embeds', () => {
  assert.equal(pkg.private, undefined, 'package.json is private: npm would not publish it');
  assert.match(pkg.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/);
  assert.match(pkg.version, /^\d+\.\d+\.\d+$/);
  assert.ok(readme.includes(`npm install ${pkg.name}\n`), `no "npm install ${pkg.name}" line`);
  assert.ok(readme.includes(`from '${pkg.name}'`), `no import from '${pkg.name}'`);
  assert.ok(readme.includes('js.Handler()') && readme.includes("from './client/muster.js'"), 'no install line for the embedded copy');
});

test("the README's ticket example asks with the player id it keeps", () => {
  const example = readme.slice(readme.indexOf('## Use'));
  const ticket = example.slice(example.indexOf('async function ticket'), example.indexOf('const session'));
  assert.ok(ticket.includes('JSON.stringify({ player })'), `the ticket example does not send the player id:\n${ticket}`);
  assert.ok(/player = t\.player/.test(ticket), `the ticket example does not keep the id it is given:\n${ticket}`);
  assert.ok(!readme.includes("body: '{}'"), "the README still posts '{}' for a ticket");
});
