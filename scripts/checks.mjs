// Runs the named npm scripts at the same time (`npm test`'s checks after the build: they read
// the sources and the build, and write nothing another one reads), each one's output printed
// whole once it ends, with its time; exits 1 when any failed.
import { spawn } from 'node:child_process';

const names = process.argv.slice(2);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const runs = names.map(
  (name) =>
    new Promise((resolve) => {
      const started = Date.now();
      const child = spawn(npm, ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
      const output = [];
      child.stdout.on('data', (chunk) => output.push(chunk));
      child.stderr.on('data', (chunk) => output.push(chunk));
      child.on('close', (code) => {
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        const text = Buffer.concat(output).toString('utf8').trimEnd();
        process.stdout.write(
          `> ${name}: ${code === 0 ? 'ok' : `failed (exit ${code})`} in ${seconds} s\n${text === '' ? '' : `${text}\n`}`,
        );
        resolve(code === 0);
      });
    }),
);

const passed = await Promise.all(runs);
process.exitCode = passed.every(Boolean) ? 0 : 1;
