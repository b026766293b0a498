/**
 * The ordered list of migrations, by name. Names sort in the order they apply;
 * a new migration is a new numbered file added here, never an edit of an old one.
 *
 * @module
 */
import type { Migration } from 'kysely/migration'
import * as createPlant from './0001-create-plant.js'

/** Every migration this release knows, keyed by its name. */
export const migrations: Readonly<Record<string, Migration>> = {
  '0001-create-plant': createPlant,
}
