"""README.md documents every CLI command and option the real parser accepts.

The parser is built by ``engine.cli.main.build_parser`` (never copied here), walked
recursively through its subcommands, and each command and option is looked up in
README's "Command line" section: a command must have its own usage line
(``memdeck <command> ...``) and each of its options must appear in that command's
usage lines; the global options (those of the top-level parser) must appear in the
section. A new flag or command without documentation fails this test.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.cli.main import build_parser

README = Path(__file__).resolve().parent.parent / "README.md"


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
    assert match, f'README.md has no "## {title}" section'
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


PARSER = build_parser()
COMMANDS = _commands(PARSER)
GLOBAL_OPTIONS = _options(PARSER)
SECTION = _section(README.read_text(encoding="utf-8"), "Command line")


def test_the_parser_walk_finds_the_known_commands() -> None:
    """Guards the tests below against a walk that finds nothing."""
    names = {" ".join(c.words) for c in COMMANDS}
    assert {"status", "index", "search", "get", "model import", "dream"} <= names
    search = next(c for c in COMMANDS if c.words == ("search",))
    assert {"--max-results", "--explain", "--batch"} <= search.options
    assert {"--workspace", "--config", "--json"} <= GLOBAL_OPTIONS


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c.words))
def test_every_command_and_its_options_are_in_the_readme(command: Command) -> None:
    usage = _usage_blocks(SECTION, command.words)
    name = " ".join(command.words)
    assert usage, f'README "Command line" has no usage line for `memdeck {name}`'
    missing = sorted(
        o for o in command.options - GLOBAL_OPTIONS if not _mentions(usage, o)
    )
    assert not missing, f"`memdeck {name}` options missing from its README usage: {missing}"


@pytest.mark.parametrize("option", sorted(GLOBAL_OPTIONS))
def test_every_global_option_is_in_the_readme(option: str) -> None:
    assert _mentions(SECTION, option), f'global option {option} missing from README "Command line"'


def test_the_check_fails_on_an_undocumented_option() -> None:
    """The lookup is not vacuous: an option absent from the usage is reported."""
    usage = _usage_blocks(SECTION, ("search",))
    assert _mentions(usage, "--max-results")
    assert not _mentions(usage, "--no-such-flag")
    assert not _mentions(usage, "--max")  # a prefix of a documented option is not enough


def test_no_comment_cites_the_out_of_repo_spec() -> None:
    """Design facts live in docs/architecture.md; a citation of the spec (which is not
    in the repository) would point nowhere."""
    root = README.parent
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
