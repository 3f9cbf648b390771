"""The client side's name for the shared `httpx2` client builder (`gateway._http_clients`)."""

from __future__ import annotations

from gateway._http_clients import REQUEST_FAILED, ResponseHook, client_from_factory, http_client

__all__ = ["REQUEST_FAILED", "ResponseHook", "client_from_factory", "http_client"]
