/** The process (`npm start`): listens, and shuts down gracefully on SIGTERM/SIGINT. @module */
import { writeSync } from 'node:fs'
import { setTimeout } from 'node:timers/promises'
import { isatty } from 'node:tty'
import closeWithGrace from 'close-with-grace'
import { createApp, DOCS_PREFIX } from './app.ts'
import { ConfigError, loadConfig } from './config.ts'
import { processLogging } from './logging.ts'
import { MigrationError } from './store/migrate.ts'

try {
  const config = loadConfig(process.env)
  const logging = processLogging(config.logLevel, isatty(1))
  const app = await createApp(config, logging.options)
  closeWithGrace({ delay: config.shutdownGraceMs, logger: app.log }, async ({ signal, err }) => {
    /* c8 ignore next -- an uncaught error cannot be provoked from outside the process */
    if (err !== undefined) app.log.error({ err }, 'uncaught error')
    app.log.info({ signal }, 'shutting down')
    app.startDraining()
    // Give the gateway time to see readiness fail before the listener closes.
    await setTimeout(config.shutdownDrainDelayMs)
    await app.close()
  })
  const address = await app.listen({ host: config.host, port: config.port })
  logging.flush()
  if (config.tokenGenerated) {
    // Not logged: a development convenience only.
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
