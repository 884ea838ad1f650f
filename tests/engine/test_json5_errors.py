"""JSON5 syntax errors name the character at fault: its line and column, the character
itself on one line (a line break is named, never printed), and a caret under it.

json5 reports one column past the character at fault where an object key was expected
(its Unicode identifier rules read one character ahead); these files pin the
positions memdeck prints instead, checked against the text itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config.reader import ConfigError, read_json5

CASES = [
    # text, line, column, what is named
    ("{ a: 1,, }", 1, 8, 'unexpected ","'),
    ('{"a": 1,,"b": 2}', 1, 9, 'unexpected ","'),
    ('{\n  "a": 1,\n  "b": 2,,\n}\n', 3, 10, 'unexpected ","'),
    ("{,}", 1, 2, 'unexpected ","'),
    ("{ : 1 }", 1, 3, 'unexpected ":"'),
    ("{ a,: 1 }", 1, 4, 'unexpected "," after "a"'),
    ("{\n  a: 1\n  b: 2\n}\n", 3, 3, 'unexpected "b"'),
    ("{\r\n  a: 1\r\n  b: 2\r\n}\r\n", 3, 3, 'unexpected "b"'),
    ("{\n\ta: @\n}\n", 2, 5, 'unexpected "@"'),
    ("{ a: 1 }}", 1, 9, 'unexpected "}"'),
    ("{ a: 1 } x", 1, 10, 'unexpected "x"'),
    ("{ é: 1, ü: x }", 1, 12, 'unexpected "x"'),
    ("{ a: tru }", 1, 9, 'unexpected space after "tru"'),
    (
        '{\n  a: "unterminated\n}\n',
        2,
        19,
        "unexpected line break inside a string (a string ends on its line)",
    ),
    ("{ a: 1e }", 1, 6, "'1e' is not a number"),
    ("{ theme: ", 1, 10, "unexpected end of input"),
]


@pytest.mark.parametrize(("text", "line", "column", "what"), CASES)
def test_syntax_error_names_the_character_at_fault(
    tmp_path: Path, text: str, line: int, column: int, what: str
) -> None:
    path = tmp_path / "openclaw.json"
    path.write_bytes(text.encode("utf-8"))
    with pytest.raises(ConfigError) as info:
        read_json5(path)
    message = str(info.value)
    first, *excerpt = message.split("\n")
    assert first == f"{path}: JSON5 syntax error at line {line}, column {column}: {what}"
    source = text.split("\n")[line - 1].removesuffix("\r")
    if source.strip():
        shown, caret = excerpt
        assert shown == "    " + source.replace("\t", " ")
        assert caret == "    " + " " * (column - 1) + "^"
        if column <= len(source) and "not a number" not in what:
            named = source[column - 1]
            assert what.startswith(f'unexpected "{named}"') or named in " \t", (named, what)
    else:
        assert excerpt == []


def test_control_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{ a: "bell\x07" @,\u2028 }', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_json5(path)
    message = str(info.value)
    assert "\x07" not in message and "\u2028" not in message
    assert 'line 1, column 14: unexpected "@"' in message
    assert '    { a: "bell?" @,? }\n' + " " * 17 + "^" in message
