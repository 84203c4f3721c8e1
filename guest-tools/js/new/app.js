// The component's entry module: componentize-js builds it and binds its
// `tool` export to the `toolhost:tool/tool` interface.
//
// It is evaluated at build time and snapshotted into the component, with
// every module it imports: nothing at module top level may touch files, the
// clock or randomness. `../../kit/` is where the kit is in the build's copy
// (guest-tools/js/tools/{{name}}/), not in this directory.

import { exportToolset } from '../../kit/component.js';

import { TOOLSET } from './src/tool.js';

export const tool = exportToolset(TOOLSET);
