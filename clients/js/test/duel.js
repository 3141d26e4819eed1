// Starts an example (examples/duel, examples/rps) for the tests: built
// with go, run on a free loopback port with no config.yml, on the
// in-memory backplane.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// goMissing says why the duel cannot be built here, or '' when it can.
export function goMissing() {
  const res = spawnSync('go', ['version'], { stdio: 'ignore' });
  return res.error || res.status !== 0 ? 'go is not installed' : '';
}

// freePort resolves with a loopback port that was free a moment ago.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// startDuel builds and starts the duel and resolves, once the server is
// ready, with {url, ticket(player), stop()}.
export function startDuel() {
  return startExample('duel');
}

// startExample builds and starts examples/<name> with the further
// environment env, as startDuel does the duel.
export async function startExample(name, env = {}) {
  const dir = mkdtempSync(join(tmpdir(), `muster-${name}-`));
  const bin = join(dir, name);
  const build = spawnSync('go', ['build', '-o', bin, `./examples/${name}`], { cwd: repo, stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`go build ./examples/${name} failed`);
  const port = await freePort();
  // Its working directory has no config.yml: the defaults, in memory.
  const proc = spawn(bin, [], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, MUSTER__SERVER__HTTP__HOST: '127.0.0.1', MUSTER__SERVER__HTTP__PORT: String(port), ...env },
  });
  let stderr = '';
  proc.stderr.on('data', (b) => { stderr += b; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const base = `http://127.0.0.1:${port}/`;
  // Ready when the readiness probe says so; the process ending first fails.
  let exit = null;
  exited.then((code) => { exit = code; });
  for (;;) {
    if (exit !== null) throw new Error(`${name} exited with ${exit}:\n${stderr}`);
    try {
      const res = await fetch(base + 'muster/server/ready');
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    base,
    url: base + 'play',
    async ticket(player = '') {
      const res = await fetch(base + 'ticket', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ player }) });
      if (!res.ok) throw new Error('ticket: ' + res.status);
      return (await res.json()).ticket;
    },
    log: () => stderr,
    async stop() {
      if (exit === null) {
        proc.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
