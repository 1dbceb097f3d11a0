import { packageBuildConfig } from '../../scripts/tsdown-config.ts';

// Two entries: what a user calls, and what only an adapter or store author needs.
export default packageBuildConfig({ entry: ['src/index.ts', 'src/adapter.ts'] });
