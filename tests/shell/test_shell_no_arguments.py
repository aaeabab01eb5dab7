"""kvalign.shell evaluates a script as bash runs it with no arguments, and the
launch forms kvalign reads from its commands (ssh, srun, Dynamo modules, Justfiles).

Each expected value is what bash itself does, worked out by hand in the comment beside it.
"""

from __future__ import annotations

from kvalign.deploy.cmdline import dynamo_mode, evaluate, launch_arguments
from kvalign.deploy.common import snapshot_hub_id
from kvalign.deploy.justfile import is_justfile, to_shell
from kvalign.deploy.vllm_args import dynamo_worker, serve_arguments
from kvalign.shell import remote_script, shell_script, shown


def _words(text: str) -> list[list[str]]:
    return [[shown(w) for w in c.words] for c in evaluate(text).commands]


def test_no_arguments_count_zero_all_empty_and_defaults_taken() -> None:
    # bash run.sh: $# expands to 0, "$@" to no word at all, ${1:-d} to d
    assert _words('run $# "$@" ${1:-d} ${2-e} end\n') == [["run", "0", "d", "e", "end"]]
    # a bare $1 is the argument the user is to pass: kept as written, not a silent ""
    assert _words("run $1\n") == [["run", "$1"]]


def test_option_loop_runs_zero_times_without_arguments() -> None:
    script = (
        "TP=4\nwhile [[ $# -gt 0 ]]; do\n  case $1 in\n    --tp) TP=$2; shift 2 ;;\n"
        "    *) exit 1 ;;\n  esac\ndone\nrun $TP\n"
    )
    # [[ 0 -gt 0 ]] is false: the body never runs, TP keeps its default
    assert _words(script) == [["run", "4"]]
    # with arguments the script sets itself, the loop runs over them: TP=2
    assert _words("set -- --tp 2\n" + script) == [["run", "2"]]


def test_function_arguments_are_their_own() -> None:
    # inside f, $1 is f's argument and $2 (not passed) is empty, as bash has it
    assert _words("f() { run $1 x$2; }\nf a\n") == [["run", "a", "x"]]


def test_guard_on_the_environment_is_a_precondition_with_a_note() -> None:
    script = '[ -z "$HF_TOKEN" ] && { echo "set HF_TOKEN"; exit 1; }\nrun after\n'
    result = evaluate(script)
    assert [[shown(w) for w in c.words] for c in result.commands][-1] == ["run", "after"]
    assert any("HF_TOKEN" in note and line == 1 for line, note in result.notes)
    # a guard on a variable the script sets is decided: bash exits, nothing after runs
    decided = evaluate('M=x\nif [ "$M" != y ]; then exit 1; fi\nrun after\n')
    assert ["run", "after"] not in [[shown(w) for w in c.words] for c in decided.commands]
    assert not any("precondition" in note for _, note in decided.notes)


def test_usage_guard_on_the_argument_count_goes_on_with_arguments_unknown() -> None:
    script = '[ $# -lt 1 ] && { echo "usage: $0 MODEL"; exit 1; }\nrun "$1"\n'
    result = evaluate(script)
    assert [shown(w) for w in result.commands[-1].words] == ["run", "$1"]
    assert any("arguments" in note for _, note in result.notes)


def test_unquoted_default_with_dashes_is_the_whole_default() -> None:
    assert _words("M=${M:-meta-llama/Llama-3.1-8B-Instruct}\nrun $M\n") == [
        ["run", "meta-llama/Llama-3.1-8B-Instruct"]
    ]


def test_arrays_append_and_expand_word_by_word() -> None:
    script = 'A=(-a "b c")\nA+=(-d)\nrun "${A[@]}" ${#A[@]}\n'
    # "${A[@]}" is one word per item; ${#A[@]} (a length) is not computed: kept as written
    assert _words(script) == [["run", "-a", "b c", "-d", "${#A[@]}"]]


