// `npm ci` on the oldest Node that package.json's `engines` admits prints no EBADENGINE: every package
// of the lockfile that npm installs here declares a Node range that admits that version. (light-my-
// request 6.8 pulled in cookie 2, which wants Node >= 22: package.json `overrides` pins 6.6.0; knip and
// redocly want 20.19, so that is the lowest Node package.json admits.)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import semver from 'semver';
import { REPO_ROOT } from '../support/host.js';

interface LockedPackage {
  version?: string;
  engines?: { node?: string } | string[];
  os?: string[];
  cpu?: string[];
}

const readJson = (file: string) => JSON.parse(readFileSync(join(REPO_ROOT, file), 'utf8'));

/** Whether an `os` or `cpu` list of package.json admits `value` (npm's form: names, or `!name`s). */
const admits = (list: string[] | undefined, value: string): boolean =>
  list === undefined ||
  list.includes(value) ||
  (list.every((entry) => entry.startsWith('!')) && !list.includes(`!${value}`));

/** Whether npm installs the package on this machine (a package for another OS or CPU is skipped). */
const installedHere = (pkg: LockedPackage): boolean =>
  admits(pkg.os, process.platform) && admits(pkg.cpu, process.arch);

describe('dependencies and the supported Node versions', () => {
  it('every installed package of package-lock.json admits the lowest Node that package.json admits', () => {
    const lowest = semver.minVersion(readJson('package.json').engines.node);
    assert.ok(lowest, 'package.json declares engines.node');
    const packages = readJson('package-lock.json').packages as Record<string, LockedPackage>;
    const refusing = Object.entries(packages)
      .filter(([path, pkg]) => path !== '' && installedHere(pkg))
      .flatMap(([path, pkg]) => {
        const range = Array.isArray(pkg.engines) ? undefined : pkg.engines?.node;
        return range && !semver.satisfies(lowest, range) ? [`${path}@${pkg.version}: node ${range}`] : [];
      });
    assert.deepEqual(refusing, [], `these packages refuse Node ${lowest.version} (npm ci prints EBADENGINE)`);
  });
});
