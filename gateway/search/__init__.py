"""The tool index both sides rank with: BM25 over names, descriptions and parameters, fused with meaning.

The server's `search_tools` (`gateway.server.search`) and a client's `McpToolset(tool_search=True)` use the same
`ToolIndex`; `_sentence_encoder` (all-MiniLM-L6-v2 on numpy, the `search` extra) adds ranking by meaning,
`_vector_cache` keeps encoded catalogs on disk, `_tool_vocabulary` holds stop words and related words.
"""
