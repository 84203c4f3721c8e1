// The component's entry module: componentize-js builds it and binds its
// `tool` export to the `toolhost:tool/tool` interface.
//
// Everything this module imports is evaluated at build time and
// snapshotted into the component; nothing may touch files there (see
// kit/index.js).

import { exportToolset } from '../../kit/component.js';

import { TOOLSET } from './src/tools.js';

export const tool = exportToolset(TOOLSET);
