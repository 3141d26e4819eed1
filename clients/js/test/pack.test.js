// The package as a game installs it: npm pack, installed from the tarball
// into a fresh directory, imported by its name by a Node script that plays
// a match of the rps example against a server this test starts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { goMissing, startExample } from './duel.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function npmMissing() {
  const res = spawnSync('npm', ['--version'], { stdio: 'ignore' });
  return res.error || res.status !== 0 ? 'npm is not installed' : '';
}
const missing = goMissing() || npmMissing();
if (missing && process.env.CI === 'true') throw new Error(missing);

// The script a game would write: it knows the package by its name only.
const play = `
import { connect } from '${pkg.name}';
const base = process.argv[2];
const throws = { ann: 'rock', bob: 'scissors' };
function player(name) {
  const s = connect({
    url: base + 'play',
    player: name,
    whileReconnecting: 'last',
    ticket: async () => {
      const res = await fetch(base + 'ticket', { method: 'POST', body: JSON.stringify({ player: name }) });
      return (await res.json()).ticket;
    },
  });
  s.on('packet', (p) => {
    const me = p.type === 'rps' && !p.over && p.players.find((x) => x.id === name);
    if (me && !me.thrown) s.send('input', { round: p.round, throw: throws[name] });
  });
  s.queue('rps');
  return new Promise((resolve) => s.on('roomEnd', (e) => { s.close(); resolve(e.reason); }));
}
const [ann, bob] = await Promise.all([player('ann'), player('bob')]);
console.log(JSON.stringify({ ann, bob }));
`;

let server;
let dir;
before(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'muster-pack-'));
  server = await startExample('rps', { RPS_TURN: '30s' });
});
after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('npm pack installs by name in a fresh directory and plays a match', { skip: missing || false, timeout: 120000 }, () => {
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8' }));
  const files = packed[0].files.map((f) => f.path).sort();
  assert.deepEqual(files, ['README.md', 'dist/muster.d.ts', 'dist/muster.js', 'package.json']);
  const app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', join(dir, packed[0].filename)], { cwd: app, stdio: 'pipe' });
  writeFileSync(join(app, 'play.js'), play);
  // Node.js 20 has its WebSocket behind a flag (which the test runner may
  // have, but not a child).
  const flags = Number(process.versions.node.split('.')[0]) < 22 ? ['--experimental-websocket'] : [];
  const out = execFileSync(process.execPath, [...flags, 'play.js', server.base], { cwd: app, encoding: 'utf8', timeout: 60000 });
  assert.deepEqual(JSON.parse(out.trim().split('\n').pop()), { ann: 'won by ann', bob: 'won by ann' });
});
