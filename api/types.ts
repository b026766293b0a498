/**
 * The service's TypeScript types, generated from openapi.yaml by openapi-typescript
 * into service/generated/openapi.ts. Its command is api/generate-types.ts:
 * `npm run generate` writes the file; `npm run check:types` fails when it is stale.
 *
 * One option beyond openapi-typescript's defaults: an `int64` is a `bigint`, the
 * exact value the service hands its handlers (service/plugins/exact-json/).
 *
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript'
import ts from 'typescript'

const CONTRACT = new URL('../openapi.yaml', import.meta.url)
const GENERATED = new URL('../service/generated/openapi.ts', import.meta.url)

/**
 * The generated module's text for a document.
 *
 * @param document - the contract: its URL, or the parsed document.
 */
export async function generateTypes(document: URL | OpenAPI3): Promise<string> {
  const bigint = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword)
  const ast = await openapiTS(document, { transform: (schema) => (schema.format === 'int64' ? bigint : undefined) })
  return `${COMMENT_HEADER}${astToString(ast)}`
}

/**
 * The command: `[--check] [contract] [output]`, paths defaulting to openapi.yaml and
 * service/generated/openapi.ts.
 *
 * @returns the exit code: 1 when `--check` finds the output stale, else 0.
 */
export async function main(args: readonly string[], log: (line: string) => void = console.error): Promise<number> {
  const check = args[0] === '--check'
  const [contract = CONTRACT, output = GENERATED] = args.slice(check ? 1 : 0).map((path) => pathToFileURL(path))
  const text = await generateTypes(contract)
  if (!check) writeFileSync(output, text)
  else if (readFileSync(output, 'utf8') !== text) {
    log(`${fileURLToPath(output)} is stale: run npm run generate`)
    return 1
  }
  return 0
}
