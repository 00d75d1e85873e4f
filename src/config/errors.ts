/** A configuration problem; its message names the file, the key path and what was expected. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
