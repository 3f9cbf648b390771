"""Connection parameters: what messages show of an upstream, and which headers it gets."""

from __future__ import annotations

import pytest

from gateway.client import SseConnectionParams, StdioConnectionParams, StreamableHTTPConnectionParams


def test_an_http_upstream_is_described_without_its_credentials_or_query_values() -> None:
    params = StreamableHTTPConnectionParams(url="https://bob:hunter2@example.com:8443/mcp?api_key=s3cret&v=2")
    assert params.describe() == "https://example.com:8443/mcp?api_key=...&v=..."


def test_a_stdio_upstream_is_described_by_its_command_line() -> None:
    assert StdioConnectionParams(command="uvx", args=["mcp-server-time"]).describe() == "uvx mcp-server-time"


def test_identity_headers_replace_static_ones_whatever_their_case() -> None:
    params = SseConnectionParams(
        url="http://127.0.0.1/sse", headers={"authorization": "Basic x", "X-Team": "blue"}, bearer_token="static"
    )
    assert params.http_headers() == {"X-Team": "blue", "Authorization": "Bearer static"}
    assert params.http_headers({"AUTHORIZATION": "Bearer alice"}) == {"X-Team": "blue", "AUTHORIZATION": "Bearer alice"}


def test_unknown_options_are_refused() -> None:
    with pytest.raises(ValueError, match="retries"):
        StreamableHTTPConnectionParams(url="http://127.0.0.1/mcp", retries=5)  # type: ignore[call-arg]
