"""The tool index both sides rank with: BM25 over names, descriptions and parameters, and meaning when available.

The server's `search_tools` (`gateway.server.search`) and a client's `McpToolset(tool_search=True)` use the same
`ToolIndex`; `_tool_embeddings` adds ranking by meaning with the `search` extra, `_tool_vocabulary` holds stop
words and related words.
"""
