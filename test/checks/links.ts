/**
 * `npm run check:links`: every relative link of README.md and docs/*.md, and its `#fragment` (GitHub's heading ids),
 * resolves. Exits 1 on a broken one.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

const root = join(import.meta.dirname, '../..')
const documents = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(root, 'docs', name)),
]

/** The Markdown outside fenced code blocks. */
const prose = (markdown: string): string => markdown.replace(/^```[^]*?^```/gm, '')

/** GitHub's id of a heading: lower case, punctuation dropped, spaces as hyphens. */
const headingId = (heading: string): string =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-')

const headingIds = (path: string): string[] =>
  [...prose(readFileSync(path, 'utf8')).matchAll(/^#{1,6} (.+)$/gm)].map((match) => headingId(match[1]!))

const broken: string[] = []
for (const document of documents) {
  const links = [...prose(readFileSync(document, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!)
  for (const link of links.filter((target) => !/^[a-z]+:/.test(target))) {
    const [path = '', fragment] = link.split('#')
    const target = path === '' ? document : join(dirname(document), path)
    if (!existsSync(target)) broken.push(`${relative(root, document)}: ${link}: no ${relative(root, target)}`)
    else if (fragment !== undefined && target.endsWith('.md') && !headingIds(target).includes(fragment))
      broken.push(`${relative(root, document)}: ${link}: ${relative(root, target)} has no heading #${fragment}`)
  }
}
for (const line of broken) console.error(line)
console.log(
  `${documents.length} documents, ${broken.length === 0 ? 'every relative link resolves' : `${broken.length} broken links`}`,
)
process.exitCode = broken.length === 0 ? 0 : 1
