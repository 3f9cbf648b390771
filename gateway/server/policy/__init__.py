"""Who may use which tool, resource and prompt, and how often: the config's `policies` and their enforcement.

The rules (`rules`), the guard applying them to every MCP request (`guard`), rate limits, and resource URIs as a
policy matches them.
"""
