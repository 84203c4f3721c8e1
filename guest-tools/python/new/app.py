"""The component's entry module: componentize-py builds ``app`` and exports
its ``Tool`` class as the ``toolhost:tool/tool`` interface.

It is imported at build time and snapshotted into the component, with every
module it imports: import everything at module level, and touch no files at
import time.
"""

from toolhost_kit.component import export

from {{name}}_tool.tool import TOOLSET

Tool = export(TOOLSET)
