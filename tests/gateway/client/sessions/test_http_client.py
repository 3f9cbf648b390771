"""The upstream HTTP client (`gateway._http_clients.http_client`): plain http and https on loopback.

The CA store is loaded on the first https request only; these tests make sure that laziness never weakens
verification: an https server whose certificate nobody vouches for is refused, whichever came first.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import anyio
import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from gateway._http_clients import http_client
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_asgi


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key (no CA vouches for it); its file and its key's file."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = directory / "cert.pem", directory / "key.pem"
    certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return certfile, keyfile


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"hello over {request.url.scheme}")


APP = Starlette(routes=[Route("/", hello)])


@pytest.mark.anyio
@pytest.mark.parametrize("first", ["http", "https"])
async def test_an_https_upstream_with_an_unvouched_certificate_is_refused_and_plain_http_still_works(
    tmp_path: Path, first: str
) -> None:
    async with (
        serving_asgi(APP) as plain_url,
        serving_asgi(APP, tls=self_signed(tmp_path)) as tls_url,
        http_client(headers=None, connect_timeout=5.0, read_timeout=5.0) as client,
    ):
        assert tls_url.startswith("https://")
        order = [plain_url, tls_url] if first == "http" else [tls_url, plain_url]
        with anyio.fail_after(DEADLINE):
            for url in order:
                if url == tls_url:
                    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                        await client.get(f"{url}/")
                else:
                    response = await client.get(f"{url}/")
                    assert response.text == "hello over http"
