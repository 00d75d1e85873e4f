// The version string, injected by the build from package.json (tests running from sources read it directly).
import { createRequire } from 'node:module';

declare const __VERSION__: string | undefined;

export const VERSION: string =
  typeof __VERSION__ === 'string' ? __VERSION__ : (createRequire(import.meta.url)('../package.json') as { version: string }).version;
