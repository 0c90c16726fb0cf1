"""read: selectors, windows, padding, footers, the multi-file format and the output cap."""

from __future__ import annotations

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.hashline import (
    ReadEntry,
    Selector,
    assemble_read,
    decode_text,
    parse_selector,
    parse_target,
    render_section,
)

INVALID = (
    "Invalid selector '{}'. Use :N, :-M, :N-M, :N+, :N+K, :raw, or a range combined with raw "
    "(e.g. :raw:50-100)."
)


def numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, count + 1))


@pytest.mark.parametrize(
    ("entry", "path", "selector"),
    [
        ("a.py", "a.py", None),
        ("a.py:20", "a.py", Selector(20)),
        ("a.py:20+", "a.py", Selector(20)),
        ("a.py:20-", "a.py", Selector(20)),
        ("a.py:-30", "a.py", Selector(1, 30)),
        ("a.py:5-9", "a.py", Selector(5, 9)),
        ("a.py:5-5", "a.py", Selector(5, 5)),
        ("a.py:20+1", "a.py", Selector(20, 20)),
        ("a.py:20+10", "a.py", Selector(20, 29)),
        ("a.py:raw", "a.py", Selector(raw=True)),
        ("a.py:raw:50-100", "a.py", Selector(50, 100, raw=True)),
        ("a.py:50-100:raw", "a.py", Selector(50, 100, raw=True)),
        ("a.py:raw:7", "a.py", Selector(7, raw=True)),
        ("dir:with:colons/a.py:3-4", "dir:with:colons/a.py", Selector(3, 4)),
        ("notes:12:raw", "notes", Selector(12, raw=True)),
        ("skill://deploy/ref.md:2", "skill://deploy/ref.md", Selector(2)),
        ("weird:name.txt", "weird:name.txt", None),
    ],
)
def test_parse_target(entry: str, path: str, selector: Selector | None) -> None:
    assert parse_target(entry) == (path, selector)


def test_an_existing_file_named_like_a_selector_has_no_selector() -> None:
    assert parse_target("log:5-7", lambda p: p == "log:5-7") == ("log:5-7", None)
    # otherwise the longest suffix that fits the grammar wins, even if a shorter split names a file
    assert parse_target("log:5-7:raw", lambda p: p == "log:5-7") == ("log", Selector(5, 7, raw=True))


