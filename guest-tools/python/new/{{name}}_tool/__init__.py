"""The {{name}} tool: ``tool.py`` declares it for toolhost, ``counting.py``
counts (plain Python, so the unit tests need nothing else)."""
