"""The server's own MCP resources: the artifacts its tools saved, as resources of the caller's session."""

from gateway.server.resources.artifact_resources import ArtifactResources

__all__ = ["ArtifactResources"]
