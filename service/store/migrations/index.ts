/** Applied in name order: a change is a new numbered file, never an edit. @module */
import type { Migration } from 'kysely/migration'
import * as createPlant from './0001-create-plant.ts'

/** Every migration, keyed by its name (Kysely's `Migrator` orders by name). */
export const migrations: Readonly<Record<string, Migration>> = {
  '0001-create-plant': createPlant,
}
