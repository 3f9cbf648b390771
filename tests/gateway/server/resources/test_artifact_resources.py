"""What a tool saves is an MCP resource of the caller's session, against real `adk-mcp-gateway serve` processes in
both protocol eras: a `resource_link` in the result, `resources/list`, `resources/read` (text or blob by media
type), the list-changed notification, never another session's or principal's; kept across a restart; a size limit."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from mcp import Client, MCPError, StdioServerParameters, types
from server_harness import DEADLINE, ERAS, ROOT, Era, Transport, connect, wait_until_healthy

from adapters.meta_keys import SESSION_META_KEY
from tests.support.loopback import free_port

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent.parent
ARTIFACT_TOOLS = f"{HERE / 'artifact_tools.py'}:TOOLS"
FILES_SERVER = str(HERE.parent / "hub" / "hub_files_server.py")
PNG = b"\x89PNG\r\n\x1a\n-chart-"
ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
TRANSPORTS: tuple[Transport, ...] = ("stdio", "sse", "http")


def _serve_args(state: Path | str, *extra: str) -> list[str]:
    return ["-m", "gateway.cli", "serve", "--tools", ARTIFACT_TOOLS, "--state", str(state), *extra]


@asynccontextmanager
async def http_serve(state: Path | str, *extra: str, env: dict[str, str] | None = None) -> AsyncIterator[str]:
    """`adk-mcp-gateway serve --transport http` as a child process; yields its base URL."""
    port = free_port()
    command = [sys.executable, *_serve_args(state, "--transport", "http", "--port", str(port), *extra)]
    environment = {**os.environ, **(env or {})}
    process = await anyio.open_process(
        command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    async with process:
        try:
            await wait_until_healthy(f"http://127.0.0.1:{port}")
            yield f"http://127.0.0.1:{port}"
        finally:
            if process.returncode is None:
                process.terminate()
            with anyio.move_on_after(DEADLINE, shield=True):
                await process.wait()
            if process.returncode is None:
                process.kill()


@asynccontextmanager
async def served(transport: Transport, era: Era, state: Path, *extra: str, **options: Any) -> AsyncIterator[Client]:
    """A real `serve` process of the artifact tools on `state`, and a client over `transport` in `era`."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable, args=_serve_args(state, *extra), cwd=ROOT, env=dict(os.environ)
        )
        async with connect("stdio", era, params, **options) as client:
            yield client
        return
    async with http_serve(state, *extra) as base_url, connect(transport, era, base_url, **options) as client:
        yield client


class Session:
    """Calls of one session: the modern era names its session with the `_meta` session key, as documented."""

    def __init__(self, client: Client, era: Era, key: str | None = None) -> None:
        self.client = client
        self.meta: dict[str, Any] | None = {SESSION_META_KEY: key or uuid.uuid4().hex} if era == "modern" else None

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        with anyio.fail_after(DEADLINE):
            return await self.client.call_tool(name, arguments, meta=self.meta)  # pyright: ignore[reportArgumentType]

    async def resources(self) -> list[types.Resource]:
        with anyio.fail_after(DEADLINE):
            listed = await self.client.list_resources(meta=self.meta, cache_mode="bypass")  # pyright: ignore[reportArgumentType]
        return listed.resources

    async def read(self, uri: str) -> types.TextResourceContents | types.BlobResourceContents:
        with anyio.fail_after(DEADLINE):
            result = await self.client.read_resource(uri, meta=self.meta, cache_mode="bypass")  # pyright: ignore[reportArgumentType]
        (contents,) = result.contents
        return contents


