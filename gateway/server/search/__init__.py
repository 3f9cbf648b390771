"""Tool search for large catalogs: the server offers `search_tools` and `call_tool` instead of every tool.

The ranking itself is `gateway.search.ToolIndex`, shared with the client side.
"""
