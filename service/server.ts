/**
 * The process (`npm start`): configuration, logger, the application, listening, and a
 * graceful shutdown on SIGTERM/SIGINT (close-with-grace).
 * @module
 */
import { writeSync } from 'node:fs'
import { setTimeout } from 'node:timers/promises'
import { isatty } from 'node:tty'
import closeWithGrace from 'close-with-grace'
import { createApp, DOCS_PREFIX } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { processLogging } from './logging.js'
import { MigrationError } from './store/migrate.js'

try {
  const config = loadConfig(process.env)
  const logging = processLogging(config.logLevel, isatty(1))
  const app = await createApp(config, logging.options)
  closeWithGrace({ delay: config.shutdownGraceMs, logger: app.log }, async ({ signal, err }) => {
    /* c8 ignore next -- an uncaught error cannot be provoked from outside the process */
    if (err !== undefined) app.log.error({ err }, 'uncaught error')
    app.log.info({ signal }, 'shutting down')
    app.startDraining()
    // Readiness is 503 now; give the gateway time to notice before the listener closes.
    await setTimeout(config.shutdownDrainDelayMs)
    await app.close()
  })
  const address = await app.listen({ host: config.host, port: config.port })
  // Start-up's lines now, not with the next second's.
  logging.flush()
  if (config.tokenGenerated) {
    // Printed once, on the terminal, not logged: a development convenience only.
    writeSync(
      1,
      `\nNo PLANT_STORE_TOKENS configured: generated a token for this run:\n\n  ${config.tokens[0]}\n\n` +
        `Swagger UI: ${address}${DOCS_PREFIX} (Authorize with the token above)\n\n`,
    )
  }
} catch (error) {
  if (error instanceof ConfigError || error instanceof MigrationError) {
    process.stderr.write(`plant-store: ${error.message}\n`)
    process.exit(1)
  }
  throw error
}
