/**
 * The baseline of an A/B run (`BENCH_BASELINE_REF=<git ref>`): that commit checked out
 * into a temporary git worktree (`git worktree add --detach`), its dependencies
 * linked or installed, built with its own `npm run build`, and removed again at the
 * end. `run.ts` then starts its service exactly as it starts the working tree's.
 *
 * Dependencies (`BENCH_BASELINE_INSTALL`):
 * - `link`: the worktree's `node_modules` is a symbolic link to this tree's. The
 *   build's output depends only on TypeScript's and esbuild's versions, and the
 *   service process loads only runtime (non-dev) packages; so when those are the
 *   same packages at the same paths as installed here ({@link runtimePackageDifferences}), the
 *   ref runs on exactly what `npm ci` would give it, in no time. (Built both ways
 *   for fa9b7d2, `dist/` was the same but for esbuild's comments naming each
 *   bundled file's path.)
 * - `ci`: `npm ci --ignore-scripts --no-audit --no-fund` in the worktree (1.5 to 4
 *   minutes with a warm npm cache on two busy cores; better-sqlite3 ships its
 *   prebuilt binary, so no install script is needed). The result is kept, by the
 *   lock file's hash, under `BENCH_BASELINE_CACHE` (default
 *   `<tmpdir>/plant-store-baseline-deps`) and linked in place of a new install the
 *   next time a ref with the same lock file is a baseline.
 * - `auto` (default): `link` when the ref's lock file allows it, else `ci`; and
 *   `ci` after all when the build fails on the linked packages.
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

/** How the baseline got its dependencies. */
export type InstallMode = 'link' | 'ci' | 'auto'

/** A package entry of a lock file (`packages` of lockfileVersion 2 or 3). */
interface LockEntry {
  readonly version?: string
  readonly integrity?: string
  readonly dev?: boolean
  readonly optional?: boolean
}

/** Packages the build's output depends on (their versions decide the emitted JavaScript). */
const BUILD_TOOLS = ['node_modules/typescript', 'node_modules/esbuild']

/**
 * Why the ref cannot run on this tree's installed packages, if it cannot: each
 * runtime (non-dev) package of the ref's lock file, and each build tool, must be
 * installed at the same path with the same version and integrity. Packages that
 * are optional and not installed here (other platforms' binaries) are left out.
 * @param refLock - the ref's `package-lock.json`, parsed.
 * @param installed - this tree's `node_modules/.package-lock.json` (what is installed), parsed.
 * @returns the paths that differ (empty: linking is safe).
 */
export function runtimePackageDifferences(refLock: unknown, installed: unknown): string[] {
  const packagesOf = (lock: unknown): Record<string, LockEntry> =>
    (lock as { packages?: Record<string, LockEntry> } | undefined)?.packages ?? {}
  const wanted = packagesOf(refLock)
  const have = packagesOf(installed)
  const differences: string[] = []
  for (const [path, entry] of Object.entries(wanted)) {
    if (path === '' || !path.includes('node_modules/')) continue
    if (entry.dev === true && !BUILD_TOOLS.includes(path)) continue
    const present = have[path]
    if (present === undefined) {
      if (entry.optional !== true) differences.push(`${path} (not installed)`)
      continue
    }
    if (present.version !== entry.version || present.integrity !== entry.integrity)
      differences.push(`${path} (${present.version} installed, ${entry.version} wanted)`)
  }
  return differences
}

/** A built baseline. */
export interface Baseline {
  /** The ref as given. */
  readonly ref: string
  /** Its commit, abbreviated. */
  readonly commit: string
  /** The worktree's root. */
  readonly root: string
  /** The service's entry script, absolute. */
  readonly script: string
  /** How it was prepared, in words (for the report). */
  readonly how: string
  /** Seconds the preparation took. */
  readonly seconds: number
}

/** Where a baseline is prepared: the worktree is removed by {@link removeBaseline}, also after a failure. */
export interface BaselinePlace {
  readonly repo: string
  readonly dir: string
  readonly root: string
}

/** A fresh temporary directory for the worktree (it is created by git inside it, as `tree`). */
export function baselinePlace(repo: string): BaselinePlace {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-baseline-'))
  return { repo, dir, root: join(dir, 'tree') }
}

const run = (command: string, args: readonly string[], cwd: string, timeoutS: number): string =>
  execFileSync(command, args, {
    cwd,
    encoding: 'utf8',
    timeout: timeoutS * 1000,
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  })

/** The end of a failed command's output, for an error message. */
function failure(what: string, error: unknown): Error {
  const { stdout, stderr, message } = error as { stdout?: string; stderr?: string; message: string }
  const tail = `${stdout ?? ''}\n${stderr ?? ''}`.trim().slice(-1500)
  return new Error(`${what} failed: ${tail === '' ? message : tail}`)
}

/**
 * Checks `ref` out into `place`, gets its dependencies and builds it.
 * @param entry - the service's entry script, relative to the worktree (`dist/service/server.js`).
 * @param log - progress lines.
 * @throws when the ref is unknown, the install or the build fails, or the build has no such entry.
 */
