/**
 * The service's TypeScript types, generated from openapi.yaml by openapi-typescript
 * into service/generated/openapi.ts. `node api/types.ts [--check] [contract] [output]`:
 * `npm run generate` writes the file; with `--check` (`npm run check:types`) it
 * exits 1 when the file is stale.
 *
 * One option beyond openapi-typescript's defaults: an `int64` is a `bigint`, the
 * exact value the service hands its handlers (service/exact-integers.ts).
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

if (import.meta.main) {
  const args = process.argv.slice(2)
  const check = args[0] === '--check'
  const [contract, output] = args.slice(check ? 1 : 0).map((path) => pathToFileURL(path))
  const text = await generateTypes(contract ?? CONTRACT)
  if (!check) writeFileSync(output ?? GENERATED, text)
  else if (readFileSync(output ?? GENERATED, 'utf8') !== text) {
    console.error(`${fileURLToPath(output ?? GENERATED)} is stale: run npm run generate`)
    process.exitCode = 1
  }
}
