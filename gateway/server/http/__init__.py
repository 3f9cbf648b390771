"""The HTTP front of a `ToolServer`: the ASGI app, its sessions, guards and routes, and running it under uvicorn.

The app (`app`) with streamable HTTP, SSE, `/healthz` and `/metrics`; the sessions it holds open (`sessions`); what
answers a request before any session work (host check, malformed ids, a stopping server, the JSON-RPC body); the
seam a lane in front of the SDK's app plugs into (`lane`; the hub's fast lane is one); the event loop, request
deadlines and worker processes.
"""