def links(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [block for block in result.content if isinstance(block, types.ResourceLink)]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_saved_artifact_is_linked_listed_and_read_as_a_resource_of_the_session(
    transport: Transport, era: Era, tmp_path: Path
) -> None:
    async with served(transport, era, tmp_path / "state.db") as client:
        session = Session(client, era)
        saved = await session.call("save_report", {"text": "three small words"})
        chart = await session.call("save_chart", {})
        listed = {resource.uri: resource for resource in await session.resources()}
        report = await session.read("artifact://report.md?version=0")
        image = await session.read(links(chart)[0].uri)

    assert not saved.is_error, saved.content
    (link,) = links(saved)
    assert (link.uri, link.name, link.mime_type) == ("artifact://report.md?version=0", "report.md", "text/plain")
    assert listed["artifact://report.md"].meta == {"version": 0, "customMetadata": {"words": 3}}
    assert listed["artifact://chart.png"].mime_type == "image/png"
    assert isinstance(report, types.TextResourceContents)
    assert report.text == "three small words"
    assert isinstance(image, types.BlobResourceContents)
    assert (image.mime_type, base64.b64decode(image.blob)) == ("image/png", PNG)


@pytest.mark.parametrize("era", ERAS)
async def test_another_session_or_principal_never_sees_a_sessions_artifacts(era: Era, tmp_path: Path) -> None:
    tokens = ("--auth-token", f"alice={ALICE}", "--auth-token", f"bob={BOB}")
    async with http_serve(tmp_path / "state.db", *tokens) as base_url:
        async with connect("http", era, base_url, token=ALICE) as alice:
            first = Session(alice, era, "alice-session-1")
            await first.call("save_report", {"text": "alice's draft"})
            await first.call("save_profile", {"lang": "fr"})
        async with connect("http", era, base_url, token=ALICE) as alice_again:
            second = Session(alice_again, era, "alice-session-2")
            seen_by_her_other_session = [resource.uri for resource in await second.resources()]
            with pytest.raises(MCPError, match="not found"):
                await second.read("artifact://report.md")
        async with connect("http", era, base_url, token=BOB) as bob:
            # Bob even names Alice's session key: it is his own (empty) session then.
            intruder = Session(bob, era, "alice-session-1")
            seen_by_bob = [resource.uri for resource in await intruder.resources()]
            with pytest.raises(MCPError, match="not found"):
                await intruder.read("artifact://user:profile.json")
            described = await intruder.call("describe_artifact", {"filename": "report.md"})

    assert seen_by_her_other_session == ["artifact://user:profile.json"]
    assert seen_by_bob == []
    assert described.structured_content == {"found": False, "names": []}


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ERAS)
async def test_the_session_hears_that_its_resource_list_changed(transport: Transport, era: Era, tmp_path: Path) -> None:
    heard = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            heard.set()

    async with served(transport, era, tmp_path / "state.db", message_handler=on_message) as client:
        session = Session(client, era)
        if era == "legacy":
            await session.call("save_report", {"text": "news"})
            with anyio.fail_after(DEADLINE):
                await heard.wait()
            return
        with anyio.fail_after(DEADLINE):
            async with client.listen(resources_list_changed=True) as subscription:
                await session.call("save_report", {"text": "news"})
                event = await subscription.__anext__()
    assert type(event).__name__ == "ResourcesListChanged"


async def test_a_users_artifacts_survive_a_restart_and_a_modern_sessions_too(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    async with served("stdio", "legacy", state) as client:
        await Session(client, "legacy").call("save_profile", {"lang": "de"})
    async with http_serve(state) as base_url, connect("http", "modern", base_url) as client:
        await Session(client, "modern", "kept-session").call("save_report", {"text": "before the restart"})
    async with http_serve(state) as base_url, connect("http", "modern", base_url) as client:
        session = Session(client, "modern", "kept-session")
        profile = await session.read("artifact://user:profile.json")
        report = await session.read("artifact://report.md")
        described = await session.call("describe_artifact", {"filename": "report.md"})

    assert isinstance(profile, types.TextResourceContents)
    assert json.loads(profile.text) == {"lang": "de"}
    assert isinstance(report, types.TextResourceContents)
    assert report.text == "before the restart"
    assert described.structured_content == {
        "found": True,
        "version": 0,
        "custom_metadata": {"words": 3},
        "value": "before the restart",
        "names": ["report.md", "user:profile.json"],
    }


async def test_an_artifact_over_max_artifact_bytes_fails_the_call_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"maxArtifactBytes": 100}))
    async with served("stdio", "legacy", tmp_path / "state.db", str(config)) as client:
        session = Session(client, "legacy")
        small = await session.call("save_blob", {"size": 100})
        large = await session.call("save_blob", {"size": 101})

    assert not small.is_error
    assert large.is_error
    text = large.content[0].text  # pyright: ignore[reportAttributeAccessIssue]
    assert "101 bytes, more than the limit of 100 bytes" in text
    assert "maxArtifactBytes" in text


