/**
 * The package as npm would hand it to a user, without the registry: `npm pack` of the built
 * repository (once per test run), and an "install" of that tarball into a temporary project that
 * works offline. The tarball is unpacked into the project's node_modules, as npm would; the
 * package's own dependencies, and the project's other packages (express, typescript, tsx...), are
 * links to this repository's node_modules, so they are the lockfile's versions and nothing is
 * downloaded. Runs on the build of `npm test`'s pretest step (`npm run build`).
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const PACKAGE_NAME = 'express-access-gateway';
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** What `npm pack --json` reports, and where the tarball is. */
export interface PackedPackage {
  /** Absolute path of the .tgz. */
  tarball: string;
  /** The tarball's file name, as npm names it (`express-access-gateway-<version>.tgz`). */
  filename: string;
  /** Every file in the tarball, relative to the package root. */
  files: string[];
}

let packing: Promise<PackedPackage> | undefined;

/** Packs the repository once per process: the test files that install it share the tarball. */
export function packPackage(): Promise<PackedPackage> {
  packing ??= (async () => {
    const packDir = await mkdtemp(path.join(tmpdir(), 'eag-pack-'));
    process.once('exit', () => rmSync(packDir, { recursive: true, force: true }));
    // --ignore-scripts: dist/ is already built; prepack would only build it again.
    const { stdout } = await run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir], { cwd: repoRoot });
    const [result] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    if (!result) throw new Error(`npm pack reported nothing: ${stdout}`);
    return { tarball: path.join(packDir, result.filename), filename: result.filename, files: result.files.map((f) => f.path) };
  })();
  return packing;
}

/** A fresh empty folder under the system's temporary folder. */
export function temporaryFolder(prefix: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), prefix));
}

/** The `bin` entries of an installed package, as name → file relative to the package. */
async function binsOf(packageDir: string): Promise<Record<string, string>> {
  const manifest = JSON.parse(await readFile(path.join(packageDir, 'package.json'), 'utf8')) as {
    name: string;
    bin?: string | Record<string, string>;
  };
  if (typeof manifest.bin === 'string') return { [manifest.name.replace(/^@[^/]+\//, '')]: manifest.bin };
  return manifest.bin ?? {};
}

/** Links a package's commands into `<project>/node_modules/.bin`, as npm does (so `npx <name>` finds them offline). */
async function linkBins(project: string, packageDir: string): Promise<void> {
  const binDir = path.join(project, 'node_modules', '.bin');
  await mkdir(binDir, { recursive: true });
  for (const [name, file] of Object.entries(await binsOf(packageDir))) {
    await rm(path.join(binDir, name), { force: true });
    await symlink(path.join(packageDir, file), path.join(binDir, name));
  }
}

/** Unpacks the tarball into `<project>/node_modules/express-access-gateway`, its dependencies beside it. */
export async function installTarball(project: string, tarball: string): Promise<void> {
  const installed = path.join(project, 'node_modules', PACKAGE_NAME);
  await rm(installed, { recursive: true, force: true });
  await mkdir(installed, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  // The package's dependencies, as npm would put them beside it.
  await symlink(path.join(repoRoot, 'node_modules'), path.join(installed, 'node_modules'), 'dir');
  await linkBins(project, installed);
}

/** Links packages of this repository's node_modules (e.g. `express`, `@types/node`) into the project's. */
export async function linkPackages(project: string, packages: readonly string[]): Promise<void> {
  for (const name of packages) {
    const target = path.join(repoRoot, 'node_modules', name);
    await access(path.join(target, 'package.json')).catch(() => {
      throw new Error(`${name} is not installed in this repository's node_modules: it cannot be installed offline`);
    });
    const link = path.join(project, 'node_modules', name);
    await mkdir(path.dirname(link), { recursive: true });
    await rm(link, { recursive: true, force: true });
    await symlink(target, link, 'dir');
    await linkBins(project, target);
  }
}

/**
 * Installs, into `project` (which has a package.json), the packed tarball and `packages` (names of
 * packages of this repository's node_modules), offline.
 */
export async function installOffline(project: string, tarball: string, packages: readonly string[]): Promise<void> {
  await installTarball(project, tarball);
  await linkPackages(project, packages);
}
