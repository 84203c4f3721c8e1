"""The component's entry module: componentize-py builds this module (``app``)
and exports its ``Tool`` class as the ``toolhost:tool/tool`` interface.

Everything imported here is imported at build time and snapshotted into the
component; see ``toolhost_kit``'s rules for what may run at import time.
"""

from toolhost_kit.component import export

from table_tool import TOOLSET

Tool = export(TOOLSET)
