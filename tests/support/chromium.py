"""A real headless Chromium for tests: Debian's `chromium` and `chromium-driver`, driven with selenium.

    with chromium(tmp_path / "alice") as alice:
        text = await visit(alice, url)

Each call starts a browser on a profile of its own (`--user-data-dir`): its own cookies, so one profile is one
user. `.ci/run` installs both packages; `CHROMIUM_MISSING` says why a test must skip on a machine without them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

__all__ = ["CHROMIUM_MISSING", "chromium", "visit"]

_CHROMIUM: Final = shutil.which("chromium")
_CHROMEDRIVER: Final = shutil.which("chromedriver")
_FLAGS: Final = (
    "--headless",
    # Root (as in CI) cannot use Chromium's sandbox.
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
_PAGE_DEADLINE: Final = 30


def _missing() -> str | None:
    if _CHROMIUM is None or _CHROMEDRIVER is None:
        return "Chromium is not installed (apt-get install chromium chromium-driver; .ci/run installs both)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in the dev extra: pip install -e '.[dev]')"
    return None


CHROMIUM_MISSING: Final = _missing()
"""Why no browser can be started here; None when one can."""


@contextmanager
def chromium(profile: Path) -> Iterator[WebDriver]:
    """A headless Chromium on the profile folder `profile` (created fresh), quit when the block ends."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    assert _CHROMIUM is not None, CHROMIUM_MISSING
    assert _CHROMEDRIVER is not None, CHROMIUM_MISSING
    profile.mkdir(parents=True, exist_ok=False)
    options = Options()
    options.binary_location = _CHROMIUM
    for flag in (*_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    # The driver and browser are given, so selenium never looks for (or downloads) either.
    driver = webdriver.Chrome(options=options, service=Service(executable_path=_CHROMEDRIVER))
    try:
        driver.set_page_load_timeout(_PAGE_DEADLINE)
        yield driver
    finally:
        driver.quit()


async def visit(browser: WebDriver, url: str) -> str:
    """Open `url` in `browser` (following every redirect, as a user's browser does); the text of the page it ends
    on. The browser is driven from a worker thread, so servers in this event loop keep serving."""
    from selenium.webdriver.common.by import By

    def load() -> str:
        browser.get(url)
        return browser.find_element(By.TAG_NAME, "body").text

    return await anyio.to_thread.run_sync(load)
