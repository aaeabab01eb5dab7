"""llm-d-benchmark scenario files: ``LLMDBENCH_*`` shell variables that describe a stack.

An llm-d-benchmark scenario (``scenarios/*.sh``) is a shell file of ``export
LLMDBENCH_…=…`` lines that the benchmark's ``setup/env.sh`` sources before it stands the
stack up; nothing in it runs vLLM itself. The scenario is evaluated as bash runs it
(:mod:`kvalign.shell`, nothing is run), and the pools are read from the variables the
stand-up step hands to the llm-d ModelService chart (``LLMDBENCH_DEPLOY_METHODS``
``modelservice``, the default) or to the standalone vLLM Deployment (``standalone``):

* ``LLMDBENCH_DEPLOY_MODEL_LIST``: the model (comma-separated: one deployment per model);
* per role (``PREFILL`` / ``DECODE``), ``LLMDBENCH_VLLM_MODELSERVICE_<ROLE>_``:
  ``REPLICAS`` (``0``: the role is not deployed; with no prefill the decode pods are an
  aggregated server unless their ``kv_role`` says otherwise), ``TENSOR_PARALLELISM`` and
  ``DATA_PARALLELISM`` (the chart's ``parallelism``), ``MODEL_COMMAND`` (``vllmServe``:
  ``vllm serve MODEL`` plus the extra arguments; ``custom``: the extra arguments are the
  whole command) and ``EXTRA_ARGS``;
* standalone: ``LLMDBENCH_VLLM_STANDALONE_ARGS`` (the command, ``vllm serve …``);
* ``LLMDBENCH_VLLM_COMMON_AFFINITY`` (``LABEL:VALUE``, a GPU node label) pins the GPU.

``EXTRA_ARGS`` / ``STANDALONE_ARGS`` are written as llm-d-benchmark writes them: one
string, optionally in ``[ ]``, words joined by ``____``, and ``REPLACE_ENV_NAME`` replaced
by the value of the variable ``NAME`` (here: the scenario's value, else the default of
``setup/env.sh``, :data:`DEFAULTS`). A value the scenario does not give (``$(mktemp)``
with a here-document written into it, an unset ``REPLACE_ENV_`` variable) is unresolved:
the pool is not evaluated (exit 3), named as written. When ``TENSOR_PARALLELISM`` and the
arguments' ``--tensor-parallel-size`` disagree the pool is not evaluated either (set them
equal). Variables not set fall back to the defaults of llm-d-benchmark's ``setup/env.sh``,
each with a note.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kvalign.deploy import k8s
from kvalign.deploy.common import PoolInput, build_pool, line_of
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, DeploymentKey, Location, Pool, Problem, Role
from kvalign.deploy.vllm_args import parse_vllm_args
from kvalign.errors import KvalignError
from kvalign.numbers import int_problem, quoted, try_int
from kvalign.shell import UNRESOLVED, evaluate, shown, unresolved

KIND = "llm-d-benchmark"
PREFIX = "LLMDBENCH_"
MS = "LLMDBENCH_VLLM_MODELSERVICE_"
#: the word separator and variable marker of llm-d-benchmark's argument strings.
SEPARATOR = "____"
_REPLACE = re.compile(r"REPLACE_ENV_([A-Z0-9]++(?:_[A-Z0-9]++)*+)")
#: an assignment of a scenario variable at the start of a line (what makes a file one).
_SCENARIO = re.compile(r"^[ \t]*+(?:export[ \t]++)?LLMDBENCH_(?:VLLM|DEPLOY)_[A-Z0-9_]*+=", re.M)
#: a command that marks the end of the scenario (its variables are read there).
_END = "__kvalign_llmdbench_scenario_end__"

#: most models one scenario's ``LLMDBENCH_DEPLOY_MODEL_LIST`` may name (counted before
#: the list is split). llm-d-benchmark stands one stack up per model, and scenarios name
#: one to a few; 256 models are at most 512 pools, each loaded and resolved (an unknown
#: model costs a cache lookup), well within the run's pool budget
#: (:data:`kvalign.deploy.MAX_POOLS`). Past it the scenario is not evaluated (exit 3).
MAX_MODELS = 256

#: variables whose default, when used, is noted (the others follow from these).
_NOTED = ("_MODEL_LIST", "_REPLICAS", "_TENSOR_PARALLELISM", "_EXTRA_ARGS", "_STANDALONE_ARGS")
#: the defaults of llm-d-benchmark's ``setup/env.sh`` for the variables read here.
DEFAULTS: Mapping[str, str] = {
    "LLMDBENCH_DEPLOY_MODEL_LIST": "meta-llama/Llama-3.2-1B-Instruct",
    "LLMDBENCH_DEPLOY_METHODS": "modelservice",
    "LLMDBENCH_VLLM_COMMON_REPLICAS": "1",
    "LLMDBENCH_VLLM_COMMON_ACCELERATOR_NR": "1",
    "LLMDBENCH_VLLM_COMMON_MAX_MODEL_LEN": "16384",
    "LLMDBENCH_VLLM_COMMON_BLOCK_SIZE": "64",
    "LLMDBENCH_VLLM_COMMON_INFERENCE_PORT": "8000",
    "LLMDBENCH_VLLM_STANDALONE_ARGS": SEPARATOR.join(
        [
            "vllm",
            "serve",
            "REPLACE_ENV_LLMDBENCH_DEPLOY_CURRENT_MODEL",
            "--max-model-len",
            "REPLACE_ENV_LLMDBENCH_VLLM_COMMON_MAX_MODEL_LEN",
            "--tensor-parallel-size",
            "REPLACE_ENV_LLMDBENCH_VLLM_COMMON_ACCELERATOR_NR",
        ]
    ),
    **{
        f"{MS}{role}_{name}": value
        for role in ("PREFILL", "DECODE")
        for name, value in (
            ("REPLICAS", "REPLACE_ENV_LLMDBENCH_VLLM_COMMON_REPLICAS"),
            ("ACCELERATOR_NR", "REPLACE_ENV_LLMDBENCH_VLLM_COMMON_ACCELERATOR_NR"),
            ("TENSOR_PARALLELISM", "1"),
            ("DATA_PARALLELISM", "1"),
            ("MODEL_COMMAND", "vllmServe"),
            (
                "EXTRA_ARGS",
                "["
                + SEPARATOR.join(
                    [
                        "--disable-log-requests",
                        "--max-model-len",
                        "REPLACE_ENV_LLMDBENCH_VLLM_COMMON_MAX_MODEL_LEN",
                        "--tensor-parallel-size",
                        f"REPLACE_ENV_{MS}{role}_ACCELERATOR_NR",
                    ]
                )
                + "]",
            ),
        )
    },
}


def matches(text: str) -> bool:
    """Whether ``text`` assigns llm-d-benchmark scenario variables (``LLMDBENCH_VLLM_…=``
    or ``LLMDBENCH_DEPLOY_…=`` at the start of a line)."""
    return _SCENARIO.search(text) is not None


def _variables(text: str) -> tuple[list[dict[str, str]], list[tuple[int, str]]]:
    """The scenario's ``LLMDBENCH_*`` variables at its end, one mapping per evaluation
    path (``if`` / ``case`` alternatives), and the shell's notes."""
    script = evaluate(f"{text}\n{_END}\n")
    paths: list[dict[str, str]] = []
    for command in script.commands:
        if command.words[:1] == (_END,):
            found = {**command.variables, **command.env}
            values = {k: v for k, v in found.items() if k.startswith(PREFIX)}
            if values not in paths:
                paths.append(values)
    return paths, script.notes


