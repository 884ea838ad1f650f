"""docs/cli.md documents every CLI command and option the real parser accepts, and no other.

The parser is built by ``engine.cli.main.build_parser`` (never copied here), walked
recursively through its subcommands, and each command and option is looked up in
the "Commands" section of docs/cli.md: a command must have its own usage line
(``memdeck <command> ...``) and each of its options must appear in that command's
usage lines; the global options (those of the top-level parser) must appear in the
section. A new flag or command without documentation fails this test. The other way
round, every usage line must name a real command, and every option written in a
command's usage lines must be one of that command's options or a global one: a
renamed or removed flag that the page still shows fails too.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
CLI_DOC = ROOT / "docs" / "cli.md"


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]  # ("model", "import")
    options: frozenset[str]  # every option string, e.g. "--max-results", "-q"


def _options(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(
        option
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        for option in action.option_strings
    )


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[Command]:
    out: list[Command] = []
    for name, sub in _subparsers(parser).items():
        words = (*prefix, name)
        children = _subparsers(sub)
        if children:
            out.extend(_commands(sub, words))
        else:
            out.append(Command(words, _options(sub)))
    return out


def _section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, f'docs/cli.md has no "## {title}" section'
    return match.group(1)


def _usage_blocks(section: str, words: tuple[str, ...]) -> str:
    """The usage lines of one command: each line starting ``memdeck <words>`` and the
    indented continuation lines under it, up to the next ``memdeck`` line."""
    head = re.compile(r"^memdeck " + r"\s+".join(map(re.escape, words)) + r"(?![\w-])")
    blocks: list[str] = []
    current: list[str] | None = None
    for line in section.splitlines():
        if line.startswith("memdeck"):
            current = [line] if head.match(line) else None
            if current is not None:
                blocks.append("")
        elif current is not None and line[:1].isspace():
            current.append(line)
        else:
            current = None
        if current is not None:
            blocks[-1] = "\n".join(current)
    return "\n".join(blocks)


def _mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


_WORD = re.compile(r"[a-z][a-z-]*")
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def _documented(section: str) -> list[tuple[tuple[str, ...], frozenset[str]]]:
    """Each usage line of the section as (command words, options written in it and in
    its indented continuation lines). The words are the lower-case tokens right after
    ``memdeck`` (``memdeck model import [DIR]`` → ("model", "import"); ``memdeck
    [PATH]`` → (), the app itself). A blank or unindented line ends a usage block."""
    out: list[tuple[tuple[str, ...], list[str]]] = []
    open_block = False
    for line in section.splitlines():
        if line.startswith("memdeck"):
            words: list[str] = []
            for token in line.split()[1:]:
                if not _WORD.fullmatch(token):
                    break
                words.append(token)
            out.append((tuple(words), _OPTION.findall(line)))
            open_block = True
        elif open_block and line[:1].isspace() and line.strip():
            out[-1][1].extend(_OPTION.findall(line))
        else:
            open_block = False
    return [(words, frozenset(options)) for words, options in out]


def _unknown(section: str) -> list[str]:
    """What the section documents that the parser does not have."""
    known = {c.words: c.options for c in COMMANDS}
    problems: list[str] = []
    for words, options in _documented(section):
        name = " ".join(("memdeck", *words))
        if words and words not in known:
            problems.append(f"`{name}` is not a command")
            continue
        allowed = GLOBAL_OPTIONS | known.get(words, frozenset())
        problems.extend(f"`{name}` has no option {o}" for o in sorted(options - allowed))
    return problems


PARSER = build_parser()
COMMANDS = _commands(PARSER)
GLOBAL_OPTIONS = _options(PARSER)
SECTION = _section(CLI_DOC.read_text(encoding="utf-8"), "Commands")


def test_the_parser_walk_finds_the_known_commands() -> None:
    """Guards the tests below against a walk that finds nothing."""
    names = {" ".join(c.words) for c in COMMANDS}
    assert {"status", "index", "search", "get", "model import", "dream"} <= names
    search = next(c for c in COMMANDS if c.words == ("search",))
    assert {"--max-results", "--explain", "--batch"} <= search.options
    assert {"--workspace", "--config", "--json"} <= GLOBAL_OPTIONS


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c.words))
def test_every_command_and_its_options_are_documented(command: Command) -> None:
    usage = _usage_blocks(SECTION, command.words)
    name = " ".join(command.words)
    assert usage, f'docs/cli.md "Commands" has no usage line for `memdeck {name}`'
    missing = sorted(o for o in command.options - GLOBAL_OPTIONS if not _mentions(usage, o))
    assert not missing, f"`memdeck {name}` options missing from its usage in docs/cli.md: {missing}"


@pytest.mark.parametrize("option", sorted(GLOBAL_OPTIONS))
def test_every_global_option_is_documented(option: str) -> None:
    assert _mentions(SECTION, option), f'global option {option} missing from docs/cli.md "Commands"'


def test_the_check_fails_on_an_undocumented_option() -> None:
    """The lookup is not vacuous: an option absent from the usage is reported."""
    usage = _usage_blocks(SECTION, ("search",))
    assert _mentions(usage, "--max-results")
    assert not _mentions(usage, "--no-such-flag")
    assert not _mentions(usage, "--max")  # a prefix of a documented option is not enough


def test_every_documented_command_and_option_is_real() -> None:
    assert not _unknown(SECTION), _unknown(SECTION)


def test_the_reverse_check_fails_on_a_made_up_command_or_option() -> None:
    """The reverse lookup is not vacuous either."""
    assert _documented(SECTION), "no usage lines found"
    fake = (
        "memdeck search QUERY [--max-results N] [--no-such-flag]\n"
        "                     [--fusion calibrated] [--also-fake]\n"
        "memdeck staus [--json]\n"
        "memdeck get PATH [--from N]\n"
        "                                    a page; --explain is not get's\n"
    )
    assert _unknown(fake) == [
        "`memdeck search` has no option --also-fake",
        "`memdeck search` has no option --no-such-flag",
        "`memdeck staus` is not a command",
        "`memdeck get` has no option --explain",
    ]


def test_no_comment_cites_the_out_of_repo_spec() -> None:
    """Design facts live in docs/architecture.md; a citation of the spec (which is not
    in the repository) would point nowhere."""
    root = ROOT
    marker = "SPEC" + " §"  # split so this file does not match itself
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for top in ("engine", "tui", "tests", "scripts")
        for path in sorted((root / top).rglob("*"))
        if path.suffix in {".py", ".sh"} and path.is_file()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if marker in line
    ]
    assert not offenders, f"cite docs/architecture.md instead: {offenders}"