def test_ssh_runs_the_joined_command_remotely_without_local_variables() -> None:
    assert remote_script(["ssh", "-p", "22", "-t", "h", "vllm", "serve", "m"]) == "vllm serve m"
    assert remote_script(["ssh", "h"]) is None  # an interactive login runs nothing here
    assert remote_script(["scp", "a", "h:b"]) is None
    # double quotes expand here, single quotes on the remote host (which has no $TP)
    assert _words("TP=2\nssh h \"run -tp $TP\"\nssh h 'run -tp $TP'\n") == [
        ["run", "-tp", "2"],
        ["run", "-tp", "$TP"],
    ]


def test_srun_options_are_skipped_to_the_command() -> None:
    words = ["srun", "-N", "1", "--gpus-per-node", "4", "--exclusive", "--mpi=pmix"]
    assert shell_script([*words, "bash", "-c", "vllm serve m", "sh", "x"]) == (
        "vllm serve m",
        ["x"],
    )
    assert serve_arguments([*words, "vllm", "serve", "m", "-tp", "4"]) == ["m", "-tp", "4"]


def test_dynamo_launcher_modules_and_role_flags() -> None:
    assert serve_arguments(["python3", "-m", "dynamo.vllm.unified_main", "--model", "m"]) == [
        "--model",
        "m",
    ]
    assert dynamo_worker(["python", "-m", "dynamo.vllm"])
    assert not dynamo_worker(["python", "-m", "dynamo.frontend"])
    assert serve_arguments(["python", "-m", "dynamo.sglang", "--model", "m"]) is None
    assert dynamo_mode(["--is-prefill-worker"]) == "prefill"
    assert dynamo_mode(["--disaggregation-mode", "decode"]) == "decode"
    assert dynamo_mode(["--disaggregation-mode=prefill"]) == "prefill"
    assert dynamo_mode(["--model", "m"]) is None


def test_hf_cache_snapshot_paths_are_their_hub_id() -> None:
    # huggingface_hub's cache: models--{org}--{name}/snapshots/{revision}
    assert (
        snapshot_hub_id("/root/.cache/huggingface/hub/models--Qwen--Qwen3.5-27B/snapshots/abc/")
        == "Qwen/Qwen3.5-27B"
    )
    assert (
        snapshot_hub_id("models--tiiuae--falcon-mamba-7b/snapshots/1") == "tiiuae/falcon-mamba-7b"
    )
    assert snapshot_hub_id("/mnt/models/Qwen3.5-27B") is None
    assert snapshot_hub_id("/hub/models--Qwen--Qwen3.5-27B/blobs/abc") is None


def test_justfile_recipes_become_functions_line_for_line() -> None:
    text = (
        'model := "org/m"\n'  # 1
        "\n"  # 2
        'prefill tp="2":\n'  # 3
        "    @vllm serve {{model}} -tp {{tp}} \\\n"  # 4
        "      --port 8100\n"  # 5
        "decode tp:\n"  # 6
        "    -vllm serve {{ model }} -tp {{tp}}\n"  # 7
    )
    shell = to_shell(text).splitlines()
    # just interpolates first; a parameter with no default is left to the shell, unset
    assert shell[3].strip() == "vllm serve org/m -tp 2 \\"
    assert shell[4].strip() == "--port 8100"
    assert shell[6].strip() == "vllm serve org/m -tp ${tp}"
    commands = evaluate(to_shell(text)).commands
    assert [(c.line, "function prefill" in c.hints) for c in commands] == [(4, True), (7, False)]
    assert [is_justfile(n) for n in ("Justfile", "justfile", "ci.just", "Justfile.md")] == [
        True,
        True,
        True,
        False,
    ]


def test_an_entrypoint_shell_replaces_vllm_serve() -> None:
    # --entrypoint /bin/sh: the vLLM image runs sh -c …, not vllm serve with these words
    script = (
        'docker run --entrypoint /bin/sh vllm/vllm-openai:v0.32.1 -c "curl -sf x"\n'
        "docker run vllm/vllm-openai:v0.32.1 org/m -tp 2\n"
    )
    assert [launch_arguments(c) for c in evaluate(script).commands] == [
        None,
        ["org/m", "-tp", "2"],
    ]