@pytest.mark.parametrize(
    ("entry", "selector"),
    [
        ("a.py:5-x", ":5-x"),
        ("a.py:0", ":0"),
        ("a.py:7-3", ":7-3"),
        ("a.py:-0", ":-0"),
        ("a.py:3+0", ":3+0"),
        ("a.py:raw:raw", ":raw:raw"),
        ("a.py:5-x:raw", ":5-x:raw"),
        ("a.py:1:2", ":1:2"),
        ("a.py:rawx", ":rawx"),
    ],
)
def test_invalid_selectors(entry: str, selector: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_target(entry)
    assert caught.value.code == "invalid_selector"
    assert caught.value.message == INVALID.format(selector)


def test_parse_selector_rejects_non_selectors() -> None:
    assert parse_selector(":abc") is None
    assert parse_selector("5") is None


@pytest.mark.parametrize("url", ["https://example.com/a", "http://localhost:8080/x:5"])
def test_urls_are_refused_with_web_guidance(url: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_target(url)
    assert caught.value.message == f'read does not fetch URLs; use web {{"operation":"open","url":"{url}"}}'


def test_other_schemes_are_unsupported() -> None:
    with pytest.raises(ToolError) as caught:
        parse_target("ftp://host/file")
    assert caught.value.code == "unsupported_target"


def shown_numbers(section_content: str) -> list[int]:
    rows = section_content.split("\n")[1:]
    return [int(r.split(":", 1)[0]) for r in rows if r and r[0].isdigit()]


def test_hashline_section_format() -> None:
    section = render_section("src/a.py", "\ufeffone\r\ntwo  \r\n")
    assert section.content == "[src/a.py#0127]\n1:one\n2:two  "
    assert section.tag == "0127"
    assert section.text == "one\ntwo  \n"
    assert section.shown == (1, 2)
    assert section.next_line is None


@pytest.mark.parametrize(
    ("selector", "first", "last"),
    [
        (Selector(31, 31), 30, 34),
        (Selector(1, 5), 1, 8),
        (Selector(1, 1), 1, 4),
        (Selector(98, 100), 97, 100),
        (Selector(31, 31, raw=True), 31, 31),
    ],
)
def test_bounded_ranges_are_padded_unless_raw(selector: Selector, first: int, last: int) -> None:
    section = render_section("f", numbered(100), selector)
    assert section.shown == tuple(range(first, last + 1))
    assert section.next_line is None
    assert "more lines in file" not in section.content


def test_default_window_is_400_lines_with_continuation_footer() -> None:
    section = render_section("f", numbered(1000))
    assert section.shown == tuple(range(1, 401))
    assert section.content.endswith("\n400:line 400\n\n[600 more lines in file. Use :401 to continue]")
    assert section.next_line == 401


def test_open_selector_window_starts_at_n() -> None:
    section = render_section("f", numbered(1000), Selector(401))
    assert section.shown == tuple(range(401, 801))
    assert section.content.endswith("[200 more lines in file. Use :801 to continue]")


def test_open_read_reaching_eof_has_no_footer() -> None:
    section = render_section("f", numbered(10), Selector(5))
    assert section.content == "[f#" + section.tag + "]\n" + "\n".join(f"{n}:line {n}" for n in range(5, 11))  # type: ignore[operator]


def test_bounded_range_is_capped_at_3000_lines() -> None:
    section = render_section("f", numbered(5000), Selector(1, 4000))
    assert section.shown == tuple(range(1, 3001))
    assert section.content.endswith("[2000 more lines in file. Use :3001 to continue]")


def test_raw_has_no_header_and_no_prefixes_and_no_tag() -> None:
    section = render_section("f", "a\r\nb\n", Selector(raw=True))
    assert section.content == "a\nb"
    assert section.tag is None


def test_raw_open_window_footer() -> None:
    section = render_section("f", numbered(500), Selector(raw=True))
    assert section.content.endswith("line 400\n\n[100 more lines in file. Use :401 to continue]")


def test_long_rows_are_clipped_but_counted_as_seen() -> None:
    section = render_section("f", "x" * 800 + "\nshort\n")
    assert section.content.split("\n")[1] == "1:" + "x" * 768 + "…[+32 chars]"
    assert section.shown == (1, 2)
    assert section.text.startswith("x" * 800)


def test_empty_file() -> None:
    section = render_section("empty.txt", "")
    assert section.content == "[empty.txt#5D05]\n[The file is empty.]"
    assert section.shown == ()


def test_bom_only_file_is_empty() -> None:
    assert render_section("e", "\ufeff").content == "[e#5D05]\n[The file is empty.]"


@pytest.mark.parametrize(
    ("selector", "line"), [(Selector(11), 11), (Selector(20, 30), 20), (Selector(11, raw=True), 11)]
)
def test_start_past_eof_is_an_error(selector: Selector, line: int) -> None:
    with pytest.raises(ToolError) as caught:
        render_section("f", numbered(10), selector)
    assert caught.value.message == (
        f"Line {line} is beyond end of file (10 lines total). Use :1 to read from the start, or :10 to read the last line."
    )


def test_byte_budget_cuts_at_a_row_boundary_with_footer() -> None:
    text = numbered(100)
    section = render_section("f", text, budget=200)
    assert len(section.content.encode()) <= 200
    last = section.shown[-1]
    assert section.content.endswith(
        f"{last}:line {last}\n\n[{100 - last} more lines in file. Use :{last + 1} to continue]"
    )
    assert section.capped


def test_budget_too_small_for_header_is_output_cap() -> None:
    with pytest.raises(ToolError) as caught:
        render_section("f", numbered(3), budget=10)
    assert caught.value.code == "output_cap"


def test_decode_refuses_large_and_non_utf8_files() -> None:
    with pytest.raises(ToolError) as big:
        decode_text(b"a" * (1_048_576 + 1), "big.log")
    assert big.value.message == (
        "big.log is 1048577 bytes; read is limited to 1 MiB files. Use grep, or bash for large files."
    )
    assert decode_text(b"a" * 1_048_576, "ok.log") == "a" * 1_048_576
    with pytest.raises(ToolError) as bad:
        decode_text(b"abc\xff\xfe", "bin.dat")
    assert bad.value.message == "bin.dat is not valid UTF-8 text (first bad byte at offset 3)."


def test_multi_file_sections_and_errors() -> None:
    output = assemble_read(
        [
            ReadEntry("a.txt:1-1", "a.txt", "one\ntwo\n", Selector(1, 1)),
            ReadEntry("missing.txt", error=ToolError("not_found", "File not found: missing.txt")),
            ReadEntry("b.txt:raw", "b.txt", "x\n", Selector(raw=True)),
        ]
    )
    assert output.content == (
        "--- FILE: a.txt:1-1 ---\n[a.txt#0127]\n1:one\n2:two\n\n"
        "--- FILE: missing.txt ---\nERROR: File not found: missing.txt\n\n"
        "--- FILE: b.txt:raw ---\nx"
    )
    assert output.sections[1] is None
    assert output.sections[0] is not None and output.sections[0].shown == (1, 2)


def test_single_entry_failure_is_the_tool_error() -> None:
    error = ToolError("not_found", "File not found: x")
    with pytest.raises(ToolError) as caught:
        assemble_read([ReadEntry("x", error=error)])
    assert caught.value is error


def test_multi_entry_fails_only_when_every_entry_fails() -> None:
    entries = [
        ReadEntry("x", error=ToolError("not_found", "File not found: x")),
        ReadEntry("y", "y", "1\n", Selector(5)),
    ]
    with pytest.raises(ToolError) as caught:
        assemble_read(entries)
    assert caught.value.code == "read_entries_failed"  # not_found and invalid_range: no one code covers both
    assert caught.value.details == {
        "entries": [{"entry": "x", "code": "not_found"}, {"entry": "y", "code": "invalid_range"}]
    }
    assert "--- FILE: x ---\nERROR: File not found: x" in caught.value.message
    assert "--- FILE: y ---\nERROR: Line 5 is beyond end of file" in caught.value.message


def test_output_cap_cuts_a_section_and_refuses_later_entries() -> None:
    big = "".join(f"{'x' * 700} {n}\n" for n in range(1, 3001))
    output = assemble_read(
        [
            ReadEntry("big.txt:1-3000", "big.txt", big, Selector(1, 3000)),
            ReadEntry("small.txt", "small.txt", "s\n"),
        ]
    )
    assert len(output.content.encode()) <= 1_048_576
    first = output.sections[0]
    assert first is not None and first.capped and first.next_line is not None
    assert (
        f"more lines in file. Use :{first.next_line} to continue]\n\n--- FILE: small.txt ---"
        in output.content
    )
    assert output.content.endswith("--- FILE: small.txt ---\nERROR: not read: output cap (1 MiB) reached")
    assert output.sections[1] is None