@pytest.mark.parametrize("era", ERAS)
async def test_a_gateways_upstream_resources_and_its_artifacts_are_listed_and_read_together(
    era: Era, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"files": {"command": sys.executable, "args": [FILES_SERVER]}}}))
    async with served("stdio", era, tmp_path / "state.db", str(config)) as client:
        session = Session(client, era)
        await session.call("save_report", {"text": "mine"})
        listed = await session.resources()
        upstream = next(resource for resource in listed if "readme" in resource.uri)
        theirs = await session.read(upstream.uri)
        mine = await session.read("artifact://report.md")

    assert "artifact://report.md" in [resource.uri for resource in listed]
    assert isinstance(theirs, types.TextResourceContents)
    assert theirs.text == "public notes"
    assert isinstance(mine, types.TextResourceContents)
    assert mine.text == "mine"


@pytest.mark.parametrize("prefix", ["inner", ""], ids=["prefixed", "unprefixed"])
async def test_a_gateway_reads_its_upstream_gateways_artifacts_through_the_links_it_forwards(
    prefix: str, tmp_path: Path
) -> None:
    inner = ["-m", "gateway.cli", "serve", "--tools", ARTIFACT_TOOLS, "--state", str(tmp_path / "inner.db")]
    upstream = {"command": sys.executable, "args": inner, "cwd": str(ROOT), "prefix": prefix}
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"inner": upstream}}))
    args = ["-m", "gateway.cli", "serve", str(config), "--state", str(tmp_path / "outer.db")]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=ROOT, env=dict(os.environ))
    name = f"{prefix}_save_report" if prefix else "save_report"
    async with connect("stdio", "legacy", params) as client:
        session = Session(client, "legacy")
        saved = await session.call(name, {"text": "saved upstream"})
        (link,) = links(saved)
        theirs = await session.read(link.uri)

    # Unprefixed, the upstream's link is an `artifact:` URI this gateway has no file for: the upstream reads it.
    assert link.uri == (f"{prefix}+" if prefix else "") + "artifact://report.md?version=0"
    assert isinstance(theirs, types.TextResourceContents)
    assert theirs.text == "saved upstream"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_behind_a_gateway_with_upstreams_a_modern_listen_stream_hears_of_a_saved_artifact(
    transport: Transport, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"files": {"command": sys.executable, "args": [FILES_SERVER]}}}))
    async with served(transport, "modern", tmp_path / "state.db", str(config)) as client:
        session = Session(client, "modern")
        with anyio.fail_after(DEADLINE):
            async with client.listen(resources_list_changed=True) as subscription:
                await session.call("save_report", {"text": "news"})
                event = await subscription.__anext__()
    assert type(event).__name__ == "ResourcesListChanged"


async def test_replicas_on_one_redis_serve_one_sessions_artifacts(redis_url: str) -> None:
    app = ("--name", f"replicas-{uuid.uuid4().hex[:8]}")
    shared = {"ADK_MCP_GATEWAY_SEALING_KEY": "replicas-share-this-sealing-key-for-tests-0123"}
    async with http_serve(redis_url, *app, env=shared) as first, http_serve(redis_url, *app, env=shared) as second:
        async with connect("http", "modern", first) as client:
            await Session(client, "modern", "one-session").call("save_report", {"text": "from the first replica"})
        async with connect("http", "modern", second) as client:
            session = Session(client, "modern", "one-session")
            listed = [resource.uri for resource in await session.resources()]
            report = await session.read("artifact://report.md")

    assert listed == ["artifact://report.md"]
    assert isinstance(report, types.TextResourceContents)
    assert report.text == "from the first replica"
