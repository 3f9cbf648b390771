"""Repeated identical log lines are collapsed: one per interval, and the next one says how many were dropped."""

from __future__ import annotations

import logging

import pytest

from gateway.server.observe._repeat_filter import RepeatFilter, filtering_repeats


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def flood() -> logging.Logger:
    logger = logging.getLogger("tests.flood")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger


def test_a_flood_of_one_line_is_logged_once_per_interval_and_the_next_says_how_many_were_dropped(
    flood: logging.Logger,
) -> None:
    clock, kept = Clock(), Kept()
    flood.addHandler(kept)
    try:
        with filtering_repeats(RepeatFilter(10.0, clock=clock), [], [kept]):
            for fd in range(1000):
                # The same line but for a number (asyncio's varies in descriptors and timer due times).
                flood.error("socket.accept() out of system resource (fd=%d)", fd)
            clock.now += 10.0
            flood.error("socket.accept() out of system resource (fd=%d)", 7)
    finally:
        flood.removeHandler(kept)
    assert kept.lines == [
        "socket.accept() out of system resource (fd=0)",
        "socket.accept() out of system resource (fd=7) [999 identical messages suppressed in the last 10 s]",
    ]


def test_different_lines_and_a_filter_on_both_logger_and_handler_let_each_first_line_through(
    flood: logging.Logger,
) -> None:
    clock, kept = Clock(), Kept()
    flood.addHandler(kept)
    try:
        with filtering_repeats(RepeatFilter(10.0, clock=clock), [flood], [kept]):
            flood.warning("first")
            flood.warning("second")
            flood.warning("first")
    finally:
        flood.removeHandler(kept)
    assert kept.lines == ["first", "second"]


def test_repeated_info_lines_all_pass_and_only_repeated_warnings_are_collapsed(flood: logging.Logger) -> None:
    clock, kept = Clock(), Kept()
    flood.addHandler(kept)
    try:
        with filtering_repeats(RepeatFilter(10.0, clock=clock), [flood], [kept]):
            for _ in range(3):
                # A request log line: identical but for its duration, which the filter masks.
                flood.info("tools/call divide upstream=- %.1f ms ok", 0.4)
                flood.warning("socket.accept() out of system resource")
    finally:
        flood.removeHandler(kept)
    assert kept.lines == [
        "tools/call divide upstream=- 0.4 ms ok",
        "socket.accept() out of system resource",
        "tools/call divide upstream=- 0.4 ms ok",
        "tools/call divide upstream=- 0.4 ms ok",
    ]


def test_one_dropped_line_is_counted_in_the_singular(flood: logging.Logger) -> None:
    clock = Clock()
    kept = Kept()
    flood.addHandler(kept)
    try:
        with filtering_repeats(RepeatFilter(10.0, clock=clock), [], [kept]):
            flood.error("disk full")
            flood.error("disk full")
            clock.now += 10.0
            flood.error("disk full")
    finally:
        flood.removeHandler(kept)
    assert kept.lines[-1] == "disk full [1 identical message suppressed in the last 10 s]"
