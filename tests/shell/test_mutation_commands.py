"""Mutation-testing tests for kvalign/shell/ (commands): expected values come from bash 5.x run
by hand on each fragment (recorded beside the test) or from the bash manual."""

from __future__ import annotations

import pytest

from kvalign.shell import evaluate, is_shell, remote_script, shell_script, shown, unresolved
from kvalign.shell.commands import OPEN, _command_start, session_script
from kvalign.shell.parse import first_error, node_text, parse, same_node


def _words(text: str) -> list[list[str]]:
    return [[shown(w) for w in c.words] for c in evaluate(text).commands]


def test_unresolved_and_shown() -> None:
    marked = unresolved("$X")
    assert marked == "\ue000$X\ue001"
    assert shown(f"a{marked}b{unresolved('')}c") == "a$Xbc"
    assert shown("plain") == "plain"


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("sh", True), ("bash", True), ("dash", True), ("zsh", True), ("ksh", True),
        ("ash", True), ("/bin/bash", True), ("/usr/local/bin/zsh", True),
        ("fish", False), ("bash5", False), ("python", False), ("/bin/", False),
    ],
)  # fmt: skip
def test_is_shell(word: str, expected: bool) -> None:
    assert is_shell(word) is expected


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["vllm", "serve"], 0),
        (["exec", "nohup", "command", "time", "setsid", "sudo", "builtin", "vllm"], 7),
        (["/usr/bin/env", "A=1", "B=2", "vllm"], 3),
        (["A=1", "vllm"], 1),
        # srun: -N and --gpus-per-node take a value, --exclusive and --mpi=pmix do not
        (["srun", "-N", "2", "--exclusive", "--gpus-per-node", "4", "--mpi=pmix", "vllm"], 7),
        (["srun", "-n", "1", "--", "vllm"], 4),  # -- ends srun's options
        (["/opt/slurm/bin/srun", "-J", "x", "-p", "gpu", "vllm"], 5),
        (["srun", "--", "--weird"], 2),
        (["srun"], 1),
        (["sudo", "srun", "-N", "1", "env", "X=1", "vllm"], 6),
        ([], 0),
    ],
)
def test_command_start_skips_wrappers(words: list[str], expected: int) -> None:
    assert _command_start(words) == expected


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # ssh(1): -p -l -i -o -J -F take a value; -t -A -n -x -q do not
        (["ssh", "-p", "22", "-l", "u", "h", "run", "a"], "run a"),
        (["ssh", "-tA", "h", "run"], "run"),
        (["ssh", "-i", "key", "-o", "X=y", "-J", "jump", "h", "run", "-x"], "run -x"),
        (["ssh", "-t", "-n", "-q", "h", "run"], "run"),
        (["ssh", "--", "h", "run", "b"], "run b"),
        (["/usr/bin/ssh", "h", "a", "b", "c"], "a b c"),
        (["nohup", "ssh", "h", "run"], "run"),
        (["ssh", "-p", "22", "h"], None),  # an interactive login
        (["ssh"], None),
        (["ssh", "--"], None),
        (["sshpass", "h", "run"], None),
        ([], None),
    ],
)
def test_remote_script(words: list[str], expected: str | None) -> None:
    assert remote_script(words) == expected


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # tmux(1): new-session's -s -n -c -x -y -t -e -F -f -l -p -L take a value, -d does not
        (["tmux", "new", "-d", "-s", "p", "vllm serve m"], "vllm serve m"),
        (["tmux", "new-session", "-ds", "p", "run"], "run"),  # -ds: value of -s follows
        (["tmux", "neww", "-n", "w", "-c", "/d", "run"], "run"),
        (["tmux", "new-window", "-e", "A=1", "run"], "run"),
        (["tmux", "splitw", "-h", "-p", "50", "run"], "run"),
        (["tmux", "split-window", "-l", "10", "-t", "x", "run"], "run"),
        (["tmux", "new", "-x", "80", "-y", "24", "-F", "f", "-f", "g", "run"], "run"),
        # tmux's own options before the command: -L -S -f -T take a value, -2 -u do not
        (["tmux", "-L", "sock", "-2", "new", "-d", "run"], "run"),
        (["tmux", "-S", "/tmp/s", "-u", "new", "run"], "run"),
        (["tmux", "-f", "conf", "-T", "x", "new", "run"], "run"),
        (["tmux", "new", "--", "run"], "run"),
        (["tmux", "new", "-d", "run", "a b", "c"], "run 'a b' c"),  # argv, quoted back
        (["tmux", "new", "-d"], None),  # an interactive shell
        (["tmux", "attach", "-t", "x"], None),
        (["tmux"], None),
        (["tmux", "-L"], None),
        # screen(1): -S -c -e -h -p -s -T -t take a value, also last in a cluster (-dmS)
        (["screen", "-dmS", "p", "run", "x"], "run x"),
        (["screen", "-d", "-m", "-S", "p", "run"], "run"),
        (["screen", "-L", "-dm", "run"], "run"),
        (["screen", "-c", "rc", "-t", "title", "-h", "100", "run"], "run"),
        (["screen", "-e", "^Aa", "-p", "0", "-s", "sh", "-T", "xterm", "run"], "run"),
        (["screen", "--", "run"], "run"),
        (["screen", "-", "run"], "run"),
        (["screen", "-dmS", "p"], None),
        (["sudo", "screen", "-dm", "run"], "run"),
        (["sudo"], None),
        (["vllm", "serve"], None),
    ],
)
def test_session_script(words: list[str], expected: str | None) -> None:
    assert session_script(words) == expected


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # bash(1): -c anywhere in an option cluster; -o / -O / +o / +O take an argument
        (["sh", "-c", "S"], ("S", [])),
        (["bash", "-xc", "S", "zero", "one", "two"], ("S", ["one", "two"])),
        (["bash", "+x", "-c", "S"], ("S", [])),
        (["bash", "+c", "S"], None),  # +c is no -c
        (["bash", "+O", "extglob", "-c", "S"], ("S", [])),
        (["bash", "-O", "extglob", "-c", "S"], ("S", [])),
        (["bash", "+o", "posix", "-c", "S"], ("S", [])),
        (["bash", "--norc", "--login", "-c", "S"], ("S", [])),
        (["bash", "-c", "--", "S"], ("S", [])),  # bash 5.2 runs S: -- ends the options
        (["bash", "--", "-c", "S"], None),  # bash: "-c: No such file or directory"
        (["bash", "-", "S"], None),
        (["bash", "-cx"], None),  # no script
        (["exec", "bash", "-c", "S", "n"], ("S", [])),
        (["bash", "-o"], None),
        (["bash"], None),
        (["/bin/sh", "-ec", "S", "0", "1"], ("S", ["1"])),
    ],
)
def test_shell_script(words: list[str], expected: tuple[str, list[str]] | None) -> None:
    assert shell_script(words) == expected


