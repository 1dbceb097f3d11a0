import { packageBuildConfig } from '../../scripts/tsdown-config.ts';

// The library (index) in ESM and CJS like every package, plus the `tollgate` bin (main), ESM only.
export default [packageBuildConfig(), packageBuildConfig({ entry: ['src/main.ts'], format: ['esm'], dts: false, clean: false })];
