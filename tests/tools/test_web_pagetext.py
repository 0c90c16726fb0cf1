"""The page-text rules on their own: HTML to markdown-light text, body kinds and charsets (table tests)."""

from __future__ import annotations

import pytest

from fermix_cli.tools.web.pagetext import body_kind, decode_body, html_to_markdown, page_text

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


# --- body kinds: declared text that is not text ------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00"


@pytest.mark.parametrize(
    ("content_type", "body", "kind"),
    [
        ("text/html", PNG, "binary"),
        ("text/html; charset=utf-8", b"<html><body>" + bytes(range(1, 32)) * 20, "binary"),
        ("text/plain", b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary"),
        ("application/xhtml+xml", b"<p>\x00\x00</p>", "binary"),
        # Real text, including the control characters text does carry, stays text.
        ("text/html", "<p>café – ok</p>".encode(), "html"),
        ("text/plain", b"\x1b[31mred\x1b[0m\ttab\r\nline\x0c\n", "text"),
        ("text/plain; charset=utf-16", "wide text".encode("utf-16"), "text"),
        ("text/html", "<p>BOM-led UTF-16</p>".encode("utf-16"), "html"),
        ("text/plain", b"", "text"),
    ],
)
def test_declared_text_is_sniffed_for_binary(content_type: str, body: bytes, kind: str) -> None:
    assert body_kind(content_type, body) == kind


# --- charsets: WHATWG order ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "body", "text"),
    [
        # A byte order mark overrides the header, and is not part of the text.
        ("text/plain; charset=iso-8859-1", "\ufeffcafé".encode(), "café"),
        ("text/html; charset=utf-8", "<p>hé</p>".encode("utf-16"), "<p>hé</p>"),
        ("text/plain; charset=windows-1252", b"\xfe\xff" + "hé".encode("utf-16-be"), "hé"),
        # A <meta> naming UTF-16 in a page readable as ASCII means UTF-8.
        ("text/html", '<meta charset="utf-16"><p>café</p>'.encode(), '<meta charset="utf-16"><p>café</p>'),
        ("text/html", "<meta charset=UTF-16LE><p>é</p>".encode(), "<meta charset=UTF-16LE><p>é</p>"),
        # Without a BOM, the header, then the <meta>, then UTF-8.
        ("text/plain; charset=iso-8859-1", "café".encode("latin-1"), "café"),
        ("text/html", '<meta charset="windows-1252">“'.encode("cp1252"), '<meta charset="windows-1252">“'),
        ("text/plain", "café".encode(), "café"),
    ],
)
def test_charsets_follow_whatwg(content_type: str, body: bytes, text: str) -> None:
    kind = body_kind(content_type, body)
    assert decode_body(body, content_type, kind) == text


# --- links --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("href", "shown"),
    [
        ("/rel/link", "[the link](http://x.com/rel/link)"),
        ("sibling.html", "[the link](http://x.com/dir/sibling.html)"),
        ("../up?q=1", "[the link](http://x.com/up?q=1)"),
        ("//cdn.example.org/a", "[the link](http://cdn.example.org/a)"),
        ("https://other.org/x", "[the link](https://other.org/x)"),
        ("#top", "the link"),
        ("javascript:alert(1)", "the link"),
        ("mailto:a@x.com", "the link"),
        ("http://[broken/", "the link"),
    ],
)
def test_relative_links_resolve_against_the_page(href: str, shown: str) -> None:
    html = f'<p>See <a href="{href}">the link</a>.</p>'
    assert page_text(html, "http://x.com/dir/page") == f"See {shown}."
