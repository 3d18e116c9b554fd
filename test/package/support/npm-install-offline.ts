/**
 * `npm install <args>` without the registry, for tests that run a guide's shell commands: a `.tgz`
 * argument is the packed package (unpacked as npm would), any other name a package of this
 * repository's node_modules (linked); options such as `--save-dev` change nothing here.
 * Usage: node --import tsx npm-install-offline.ts <npm install arguments>, in the project's folder.
 */
import path from 'node:path';
import { installTarball, linkPackages } from './packed.js';

const args = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
const project = process.cwd();
for (const tarball of args.filter((arg) => arg.endsWith('.tgz'))) await installTarball(project, path.resolve(project, tarball));
await linkPackages(
  project,
  args.filter((arg) => !arg.endsWith('.tgz')),
);
