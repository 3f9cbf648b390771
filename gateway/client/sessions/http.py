"""The client side's name for the shared `httpx2` client builder (`gateway._http_clients`)."""

from __future__ import annotations

from gateway._http_clients import REQUEST_FAILED, ResponseHook, http_client

__all__ = ["REQUEST_FAILED", "ResponseHook", "http_client"]
