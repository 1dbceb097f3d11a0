import { packageBuildConfig } from '../../scripts/tsdown-config.ts';

export default packageBuildConfig();
