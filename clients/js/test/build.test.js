// The committed build (dist/) is what tsc makes of the sources: the duel
// page and Go programs serve dist/ as committed, with no npm step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

test('the committed dist/ is what tsc builds from src/', () => {
  const out = mkdtempSync(join(tmpdir(), 'muster-js-'));
  try {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', root, '--outDir', out], { stdio: 'inherit' });
    const built = readdirSync(out).sort();
    assert.deepEqual(readdirSync(join(root, 'dist')).sort(), built, 'dist/ has other files than tsc makes');
    for (const f of built) {
      assert.equal(readFileSync(join(root, 'dist', f), 'utf8'), readFileSync(join(out, f), 'utf8'),
        `dist/${f} is not what tsc builds from src/: run npm run build and commit dist/`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
