/**
 * @module One build recipe for every published package: ESM (.mjs) and CJS (.cjs) with matching
 * declaration files, so `import` and `require` both resolve through the `exports` map.
 */
import { defineConfig, type UserConfig } from 'tsdown';

export function packageBuildConfig(overrides: UserConfig = {}): UserConfig {
  return defineConfig({
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    platform: 'node',
    target: 'node20',
    dts: true,
    clean: true,
    sourcemap: false,
    outExtensions: ({ format }) => ({
      js: format === 'cjs' ? '.cjs' : '.mjs',
      dts: format === 'cjs' ? '.d.cts' : '.d.mts',
    }),
    ...overrides,
  }) as UserConfig;
}
