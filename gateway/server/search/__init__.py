"""Tool search for large catalogs: `search_tools` and `call_tool` instead of every tool, and the index behind them.

The index ranks tools with BM25 and, with the `search` extra's wordllama, by meaning (`_tool_embeddings`); the
vocabulary holds stop words and the related words a request's word also looks for.
"""
