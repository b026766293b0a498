/**
 * tap's `before` (package.json's `tap` section): compiles the embedded store's SQLite binding when it is missing
 * (`npm run build:sqlite3`), so that one test file runs after `npm ci` alone. Its output goes to stderr, away from
 * the TAP stream.
 *
 * @module
 */
import { execFileSync } from 'node:child_process'

execFileSync('npm', ['run', '--silent', 'build:sqlite3'], { stdio: ['ignore', 2, 2] })
