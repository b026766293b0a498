/**
 * Every relative link of README.md and docs/*.md names a file or folder of the
 * repository, and a `#fragment` into a Markdown file names one of its headings
 * (GitHub's heading ids).
 *
 * @module
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import t from 'tap'

const root = join(import.meta.dirname, '../..')
const documents = [join(root, 'README.md'), ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join(root, 'docs', name))]

/** The Markdown outside fenced code blocks. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^]*?^```/gm, '')
}

/** GitHub's id of a heading: lower case, punctuation dropped, spaces as hyphens. */
function headingId(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-')
}

/** The ids of a Markdown file's headings. */
function headingIds(path: string): string[] {
  return [...prose(readFileSync(path, 'utf8')).matchAll(/^#{1,6} (.+)$/gm)].map((match) => headingId(match[1]!))
}

for (const document of documents) {
  t.test(`${relative(root, document)}: relative links resolve`, async (t) => {
    const links = [...prose(readFileSync(document, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!)
    for (const link of links.filter((target) => !/^[a-z]+:/.test(target))) {
      const [path = '', fragment] = link.split('#')
      const target = path === '' ? document : join(dirname(document), path)
      t.ok(existsSync(target), `${link}: ${relative(root, target)} exists`)
      if (fragment !== undefined && target.endsWith('.md') && existsSync(target)) {
        t.ok(headingIds(target).includes(fragment), `${link}: ${relative(root, target)} has the heading #${fragment}`)
      }
    }
  })
}