export function prepareBaseline(
  place: BaselinePlace,
  ref: string,
  mode: InstallMode,
  entry: string,
  cache: string,
  log: (line: string) => void,
): Baseline {
  const started = performance.now()
  const { repo, root } = place
  let commit: string
  try {
    commit = run('git', ['-C', repo, 'rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`], repo, 30).trim()
  } catch (error) {
    throw failure(`BENCH_BASELINE_REF: git rev-parse ${ref}`, error)
  }
  const short = commit.slice(0, 7)
  log(`baseline: ${ref}${ref.startsWith(short) ? '' : ` (${short})`} into a git worktree at ${root} …`)
  try {
    run('git', ['-C', repo, 'worktree', 'add', '--detach', root, commit], repo, 120)
  } catch (error) {
    throw failure('git worktree add', error)
  }

  const installedLock = join(repo, 'node_modules', '.package-lock.json')
  let linkable: string[] | undefined
  if (mode !== 'ci') {
    linkable = existsSync(installedLock)
      ? runtimePackageDifferences(
          JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')),
          JSON.parse(readFileSync(installedLock, 'utf8')),
        )
      : ['no node_modules/.package-lock.json in this tree']
    if (mode === 'link' && linkable.length > 0)
      log(`baseline: linking although its lock differs: ${linkable.slice(0, 5).join(', ')}`)
  }
  const link = mode === 'link' || (mode === 'auto' && linkable?.length === 0)
  const modules = join(root, 'node_modules')
  const lockHash = createHash('sha256')
    .update(readFileSync(join(root, 'package-lock.json')))
    .digest('hex')
    .slice(0, 16)
  const cached = join(cache, lockHash, 'node_modules')
  const install = (): string => {
    if (existsSync(cached)) {
      symlinkSync(cached, modules, 'dir')
      return `reused from an earlier \`npm ci --ignore-scripts\` of the same lock file (${cached})`
    }
    log('baseline: npm ci --ignore-scripts …')
    const from = performance.now()
    try {
      run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], root, 1200)
    } catch (error) {
      throw failure('npm ci in the baseline', error)
    }
    const seconds = Math.round((performance.now() - from) / 1000)
    // Kept for the next baseline with this lock file: moved (same file system), then linked back.
    try {
      mkdirSync(join(cache, lockHash), { recursive: true })
      renameSync(modules, cached)
      symlinkSync(cached, modules, 'dir')
      return `installed with \`npm ci --ignore-scripts\` (${seconds} s), kept in ${cached} for the next run`
    } catch {
      if (!existsSync(modules)) symlinkSync(cached, modules, 'dir')
      return `installed with \`npm ci --ignore-scripts\` (${seconds} s)`
    }
  }
  const build = (): void => {
    try {
      run('npm', ['run', '--silent', 'build'], root, 900)
    } catch (error) {
      throw failure('npm run build in the baseline', error)
    }
  }
  let how: string
  if (link) {
    symlinkSync(join(repo, 'node_modules'), modules, 'dir')
    how =
      linkable?.length === 0
        ? "linked to this tree's `node_modules` (the same runtime packages, TypeScript and esbuild as its lock file)"
        : "linked to this tree's `node_modules` (`BENCH_BASELINE_INSTALL=link`)"
    try {
      build()
    } catch (error) {
      if (mode === 'link') throw error
      log(
        `baseline: the build failed on the linked packages; installing its own. ${(error as Error).message.slice(0, 300)}`,
      )
      unlinkSync(modules)
      rmSync(join(root, 'dist'), { recursive: true, force: true })
      how = install()
      build()
    }
  } else {
    how = install()
    if (mode === 'auto')
      how += `: its lock file differs from what is installed here (${linkable!.slice(0, 3).join(', ')}${linkable!.length > 3 ? ', …' : ''})`
    build()
  }
  const script = join(root, entry)
  if (!existsSync(script)) throw new Error(`the baseline's build has no ${entry} (BENCH_BASELINE_ENTRY)`)
  const seconds = (performance.now() - started) / 1000
  log(`baseline: ready in ${Math.round(seconds)} s; dependencies ${how}`)
  return { ref, commit: short, root, script, how, seconds }
}

/** Removes the worktree (never following the `node_modules` link) and its directory; quiet when there is none. */
export function removeBaseline(place: BaselinePlace): void {
  const modules = join(place.root, 'node_modules')
  try {
    if (lstatSync(modules).isSymbolicLink()) unlinkSync(modules)
  } catch {
    // no node_modules
  }
  try {
    run('git', ['-C', place.repo, 'worktree', 'remove', '--force', place.root], place.repo, 120)
  } catch {
    // not registered (git worktree add failed) or already gone; prune below
  }
  rmSync(place.dir, { recursive: true, force: true })
  try {
    run('git', ['-C', place.repo, 'worktree', 'prune'], place.repo, 60)
  } catch {
    // nothing to prune
  }
}
