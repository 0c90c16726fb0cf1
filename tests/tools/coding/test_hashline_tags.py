"""The v2 tag algorithm against hashline.md §2's test vectors."""

from __future__ import annotations

import pytest
import xxhash

from fermix_cli.tools.coding.hashline import compute_tag, normalise, normalise_eol, split_rows

VECTORS = [
    ("line one 263\nline two 4471\n", "1D84"),
    ("line one 410\nline two 6970\n", "1D84"),
    ("", "5D05"),
    ("\ufeff", "5D05"),
    ("\n", "D352"),
    ("x = 1  \n", "3DD9"),
    ("x = 1\n", "3DD9"),
    ("\ufeffone\r\ntwo\r\n", "0127"),
    ("one\ntwo\n", "0127"),
    ("a\nb\nc\n", "D988"),
    ("alpha\nbeta\ngamma\n", "B6C1"),
    ("a\nb\n", "9A46"),
    ("a \r\nb\t\r\n", "9A46"),
    ("a\nb", "6540"),
    ("x = 1", "3207"),
    ("one\nTWO\n", "8E53"),
    # the worked examples' files
    ("alpha\nbeta\ngamma\ndelta\nepsilon\n", "FEEF"),
    ("alpha\ndelta\nDELTA-2\nepsilon\nzeta\n", "E0C3"),
    ("one\ntwo\nthree\n", "2543"),
    ("zero\none\ntwo\nthree\n", "4EEA"),
    ("zero\none\ntwo\nTHREE\n", "08C5"),
]


@pytest.mark.parametrize(("text", "tag"), VECTORS)
def test_tag_vectors(text: str, tag: str) -> None:
    assert compute_tag(text) == tag


@pytest.mark.parametrize(("data", "digest"), [(b"", 0x02CC5D05), (b"a", 0x550D7456), (b"abc", 0x32D153FF)])
def test_xxh32_reference_values(data: bytes, digest: int) -> None:
    assert xxhash.xxh32(data, seed=0).intdigest() == digest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a  \nb\t\n", "a\nb\n"),
        ("a \r\n", "a\n"),
        ("lone\rcr", "lone\ncr"),
        ("tail   ", "tail"),
        ("keep  inner\n", "keep  inner\n"),
        ("\ufeffx \n", "x\n"),
    ],
)
def test_normalise_strips_trailing_whitespace_before_newlines_and_at_end(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_normalise_eol_keeps_trailing_whitespace() -> None:
    assert normalise_eol("\ufeffa \r\nb\rc") == "a \nb\nc"


def test_tag_is_four_uppercase_hex_digits_zero_padded() -> None:
    assert compute_tag("a\nb\nc\n") == "D988"
    assert compute_tag("") == "5D05"
    assert compute_tag("one\ntwo\n") == "0127"  # leading zero kept


@pytest.mark.parametrize(
    ("text", "rows"),
    [("", []), ("\n", [""]), ("a\nb\n", ["a", "b"]), ("a\nb", ["a", "b"]), ("a\n\n", ["a", ""])],
)
def test_rows_never_include_the_phantom_element(text: str, rows: list[str]) -> None:
    assert split_rows(text) == rows
