"""decoding.py: a source file's declared encoding, read as Python reads it, or a named error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qnn_migrate.codemods.decoding import SourceDecodeError, declared_encoding, decode_source

CALL = "to_edge_transform_and_lower_to_qnn(m, i, s)\n"
# Codecs Python knows that turn bytes into bytes: a cookie naming one used to escape as a
# LookupError from bytes.decode.
BYTES_CODECS = ["rot13", "hex", "zlib", "base64", "uu", "bz2", "quopri"]


@pytest.mark.parametrize("codec", BYTES_CODECS)
@pytest.mark.parametrize("line", [1, 2])
def test_a_bytes_to_bytes_codec_is_named_not_a_text_encoding(codec: str, line: int) -> None:
    head = "#!/usr/bin/env python\n" if line == 2 else ""
    data = f"{head}# -*- coding: {codec} -*-\n{CALL}".encode()
    with pytest.raises(SourceDecodeError) as caught:
        decode_source(data)
    assert str(caught.value).startswith(
        f"cannot be processed: declares encoding {codec}, which is not a text encoding; "
        "save it as UTF-8"
    )
    assert caught.value.line == line


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"# coding: no-such-codec\n" + CALL.encode(), "declares encoding no-such-codec, which "),
        (b"# coding: punycode\nx = 1\n", "is not valid punycode ("),  # a plain UnicodeError
        (b"# coding: unicode_escape\nx = '\\n'\n", "does not give the file's bytes back"),
        (b"# coding: utf-16\nx = 12\n", "does not give the file's bytes back"),
        (b"\n\nx = '\xe9'\n", "is not valid utf-8 (byte 7: invalid continuation byte)"),
        (b"# coding: latin-1\nx = '\xe9\n", None),
    ],
)
def test_every_failure_is_a_named_error(data: bytes, message: str | None) -> None:
    if message is None:
        assert decode_source(data) == ("# coding: latin-1\nx = '\xe9\n", "iso-8859-1")
        return
    with pytest.raises(SourceDecodeError, match=r"save it as UTF-8") as caught:
        decode_source(data)
    assert message in str(caught.value)


def test_text_encodings_and_the_bom_still_decode() -> None:
    assert decode_source(b"\xef\xbb\xbfx = 1\n") == ("x = 1\n", "utf-8-sig")
    assert decode_source("# coding: cp1252\nx = '€'\n".encode("cp1252"))[1] == "cp1252"
    assert decode_source(b"x = 1\n") == ("x = 1\n", "utf-8")


def test_the_declaration_counts_on_line_one_or_two_only() -> None:
    assert declared_encoding(b"# coding: rot13\n") == ("rot13", 1)
    assert declared_encoding(b"#!python\n# vim: set fileencoding=hex :\n") == ("hex", 2)
    assert declared_encoding(b"x = 1\n# coding: rot13\n") is None
    assert declared_encoding(b"\n\n# coding: rot13\n") is None
    # Control: a cookie Python ignores (line 3) leaves the file UTF-8.
    assert decode_source(b"\n\n# coding: rot13\nx = 1\n")[1] == "utf-8"


def test_every_codec_python_knows_is_decoded_or_named() -> None:
    """Each codec name Python has, declared: text, or a SourceDecodeError; never another
    exception (a LookupError, TypeError or plain UnicodeError used to escape)."""
    import encodings.aliases

    names = sorted(set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values()))
    assert len(names) > 300
    outcomes = {"text": 0, "named": 0}
    for name in names:
        data = f"# -*- coding: {name} -*-\n{CALL}".encode()
        try:
            decode_source(data)
        except SourceDecodeError as error:
            assert "save it as UTF-8" in str(error)
            outcomes["named"] += 1
        else:
            outcomes["text"] += 1
    assert outcomes["text"] > 100 and outcomes["named"] > 10  # both kinds are exercised


@given(
    name=st.text(st.characters(codec="ascii", exclude_characters="\n\r"), max_size=20),
    body=st.binary(max_size=64),
)
def test_any_declaration_and_bytes_give_text_or_a_named_error(name: str, body: bytes) -> None:
    data = f"# coding: {name}\n".encode() + body
    try:
        text, encoding = decode_source(data)
    except SourceDecodeError as error:
        assert str(error) and error.line in (1, 2)
    else:
        assert text.encode(encoding) == data