def test_a_hole_is_never_split_by_ssh_joining() -> None:
    # the remote command keeps an unknown word whole
    assert OPEN not in (remote_script(["ssh", "h", "run", "x"]) or "")
    assert _words('ssh h "run $(hostname)"\n') == [["run", "$(hostname)"]]


# ---- parsing (kvalign/shell/parse.py) ------------------------------------------------------
def test_unsafe_code_points_are_replaced_before_parsing() -> None:
    tree = parse("run \U00030000 \U0010ffff \U0002ffff\n")
    # planes 3-16 become U+FFFD; plane 2 (U+2FFFF) is kept
    assert node_text(tree.root_node) == "run \ufffd \ufffd \U0002ffff\n"
    assert [shown(w) for w in evaluate("run \U00030000x\n").commands[0].words] == [
        "run",
        "\ufffdx",
    ]


def test_node_text_of_a_node_and_bad_bytes() -> None:
    tree = parse("run a\n")
    command = tree.root_node.named_children[0]
    assert node_text(command) == "run a"
    # a lone surrogate is passed through as bytes and decoded with replacement
    text = node_text(parse("run \udc80\n").root_node)
    assert text.startswith("run ") and "\udc80" not in text


def test_same_node() -> None:
    tree = parse("run a\nrun b\n")
    first, second = tree.root_node.named_children
    assert same_node(first, tree.root_node.named_children[0])
    assert not same_node(first, second)
    assert not same_node(first, None) and not same_node(None, first)
    assert same_node(None, None)
    # same span, other type: the command `run` and its command_name `run`
    command = parse("run\n").root_node.named_children[0]
    name = command.named_children[0]
    assert (command.start_byte, command.end_byte) == (name.start_byte, name.end_byte)
    assert not same_node(command, name)


def test_first_error_line() -> None:
    assert first_error(parse("run a\nrun b\n").root_node) is None
    # an unclosed quote / parenthesis on line 3: the error starts there
    assert first_error(parse("run a\nrun b\nrun 'c\n").root_node) == 3
    assert first_error(parse("run a\nrun b\nrun (\n").root_node) == 3
    assert first_error(parse("run a\n\nrun )\n").root_node) == 3
    assert first_error(parse("x\ny\nrun $((\n").root_node) == 3


def test_a_syntax_error_is_noted_at_its_line() -> None:
    script = evaluate("run a\nrun b\nrun (\n")
    assert (3, "shell syntax not understood here") in script.notes
    assert [shown(w) for w in script.commands[0].words] == ["run", "a"]
