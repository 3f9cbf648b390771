"""ADK-style tools and MCP, both ways."""
