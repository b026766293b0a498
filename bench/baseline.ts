/**
 * The baseline of an A/B run (`BENCH_BASELINE_REF=<git ref>`): that commit in a temporary git worktree
 * (`git worktree add --detach`), with dependencies, built with its own `npm run build`, removed at the end.
 *
 * Dependencies (`BENCH_BASELINE_INSTALL`): `link` makes the worktree's `node_modules` a link to this tree's; the
 * service loads only runtime packages and the build depends only on TypeScript's and esbuild's versions, so when
 * those are installed here as the ref's lock file has them ({@link runtimePackageDifferences}), the ref runs on what
 * `npm ci` would give it. `ci` runs `npm ci --ignore-scripts` in the worktree and keeps the result under `cache`, by
 * the lock file's hash, for the next run. `auto` (default) links when the lock file allows it, else installs, and
 * installs after all when the build fails on the linked packages.
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export type InstallMode = 'link' | 'ci' | 'auto'

interface LockEntry {
  version?: string
  integrity?: string
  dev?: boolean
  optional?: boolean
}

const BUILD_TOOLS = ['node_modules/typescript', 'node_modules/esbuild']

/**
 * The packages that keep the ref from running on this tree's: runtime packages of its lock file and build tools
 * not installed here at the same path, version and integrity (optional ones absent here are left out).
 * @param refLock - its `package-lock.json`; `installed`: this tree's `node_modules/.package-lock.json`.
 */
export function runtimePackageDifferences(refLock: unknown, installed: unknown): string[] {
  const packages = (lock: unknown) => (lock as { packages?: Record<string, LockEntry> } | undefined)?.packages ?? {}
  const have = packages(installed)
  return Object.entries(packages(refLock)).flatMap(([path, wanted]) => {
    if (!path.includes('node_modules/') || (wanted.dev === true && !BUILD_TOOLS.includes(path))) return []
    const present = have[path]
    if (present === undefined) return wanted.optional === true ? [] : [`${path} (not installed)`]
    return present.version === wanted.version && present.integrity === wanted.integrity
      ? []
      : [`${path} (${present.version} installed, ${wanted.version} wanted)`]
  })
}

/** A built baseline. */
export interface Baseline {
  ref: string
  commit: string
  root: string
  script: string
  how: string
}

const run = (command: string, args: readonly string[], cwd: string, timeoutS: number, what: string): string => {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8', timeout: timeoutS * 1000, stdio: 'pipe' })
  } catch (error) {
    const { stdout, stderr, message } = error as { stdout?: string; stderr?: string; message: string }
    const output = `${stdout ?? ''}\n${stderr ?? ''}`.trim().slice(-1500)
    throw new Error(`${what} failed: ${output || message}`, { cause: error })
  }
}

/** A temporary directory for the worktree, `<dir>/tree`. */
export const baselinePlace = (repo: string) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-baseline-'))
  return { repo, dir, root: join(dir, 'tree') }
}
export type BaselinePlace = ReturnType<typeof baselinePlace>

/** Checks `ref` out into `place`, gets its dependencies, builds it. @throws when any step fails. */
export function prepareBaseline(
  place: BaselinePlace,
  ref: string,
  mode: InstallMode,
  entry: string,
  cache: string,
  log: (line: string) => void,
): Baseline {
  const { repo, root } = place
  const commit = run(
    'git',
    ['rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`],
    repo,
    30,
    `git rev-parse ${ref}`,
  )
    .trim()
    .slice(0, 7)
  log(`baseline: ${ref} (${commit}) into a git worktree at ${root} …`)
  run('git', ['worktree', 'add', '--detach', root, commit], repo, 120, 'git worktree add')
  const lock = readFileSync(join(root, 'package-lock.json'))
  const installedLock = join(repo, 'node_modules', '.package-lock.json')
  const differences = existsSync(installedLock)
    ? runtimePackageDifferences(JSON.parse(lock.toString()), JSON.parse(readFileSync(installedLock, 'utf8')))
    : ['no node_modules/.package-lock.json here']
  const modules = join(root, 'node_modules')
  const cached = join(cache, createHash('sha256').update(lock).digest('hex').slice(0, 16), 'node_modules')
  const install = (): string => {
    if (!existsSync(cached)) {
      log('baseline: npm ci --ignore-scripts …')
      run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], root, 1200, 'npm ci in the baseline')
      mkdirSync(join(cached, '..'), { recursive: true })
      renameSync(modules, cached)
    }
    symlinkSync(cached, modules, 'dir')
    return `installed with \`npm ci --ignore-scripts\` (kept in ${cached})`
  }
  const build = () => run('npm', ['run', '--silent', 'build'], root, 900, 'npm run build in the baseline')
  let how: string
  if (mode === 'link' || (mode === 'auto' && differences.length === 0)) {
    symlinkSync(join(repo, 'node_modules'), modules, 'dir')
    how = `linked to this tree's \`node_modules\`${differences.length === 0 ? ' (the same runtime packages and build tools as its lock file)' : ''}`
    try {
      build()
    } catch (error) {
      if (mode === 'link') throw error
      log(
        `baseline: the build failed on the linked packages; installing its own. ${(error as Error).message.slice(0, 300)}`,
      )
      unlinkSync(modules)
      how = install()
      build()
    }
  } else {
    how = `${install()}${mode === 'auto' ? `, its lock file differing from what is installed here (${differences.slice(0, 3).join(', ')})` : ''}`
    build()
  }
  const script = join(root, entry)
  if (!existsSync(script)) throw new Error(`the baseline's build has no ${entry} (BENCH_BASELINE_ENTRY)`)
  log(`baseline: built; dependencies ${how}`)
  return {
    ref,
    commit,
    root,
    script,
    how: `commit \`${commit}\` in a temporary git worktree, dependencies ${how}, built with its own \`npm run build\``,
  }
}

/** Removes the worktree, never following its `node_modules` link. */
export function removeBaseline(place: BaselinePlace): void {
  const modules = join(place.root, 'node_modules')
  if (lstatSync(modules, { throwIfNoEntry: false })?.isSymbolicLink()) unlinkSync(modules)
  for (const args of [
    ['worktree', 'remove', '--force', place.root],
    ['worktree', 'prune'],
  ])
    try {
      run('git', args, place.repo, 120, 'git')
    } catch {
      // not registered, or already gone
    }
  rmSync(place.dir, { recursive: true, force: true })
}
