/**
 * @module Build: the library like every package (ESM + CJS with types), plus the `tollgate` bin (ESM).
 */
import { packageBuildConfig } from '../../scripts/tsdown-config.ts';

export default [packageBuildConfig(), packageBuildConfig({ entry: ['src/main.ts'], format: ['esm'], dts: false, clean: false })];
