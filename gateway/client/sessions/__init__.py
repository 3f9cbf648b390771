"""Upstream sessions: how a toolset reaches a server, keeps one session per identity, and bounds how many.

`transport` opens stdio, SSE and streamable HTTP connections (their `httpx2` clients from `gateway._http_clients`);
`upstream_session` owns one live session in one task; `pool` keeps a session per identity (`slot`), capped by
`limits`; `upstream_call` sends a `tools/call` exactly once; `pagination` follows a listing's cursors to its end.
"""
