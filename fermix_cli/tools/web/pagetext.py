"""Turning a fetched body into text: what kind of body it is, its charset, and HTML as markdown-light text.

HTML goes through trafilatura (imported here, lazily, only when a page is HTML); a small converter of
our own handles short pages and pages where trafilatura finds no main content.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Literal
from urllib.parse import urljoin

BodyKind = Literal["json", "html", "text", "binary"]
SUBSTANTIAL_HTML = 10_000  # bytes of HTML from which readability extraction (trafilatura) is used

_BINARY_PREFIXES = ("image/", "audio/", "video/", "font/", "model/")
_BINARY_TYPES = frozenset(
    {
        "application/pdf",
        "application/zip",
        "application/gzip",
        "application/x-gzip",
        "application/x-tar",
        "application/x-7z-compressed",
        "application/x-rar-compressed",
        "application/vnd.rar",
        "application/wasm",
        "application/x-bzip2",
        "application/x-xz",
    }
)
_TEXT_APP_TYPES = frozenset(
    {"application/xml", "application/javascript", "application/x-javascript", "application/ecmascript"}
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
# The codecs named here drop the BOM as they decode.
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_WIDE_CHARSETS = ("utf-16", "utf16", "utf-32", "utf32", "ucs-2", "ucs2", "ucs-4", "ucs4")
_HTML_START = re.compile(
    rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.IGNORECASE | re.DOTALL
)


NO_TEXT_NOTE = (
    "no readable text: the page may build its content with JavaScript; open it with the browser tool"
)


def empty_note(kind: BodyKind, text: str) -> str | None:
    """What to tell the reader when a body yields no readable text (never a silent empty success)."""
    if text.strip():
        return None
    return NO_TEXT_NOTE if kind == "html" else "the response body is empty"


def media_type(content_type: str) -> str:
    """`text/html; charset=x` -> `text/html`."""
    return content_type.split(";", 1)[0].strip().lower()


def body_kind(content_type: str, body: bytes) -> BodyKind:
    """Classify a body by its declared type, sniffing when the type is missing or generic.

    A body declared as HTML or text is still refused as binary when its first bytes are not text (NUL
    bytes, or many control characters), as a browser would not render it either.
    """
    mt = media_type(content_type)
    if mt == "application/json" or mt.endswith("+json"):
        return "json"
    if mt in ("text/html", "application/xhtml+xml"):
        return "binary" if _looks_binary(content_type, body) else "html"
    if mt.startswith("text/") or mt in _TEXT_APP_TYPES or mt.endswith("+xml"):
        return "binary" if _looks_binary(content_type, body) else "text"
    if mt.startswith(_BINARY_PREFIXES) or mt in _BINARY_TYPES:
        return "binary"
    # Missing, application/octet-stream or something unknown: look at the bytes.
    head = body[:8192]
    if b"\x00" in head:
        return "binary"
    if _HTML_START.match(head):
        return "html"
    stripped = head.lstrip()
    if stripped[:1] in (b"{", b"[") and mt in ("", "application/octet-stream"):
        return "json" if _looks_like_json(body) else "text"
    return "text"


def _looks_binary(content_type: str, body: bytes) -> bool:
    """Whether a body declared as text starts with bytes no text has: NUL, or over 30% control characters.

    UTF-16 and UTF-32 text is full of NUL bytes: declared in the header or by a BOM, it is not sniffed.
    """
    head = body[:4096]
    if head.startswith(_WIDE_BOMS) or _header_charset(content_type).lower().startswith(_WIDE_CHARSETS):
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for byte in head if byte < 0x20 or byte == 0x7F) - sum(
        head.count(c) for c in b"\t\n\r\x0c\x1b"
    )
    return controls * 10 > len(head) * 3


def _looks_like_json(body: bytes) -> bool:
    import json

    try:
        json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return False
    return True


def _header_charset(content_type: str) -> str:
    for param in content_type.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "charset" and value.strip("\"' "):
            return value.strip("\"' ")
    return ""


def charset_of(content_type: str, body: bytes, kind: BodyKind) -> str:
    """The charset to decode with, in WHATWG order: a byte order mark, the header, `<meta charset>`, UTF-8.

    A BOM overrides the header; a `<meta>` naming UTF-16 is read as UTF-8 (the meta tag itself could
    not have been read if the page were UTF-16).
    """
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec
    declared = _header_charset(content_type)
    if declared:
        return declared
    if kind == "html":
        match = _META_CHARSET.search(body[:4096])
        if match:
            named = match.group(1).decode("ascii")
            return "utf-8" if named.lower().replace("_", "-").startswith(("utf-16", "utf16")) else named
    return "utf-8"


def decode_body(body: bytes, content_type: str, kind: BodyKind) -> str:
    """Body bytes as text; undecodable bytes become U+FFFD."""
    charset = charset_of(content_type, body, kind)
    try:
        return body.decode(charset, errors="replace")
    except (LookupError, UnicodeError):  # unknown, or a codec that refuses to replace (idna, punycode)
        return body.decode("utf-8", errors="replace")


def page_text(html: str, url: str | None = None) -> str:
    """Markdown-light text of an HTML page: readability extraction when substantial, else the whole page.

    Short pages carry little boilerplate, and extraction tends to drop their structure (headings, links).
    """
    if len(html.encode("utf-8", "surrogatepass")) < SUBSTANTIAL_HTML:
        return html_to_markdown(html, url)
    return readable_text(html, url)


def readable_text(html: str, url: str | None = None) -> str:
    """Markdown-light main text of an HTML page (trafilatura), or the whole page converted when it finds none."""
    import trafilatura  # heavy: only substantial HTML pages pay for it

    extracted = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_images=False,
        include_comments=False,
        favor_recall=True,
        with_metadata=False,
    )
    if extracted and extracted.strip():
        return extracted.strip()
    return html_to_markdown(html, url)


def html_title(html: str) -> str | None:
    match = re.search(r"<title[^>]*>(.*?)</title\s*>", html[:200_000], re.IGNORECASE | re.DOTALL)
    if not match:
        return None
    import html as entities

    title = " ".join(entities.unescape(re.sub(r"<[^>]*>", "", match.group(1))).split())
    return title or None


def html_to_markdown(html: str, url: str | None = None) -> str:
    """A small HTML to Markdown conversion of the whole body: headings, lists, links, emphasis, code.

    Relative links are resolved against `url` (the page's own address); only http(s) links are kept.
    """
    converter = _MarkdownConverter(url)
    converter.feed(html)
    converter.close()
    return converter.text()


_SKIP = frozenset(
    {"script", "style", "noscript", "template", "svg", "head", "title", "iframe", "object", "canvas"}
)
# Raw text to the parser: everything up to the end tag is theirs, even at the end of the page.
_RAW_TEXT = frozenset({"script", "style"})
# Start tags that stay in `<head>`; any other start tag, or text, ends it (HTML5 "in head" insertion mode).
_HEAD_CONTENT = frozenset(
    {"base", "basefont", "bgsound", "link", "meta", "title", "noscript", "noframes", "style", "script",
     "template", "head"}
)  # fmt: skip
_BLOCK = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "ul", "ol", "table",
        "tr", "blockquote", "figure", "figcaption", "form", "dl", "dt", "dd", "details", "summary", "hr",
    }
)  # fmt: skip
_INLINE_MARKS = {"strong": "**", "b": "**", "em": "*", "i": "*", "code": "`"}


class _MarkdownConverter(HTMLParser):
    """Converts as it parses; what a skipped element holds goes to a side buffer, dropped at its end tag.

    An element skipped but never closed (a valid HTML5 `<head>` without `</head>`, a stray `<iframe>` or
    `<svg>`) must not swallow the rest of the page: `<head>` ends where HTML5 ends it (a body start tag
    or text), and at the end of the page the side buffers of unclosed elements are kept after all.
    """

    def __init__(self, base_url: str | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self._base_url = base_url
        self._out: list[str] = []
        self._skipped: list[tuple[str, list[str]]] = []  # (tag, the output it interrupted)
        self._pre_depth = 0
        self._links: list[str | None] = []

    def _end_skip(self, tag: str) -> None:
        """Drop what was collected since the innermost open `tag` (and everything opened inside it)."""
        for depth in range(len(self._skipped) - 1, -1, -1):
            if self._skipped[depth][0] == tag:
                self._out = self._skipped[depth][1]
                del self._skipped[depth:]
                return

    def _end_implied_head(self) -> None:
        if any(tag == "head" for tag, _ in self._skipped):
            self._end_skip("head")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _HEAD_CONTENT:
            self._end_implied_head()
        if tag in _SKIP:
            self._skipped.append((tag, self._out))
            self._out = []
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._out.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "li":
            self._out.append("\n- ")
        elif tag == "br":
            self._out.append("\n")
        elif tag == "pre":
            self._pre_depth += 1
            self._out.append("\n\n```\n")
        elif tag in ("td", "th"):
            self._out.append(" | ")
        elif tag in _BLOCK:
            self._out.append("\n\n")
        elif tag in _INLINE_MARKS and not self._pre_depth:
            self._out.append(_INLINE_MARKS[tag])
        elif tag == "a":
            href = (dict(attrs).get("href") or "").strip()
            if href and self._base_url and not href.startswith("#"):
                try:
                    href = urljoin(self._base_url, href)
                except ValueError:  # e.g. a broken [v6] host: not a link a reader can follow
                    href = ""
            keep = href if href.startswith(("http://", "https://")) else None
            self._links.append(keep)
            if keep:
                self._out.append("[")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._end_skip(tag)
            return
        if tag == "body":
            self._end_implied_head()
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._out.append("\n\n")
        elif tag == "pre":
            self._pre_depth = max(self._pre_depth - 1, 0)
            self._out.append("\n```\n\n")
        elif tag in _BLOCK:
            self._out.append("\n\n")
        elif tag in _INLINE_MARKS and not self._pre_depth:
            self._out.append(_INLINE_MARKS[tag])
        elif tag == "a" and self._links:
            href = self._links.pop()
            if href:
                self._out.append(f"]({href})")

    def handle_data(self, data: str) -> None:
        if data.strip() and self._skipped and self._skipped[-1][0] == "head":
            self._end_implied_head()  # text directly in <head> ends it
        if self._pre_depth:
            self._out.append(data)
        else:
            self._out.append(re.sub(r"\s+", " ", data))

    def close(self) -> None:
        super().close()
        # Skipped elements still open at the end of the page: keep what they held, except raw text.
        while self._skipped:
            tag, outer = self._skipped.pop()
            if tag not in _RAW_TEXT:
                outer.extend(self._out)
            self._out = outer

    def text(self) -> str:
        lines: list[str] = []
        fenced = False
        for line in "".join(self._out).split("\n"):
            if line.strip() == "```":
                fenced = not fenced
                lines.append("```")
            else:
                lines.append(line.rstrip() if fenced else line.strip())
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
        text = text.replace("****", "")  # emphasis around nothing
        text = re.sub(r"\[\s*\]\([^)]*\)", "", text)  # links around nothing
        return text.strip()