class _Values:
    """The scenario's variables with :data:`DEFAULTS` under them; remembers which
    defaults were used (each becomes a note)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = values
        self.defaulted: list[str] = []

    def get(self, name: str, depth: int = 0) -> str | None:
        """The value of ``name`` with its ``REPLACE_ENV_`` references replaced (``None``:
        neither the scenario nor :data:`DEFAULTS` sets it)."""
        if name in self.values:
            raw = self.values[name]
        elif name in DEFAULTS:
            raw = DEFAULTS[name]
            if name not in self.defaulted:
                self.defaulted.append(name)
        else:
            return None
        return self.replace(raw, depth)

    def replace(self, text: str, depth: int = 0) -> str:
        """``REPLACE_ENV_NAME`` → the value of ``NAME``; an unknown one stays, marked
        unresolved (:func:`kvalign.shell.unresolved`)."""

        def value(match: re.Match[str]) -> str:
            known = self.get(match.group(1), depth + 1) if depth < 8 else None
            return known if known is not None else unresolved(match.group(0))

        return _REPLACE.sub(value, text)


def words(value: str) -> list[str]:
    """An llm-d-benchmark argument string as words: the surrounding ``[ ]`` dropped, split
    at ``____``, each word stripped of blanks and of one pair of matching quotes
    (``'{"kv_connector":…}'`` is the JSON value)."""
    body = value.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    out: list[str] = []
    for word in body.split(SEPARATOR):
        word = word.strip()
        if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
            word = word[1:-1]
        if word:
            out.append(word)
    return out


def _after_serve(command: list[str]) -> list[str] | None:
    """The words after ``vllm serve`` in a whole command (``None``: it runs no
    ``vllm serve``)."""
    for i in range(len(command) - 1):
        if command[i].rsplit("/", 1)[-1] == "vllm" and command[i + 1] == "serve":
            return command[i + 2 :]
    return None


def _tp_flag(args: list[str]) -> int | None:
    """The ``--tensor-parallel-size`` the arguments give vLLM (``None``: none, or not a
    number)."""
    try:
        return parse_vllm_args(args).tensor_parallel_size
    except KvalignError:
        return None


def _int(text: str | None) -> int | None:
    """``text`` as a whole number (ASCII digits, :func:`kvalign.numbers.try_int`), else
    ``None``."""
    return None if text is None else try_int(text.strip())


def _count(
    known: _Values, name: str, role: str, source: Source, problems: list[Problem]
) -> int | None:
    """The whole number the variable ``name`` holds (``None``: not set, empty, or
    unresolved, which other checks name). A value that is text but no number (``²``,
    ``two``, ``-1``) adds one blocking problem naming the variable and returns ``None``."""
    raw = known.get(name)
    if raw is None or not raw.strip() or UNRESOLVED.search(raw):
        return None
    number = _int(raw)
    if number is None:
        problem = int_problem(raw.strip()) or "not a whole number"
        problems.append(
            Problem(
                _where(source, name),
                f"{role}: {name}: {quoted(shown(raw))} is not an integer ({problem})",
            )
        )
    return number


def read(source: Source) -> Deployment:
    """One pool per deployed role (see the module docstring), per model of the list."""
    pools: list[Pool] = []
    problems: list[Problem] = []
    paths, notes = _variables(source.text)
    problems += [
        Problem(Location(source.file, line), f"scenario: {text}", blocking=False)
        for line, text in notes
    ]
    launches = 0
    if not paths:  # every path ends (exit, exec) before the scenario's last line
        problems.append(
            Problem(
                Location(source.file, 1),
                "scenario: every path through the file ends before its last line (exit / "
                "exec), so the variables it leaves to llm-d-benchmark are not known",
            )
        )
    seen: dict[tuple[str, str, str], list[Pool]] = {}  # pools read, by model/role/name
    for values in paths:
        known = _Values(values)
        listed = known.get("LLMDBENCH_DEPLOY_MODEL_LIST") or ""
        if listed.count(",") >= MAX_MODELS:  # counted before the list is split
            problems.append(
                Problem(
                    _where(source, "LLMDBENCH_DEPLOY_MODEL_LIST"),
                    f"scenario: LLMDBENCH_DEPLOY_MODEL_LIST names {listed.count(',') + 1:,} "
                    f"models, more than {MAX_MODELS:,} (budget: models per scenario)",
                )
            )
            continue
        models = [m.strip() for m in listed.split(",")]
        methods = known.get("LLMDBENCH_DEPLOY_METHODS") or ""
        for model in [m for m in models if m]:
            known = _Values({**values, "LLMDBENCH_DEPLOY_CURRENT_MODEL": model})
            key = DeploymentKey("llm-d-benchmark scenario", model, single_object=True)
            found: list[PoolInput | Problem] = []
            if "modelservice" in methods:
                found += _modelservice(known, model, key, source)
            if "standalone" in methods:
                found += _standalone(known, model, key, source)
            for item in found:
                if isinstance(item, Problem):
                    problems.append(item)
                    continue
                launches += 1
                pool, pool_problems = build_pool(item)
                problems += pool_problems
                if pool is None:
                    continue
                bucket = seen.setdefault((pool.model, pool.role, pool.name), [])
                if all(p != pool for p in bucket):  # once, however many paths give it
                    bucket.append(pool)
                    pools.append(pool)
            used = ", ".join(
                n for n in known.defaulted if n.endswith(_NOTED) and "_COMMON_" not in n
            )
            if used:
                problems.append(
                    Problem(
                        Location(source.file, 1),
                        f"scenario: not set, llm-d-benchmark's defaults (setup/env.sh) "
                        f"assumed for {used}",
                        blocking=False,
                    )
                )
    return Deployment(
        source=source.file, kind=KIND, pools=tuple(pools),
        problems=tuple(dict.fromkeys(problems)), launches=launches,
    )  # fmt: skip


def _where(source: Source, *names: str) -> Location:
    """The line of the first of ``names`` the scenario assigns (else line 1)."""
    for name in names:
        line = line_of(source.text, f"{name}=")
        if line is not None:
            return Location(source.file, line)
    return Location(source.file, 1)


def _gpu(known: _Values, name: str, where: Location, problems: list[Problem]) -> str | None:
    """The GPU ``LLMDBENCH_VLLM_COMMON_AFFINITY`` (``LABEL:VALUE``) pins, if any."""
    affinity = known.values.get("LLMDBENCH_VLLM_COMMON_AFFINITY", "")
    label, _, value = affinity.partition(":")
    if not value or UNRESOLVED.search(affinity):
        return None
    return k8s.gpu_of(problems, {"nodeSelector": {label: value}}, name, where)


def _modelservice(
    known: _Values, model: str, key: DeploymentKey, source: Source
) -> list[PoolInput | Problem]:
    """The prefill and decode pools the ModelService chart is given."""
    out: list[PoolInput | Problem] = []
    numbers: list[Problem] = []
    replicas = {
        r: _count(known, f"{MS}{r}_REPLICAS", r.lower(), source, numbers)
        for r in ("PREFILL", "DECODE")
    }
    if numbers:  # which roles are deployed is not known
        return [*numbers]
    role: Role
    for role in ("prefill", "decode"):
        upper = role.upper()
        if replicas[upper] == 0:
            continue
        where = _where(
            source, f"{MS}{upper}_EXTRA_ARGS", f"{MS}{upper}_TENSOR_PARALLELISM",
            "LLMDBENCH_DEPLOY_MODEL_LIST",
        )  # fmt: skip
        raw = known.get(f"{MS}{upper}_EXTRA_ARGS") or ""
        command = known.get(f"{MS}{upper}_MODEL_COMMAND") or "vllmServe"
        args = words(raw)
        if command == "custom":
            served = _after_serve(args)
            if served is None:
                out.append(
                    Problem(
                        where,
                        f"{role}: {MS}{upper}_MODEL_COMMAND is custom and {MS}{upper}_"
                        f"EXTRA_ARGS ({shown(raw)[:80]}) holds no vllm serve command "
                        "kvalign can read (a command written to a temporary file is not "
                        "read): write it in the scenario as [vllm____serve____MODEL____…]",
                    )
                )
                continue
            args = served
        else:
            args = [model, *args]
        tp = _count(known, f"{MS}{upper}_TENSOR_PARALLELISM", role, source, numbers)
        dp = _count(known, f"{MS}{upper}_DATA_PARALLELISM", role, source, numbers)
        if numbers:
            out += numbers
            numbers = []
            continue
        flag = _tp_flag(args)
        if tp is not None and flag is not None and flag != tp:
            out.append(
                Problem(
                    where,
                    f"{role}: {MS}{upper}_TENSOR_PARALLELISM is {tp} but its EXTRA_ARGS give "
                    f"vLLM --tensor-parallel-size {flag}: set them equal",
                )
            )
            continue
        decode_only = role == "decode" and replicas["PREFILL"] == 0
        problems: list[Problem] = []
        gpu = _gpu(known, role, where, problems)
        out += problems
        out.append(
            PoolInput(
                role=None if decode_only else role,
                role_source="field",
                name=role,
                name_hint="modelservice" if decode_only else role,
                args=args,
                location=where,
                env={},
                model=model if command != "custom" else None,
                tp=tp if flag is None else None,
                dp=dp,
                deployment_key=key,
                gpu=gpu,
            )
        )
    return out


def _standalone(
    known: _Values, model: str, key: DeploymentKey, source: Source
) -> list[PoolInput | Problem]:
    """The standalone vLLM server (an aggregated server unless its arguments name a
    ``kv_role``)."""
    where = _where(source, "LLMDBENCH_VLLM_STANDALONE_ARGS", "LLMDBENCH_DEPLOY_METHODS")
    raw = known.get("LLMDBENCH_VLLM_STANDALONE_ARGS") or ""
    served = _after_serve([w for w in words(raw) if w != ";"])
    if served is None:
        return [
            Problem(
                where,
                f"standalone: LLMDBENCH_VLLM_STANDALONE_ARGS ({shown(raw)[:80]}) holds no "
                "vllm serve command kvalign can read",
            )
        ]
    problems: list[Problem] = []
    gpu = _gpu(known, "standalone", where, problems)
    return [
        *problems,
        PoolInput(
            role=None, role_source="args", name="standalone", name_hint="standalone",
            args=served, location=where, env={}, deployment_key=key, gpu=gpu,
        ),
    ]  # fmt: skip


class Reader:
    """llm-d-benchmark scenario files as a :class:`~kvalign.deploy.interface.Reader`."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """A file that is not YAML and assigns llm-d-benchmark scenario variables."""
        return not source.is_yaml and matches(source.text)

    def read(self, source: Source) -> Deployment:
        """:func:`read`."""
        return read(source)
