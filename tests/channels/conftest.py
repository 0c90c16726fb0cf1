"""Fixtures for the channel tests: the Telegram Bot API stand-in and a plain local web server."""

from tests.channels.standins import telegram, web

__all__ = ["telegram", "web"]
