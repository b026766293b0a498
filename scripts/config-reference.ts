/**
 * `node scripts/config-reference.ts [--check] [file]` (`npm run generate:config-docs`,
 * `npm run check:config-docs`): writes the settings table of docs/configuration.md
 * (or `file`) from the settings schema (service/settings.ts), between the table's
 * markers; the prose around it is hand-written. With `--check` it writes nothing and
 * exits 1 when the table is not the one the schema gives. Not part of the build.
 *
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { settingsSchema } from '../service/settings.ts'

/** The line before the generated table. */
export const TABLE_START =
  '<!-- settings:start: generated from service/settings.ts by `npm run generate:config-docs`; edit the schema, not the table -->'
/** The line after the generated table. */
export const TABLE_END = '<!-- settings:end -->'

/** The configuration reference this script writes by default. */
export const referencePath = fileURLToPath(new URL('../docs/configuration.md', import.meta.url))

/** A setting as the table shows it. */
interface Setting {
  readonly default?: string | number | boolean
  readonly description: string
}

/**
 * The settings table: one row per setting, in the schema's order, with its default
 * (empty when it has none, or the empty string) and its description.
 * @param settings - the schema's `properties`.
 */
export function settingsTable(settings: Readonly<Record<string, Setting>> = settingsSchema.properties): string {
  const rows = Object.entries(settings).map(([name, setting]) => {
    const fallback = setting.default === undefined || setting.default === '' ? '' : `\`${String(setting.default)}\``
    const cells = [`\`${name}\``, fallback, setting.description.replaceAll('|', '\\|')]
    return `|${cells.map((cell) => (cell === '' ? ' ' : ` ${cell} `)).join('|')}|`
  })
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n')
}

/**
 * `document` with the text between its table markers replaced by `table`.
 * @throws {Error} when the document lacks either marker.
 */
export function withSettingsTable(document: string, table: string): string {
  const start = document.indexOf(TABLE_START)
  const end = document.indexOf(TABLE_END)
  if (start === -1 || end < start) throw new Error(`the document has no "${TABLE_START}" … "${TABLE_END}" markers`)
  return `${document.slice(0, start + TABLE_START.length)}\n${table}\n${document.slice(end)}`
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const check = args.includes('--check')
  const path = args.find((arg) => arg !== '--check') ?? referencePath
  const current = readFileSync(path, 'utf8')
  const expected = withSettingsTable(current, settingsTable())
  if (current !== expected && check) {
    console.error(
      `${path}: the settings table is not service/settings.ts's schema; run \`npm run generate:config-docs\``,
    )
    process.exitCode = 1
  } else if (current !== expected) {
    writeFileSync(path, expected)
  }
}
