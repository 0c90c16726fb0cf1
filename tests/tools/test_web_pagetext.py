"""The page-text rules on their own: HTML to markdown-light text, body kinds and charsets (table tests)."""

from __future__ import annotations

import pytest

from fermix_cli.tools.web.pagetext import html_to_markdown

# --- skipped elements and implied end tags -----------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "text"),
    [
        # HTML5 lets </head> be left out: a body start tag, or text, ends the head.
        ("<html><head><title>T</title><meta charset=utf-8><p>Hello world</p>", "Hello world"),
        ("<head><title>T</title><link rel=x>Hello", "Hello"),
        ("<head><script>var a = '<p>no</p>'</script><style>p{}</style><h1>Hi", "# Hi"),
        ("<head><title>T</title><body>Body text", "Body text"),
        # A skipped element never closed does not swallow the rest of the page.
        ("<p>a</p><iframe src=x><p>after the iframe</p>", "a\n\nafter the iframe"),
        ("<p>a</p><svg><p>rest of the page", "a\n\nrest of the page"),
        ("<template><p>kept</p>", "kept"),
        # Closed skipped elements are still dropped, nested or not.
        ("<p>a</p><svg><text>t</text><svg>in</svg></svg><p>b</p>", "a\n\nb"),
        ("<p>a</p><iframe><p>x</p></iframe><p>b</p>", "a\n\nb"),
        ("<html><head><title>x</title></head><body><h1>Hi</h1></body></html>", "# Hi"),
        # Script content stays code even when its end tag is missing.
        ("<p>a</p><script>var x = 1", "a"),
    ],
)
def test_short_pages_skip_only_what_browsers_do_not_show(html: str, text: str) -> None:
    assert html_to_markdown(html) == text
