// Runs the tests with Node's test runner. Node.js 20 has its WebSocket
// behind a flag; later versions have it on.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith('.test.js')).sort().map((f) => join(dir, f));
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 10)) {
  console.error(`node ${process.versions.node}: the client needs Node.js 20.10 or later (a WebSocket)`);
  process.exit(1);
}
const flags = typeof globalThis.WebSocket === 'function' ? [] : ['--experimental-websocket'];
const res = spawnSync(process.execPath, [...flags, '--test', ...files], { stdio: 'inherit' });
process.exit(res.status ?? 1);
