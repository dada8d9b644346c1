// Builds the prebuilt extension into ../zeroshot_kernel/labextension with @jupyterlab/builder.
//
// The builder needs the JupyterLab "core" package.json (which packages the application shares
// as singletons, at which versions). `jupyter labextension build` takes it from the installed
// jupyterlab; here it comes from the npm package @jupyterlab/core-meta (pinned by
// package-lock.json), so the build needs only node and npm, not a Python environment. Set
// JUPYTERLAB_CORE_PATH to a directory holding a core package.json (e.g. an installed
// jupyterlab's `staging` folder) to build against that instead.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const require = createRequire(path.join(root, 'package.json'));

function corePath() {
  const fromEnv = process.env.JUPYTERLAB_CORE_PATH;
  if (fromEnv) {
    if (!existsSync(path.join(fromEnv, 'package.json'))) {
      throw new Error(`JUPYTERLAB_CORE_PATH=${fromEnv} holds no package.json`);
    }
    return fromEnv;
  }
  const meta = require.resolve('@jupyterlab/core-meta/core.package.json');
  const dir = path.join(root, 'node_modules', '.cache', 'zeroshot-core-meta');
  mkdirSync(dir, { recursive: true });
  copyFileSync(meta, path.join(dir, 'package.json'));
  return dir;
}

const builder = require.resolve('@jupyterlab/builder/lib/build-labextension.js');
const args = [builder, '--core-path', corePath(), ...process.argv.slice(2), root];
const result = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root });
if (result.error) {
  throw result.error;
}
process.exit(result.status ?? 1);
