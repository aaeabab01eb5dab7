"""Hostile chart and kustomize folders against the renderers kvalign starts (issue #31).

A repository under audit must never run code, reach the network or write outside
``--output`` through ``helm template`` / ``kustomize build`` / ``kubectl kustomize``:

- a folder name is never read as an option (every path is absolute and after ``--``;
  the options are :data:`kvalign.deploy.render.OPTIONS`), with the real kubectl: a folder
  named ``--enable-alpha-plugins`` next to a container function never starts ``docker``;
- a remote reference in any YAML form (flow list, tag, folded scalar, patch path, JSON,
  ``git::``, deeper than the walk) refuses the root before any renderer starts;
- the renderer sees none of kvalign's environment, is stopped (its whole process group)
  at the time limit even when a grandchild holds its output open, and its output is
  capped and must be UTF-8;
- every file a renderer reads is an input of the run (``--output`` refuses it), and a
  ``# Source:`` path out of the chart is never a finding's location.

kubectl is real here (the Debian package; ``.ci/run`` installs it, and with ``CI`` set a
missing kubectl fails these tests instead of skipping them); helm cannot be installed, so
it is a stand-in script that records its argument vector.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kvalign.cli.app import app  # the typer app (robust to import order)
from kvalign.deploy import kustomize
from kvalign.deploy import render as render_module
from kvalign.deploy.render import OPTIONS, command, environment, release, render

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "renderers"
SPLIT_GOOD = ROOT / "configs" / "deployments" / "kubernetes" / "split-good"
runner = CliRunner()

#: folder names that are kubectl kustomize / helm template options
OPTION_NAMES = (
    "--enable-alpha-plugins",
    "--load-restrictor=LoadRestrictionsNone",
    "--enable-helm",
    "--output=x",
    "--enable-exec",
)
#: what a renderer is started with besides paths: subcommands and OPTIONS
OWN_WORDS = frozenset({"template", "build", "kustomize"}) | OPTIONS


def _kubectl() -> str:
    """The real kubectl; with CI set, its absence fails the test instead of skipping."""
    found = shutil.which("kubectl")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is not on PATH (CI is set: .ci/run installs it)")
        pytest.skip("kubectl not on PATH")
    return found


def _tool(folder: Path, name: str, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _recorder(folder: Path, name: str, log: Path, output: str = "") -> Path:
    """A stand-in ``name`` that appends its argv (JSON, one line) to ``log`` and prints
    ``output``."""
    return _tool(
        folder, name,
        f"#!{sys.executable}\nimport json, sys\n"
        f"with open({str(log)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv) + '\\n')\n"
        f"sys.stdout.write({output!r})\n",
    )  # fmt: skip


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        os.fsdecode(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in folder.rglob("*")
    }


def _assert_no_option_from_input(argv: list[str]) -> None:
    """Every argument after the program that kvalign did not write itself is after
    ``--`` or an absolute path: nothing taken from the tree can parse as an option."""
    assert "--" in argv, argv
    dash = argv.index("--")
    for word in argv[1:dash]:
        assert word in OWN_WORDS or word.startswith("/"), argv
    for word in argv[dash + 1 :]:
        assert word.startswith("/") or re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", word), argv


# ---- folder names as options, with the real kubectl ---------------------------------


def test_option_named_folders_never_reach_kubectl_as_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubectl = _kubectl()
    bin_dir = tmp_path / "bin"
    ran = tmp_path / "docker.ran"
    _tool(bin_dir, "docker", f'#!/bin/sh\necho "$*" >> {ran}\nexit 1\n')
    _tool(bin_dir, "helm", f'#!/bin/sh\necho "helm $*" >> {ran}\nexit 1\n')
    (bin_dir / "kubectl").symlink_to(kubectl)
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(FIXTURES / "plugins.yaml", repo / "kustomization.yaml")
    shutil.copy(FIXTURES / "function.yaml", repo / "function.yaml")
    for name in OPTION_NAMES:
        (repo / name).mkdir()
        (repo / name / "kustomization.yaml").write_text("resources: []\n")
    (repo / "--enable-helm-empty").mkdir()  # an empty folder: no root
    before = _snapshot(repo)
    monkeypatch.chdir(repo)  # `kvalign audit .`: the roots are named `--enable-helm`, …
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", "."], env=env)
    assert not ran.exists(), ran.read_text()  # docker (and helm) never started
    assert _snapshot(repo) == before  # nothing written into the tree (--output=x)
    assert result.exit_code == 3, result.stdout
    # the repository's own root is refused by kubectl (plugins are off), by its path
    assert f"`kubectl kustomize -- {repo}` exited 1" in result.stdout
    assert "external plugins disabled" in result.stdout


_NAMES = st.one_of(
    st.sampled_from(["-x", "--x=y", "--post-renderer=sh", "-f", "a b", "a\nb", "--", "-"]),
    st.text(
        st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
        min_size=1,
        max_size=24,
    ),
).filter(lambda s: s not in (".", "..") and len(os.fsencode(s)) < 200)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=_NAMES, values=_NAMES)
def test_no_input_derived_argument_can_be_read_as_an_option(name: str, values: str) -> None:
    """For every renderer kvalign starts (helm, kustomize, kubectl: recording stand-ins),
    with folder and values-file names that look like options, hold blanks or newlines."""
    with tempfile.TemporaryDirectory() as top:
        tmp = Path(top)
        log = tmp / "argv.log"
        bin_dir = tmp / "bin"
        for tool in ("helm", "kustomize", "kubectl"):
            _recorder(bin_dir, tool, log)
        tree = tmp / "tree"
        chart = tree / name
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n")
        values_file = tree / f"values{values}.yaml"
        values_file.write_text("tp: 2\n")
        kust = tmp / "k" / name
        kust.mkdir(parents=True)
        (kust / "kustomization.yaml").write_text("resources: []\n")
        old_cwd, old_path = os.getcwd(), os.environ.get("PATH", "")
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
        try:
            os.chdir(tree)  # the roots as relative names: `-x`, `--x=y`, …
            for root, file in ((Path(name), None), (Path(name), Path(values_file.name))):
                _, problem = render(root, file)
                assert problem is None, problem
            os.chdir(tmp / "k")
            assert render(Path(name)) == ("", None)
            (bin_dir / "kustomize").unlink()  # then kubectl renders
            assert render(Path(name)) == ("", None)
        finally:
            os.chdir(old_cwd)
            os.environ["PATH"] = old_path
        calls = _calls(log)
        assert [Path(c[0]).name for c in calls] == ["helm", "helm", "kustomize", "kubectl"]
        for argv in calls:
            _assert_no_option_from_input(argv)
        assert calls[1][2] == "--values"  # kvalign's own copy, not a path from the tree
        assert not calls[1][3].startswith(str(tmp)) and calls[1][3].startswith("/")


def test_the_options_kvalign_passes(tmp_path: Path) -> None:
    # the allow-list, and every command built from it (a folder named like an option)
    assert frozenset({"--values", "--"}) == OPTIONS
    every = {"helm": "/h/helm", "kustomize": "/k/kustomize", "kubectl": "/k/kubectl"}.get
    chart = tmp_path / "--post-renderer=x"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("name: x\n")
    values = tmp_path / "values--kube-context=prod.yaml"
    assert command(chart, every, values) == [
        "/h/helm", "template", "--values", str(values), "--",
        "post-renderer-x-values--kube-context-prod", str(chart),
    ]  # fmt: skip
    kust = tmp_path / "--enable-helm"
    kust.mkdir()
    (kust / "kustomization.yaml").write_text("")
    assert command(kust, every) == ["/k/kustomize", "build", "--", str(kust)]
    assert command(kust, {"kubectl": "/k/kubectl"}.get) == [
        "/k/kubectl",
        "kustomize",
        "--",
        str(kust),
    ]


@given(st.text(max_size=80), st.one_of(st.none(), st.text(max_size=40)))
def test_a_release_name_is_one_helm_takes(name: str, stem: str | None) -> None:
    root = Path("/charts") / name.replace("/", "_").replace("\x00", "_")
    values = None if stem is None else Path("/charts") / f"{stem.replace('/', '_')}.yaml"
    got = release(root, values)
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", got) and len(got) <= 53, got


def test_release_names_from_hostile_folders() -> None:
    assert release(Path("--post-renderer=x")) == "post-renderer-x"
    assert release(Path("-")) == "release"
    assert release(Path("Falcon PD"), Path("values\nprod.yaml")) == "falcon-pd-values-prod"
    assert release(Path("a" * 60)) == "a" * 53
    assert release(Path("vllm-pd"), Path("values-prod.yaml")) == "vllm-pd-values-prod"


# ---- the environment ------------------------------------------------------------------


def test_the_renderer_sees_none_of_kvalign_s_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "env.json"
    _tool(
        tmp_path / "bin", "kustomize",
        f"#!{sys.executable}\nimport json, os\n"
        f"open({str(dump)!r}, 'w').write(json.dumps(dict(os.environ)))\n",
    )  # fmt: skip
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}relative{os.pathsep}/usr/bin")
    for name, value in (
        ("KVALIGN_CANARY", "sing"), ("HTTPS_PROXY", "http://proxy.example:3128"),
        ("KUBECONFIG", "/root/.kube/config"), ("HELM_KUBECONTEXT", "prod"),
        ("KUBECTL_EXTERNAL_DIFF", "sh -c evil"), ("HOME", "/home/user"),
    ):  # fmt: skip
        monkeypatch.setenv(name, value)
    root = tmp_path / "k"
    root.mkdir()
    (root / "kustomization.yaml").write_text("resources: []\n")
    assert render(root) == ("", None)
    seen = json.loads(dump.read_text())
    assert tuple(seen) == render_module.ENVIRONMENT
    assert "KVALIGN_CANARY" not in seen and "HTTPS_PROXY" not in seen
    assert seen["PATH"] == f"{tmp_path / 'bin'}{os.pathsep}/usr/bin"  # no relative entry
    home = seen["HOME"]
    assert home != "/home/user" and Path(home).name.startswith("kvalign-render-")
    assert not Path(home).exists()  # the private folder is gone after the run
    for name, value in seen.items():
        if name not in ("PATH", "LANG", "HELM_NO_PLUGINS", "KUBERC"):
            assert value.startswith(home), (name, value)
    assert (seen["LANG"], seen["HELM_NO_PLUGINS"], seen["KUBERC"]) == ("C.UTF-8", "1", "off")
    assert environment(Path("/t"))["KUBECONFIG"] == "/t/kubeconfig"


# ---- time, size, bytes ----------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie left to init is not running


@pytest.mark.parametrize(
    ("script", "text"),
    [
        # the renderer sleeps while a grandchild holds its stdout open
        ("echo $$ >> {pids}\nexec sleep 60\n", None),
        # the renderer ends, a grandchild keeps its stdout open
        ("echo 'kind: Pod'\n", "kind: Pod\n"),
    ],
)
def test_a_renderer_is_stopped_at_the_limit_with_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, text: str | None
) -> None:
    pids = tmp_path / "pids"
    # the grandchild writes its own number, then sleeps; the renderer waits for that
    grandchild = (
        f"sh -c 'echo $$ >> {pids}; exec sleep 60' &\nwhile [ ! -s {pids} ]; do sleep 0.05; done\n"
    )
    _tool(
        tmp_path / "bin",
        "kustomize",
        "#!/bin/sh\n" + grandchild + script.replace("{pids}", str(pids)),
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setattr(render_module, "TIMEOUT", 2)
    root = tmp_path / "k"
    root.mkdir()
    (root / "kustomization.yaml").write_text("resources: []\n")
    start = time.monotonic()
    got, problem = render(root)
    took = time.monotonic() - start
    assert took < 2 + 3, took  # the limit, and never the grandchild's 60 s
    if text is None:
        assert got is None and problem is not None
        assert "timed out after 2 seconds (stopped)" in problem.message
    else:
        assert (got, problem) == (text, None)
    time.sleep(0.2)
    assert [pid for pid in map(int, pids.read_text().split()) if _alive(pid)] == []


def _stand_in_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """A kustomize root with nothing in it, rendered by a stand-in ``kustomize`` running
    ``script`` (first on PATH)."""
    _tool(tmp_path / "bin", "kustomize", script)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    root = tmp_path / "k"
    root.mkdir()
    (root / "kustomization.yaml").write_text("resources: []\n")
    return root


def test_output_past_the_cap_is_not_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert render_module.MAX_OUTPUT == 8 * 1024 * 1024
    root = _stand_in_root(tmp_path, monkeypatch, "#!/bin/sh\nexec yes 'kind: ConfigMap'\n")
    result = runner.invoke(app, ["audit", str(root)])
    assert result.exit_code == 3, result.stdout
    assert f"a kustomize folder: `kustomize build -- {root}` printed more than 8 MiB (stopped" in (
        result.stdout
    )
    # exactly at the cap is read; one byte more is not
    monkeypatch.setattr(render_module, "MAX_OUTPUT", 12)
    _tool(tmp_path / "bin", "kustomize", "#!/bin/sh\nprintf 'kind: Pod\\n#1'\n")
    assert render(root) == ("kind: Pod\n#1", None)
    _tool(tmp_path / "bin", "kustomize", "#!/bin/sh\nprintf 'kind: Pod\\n#12'\n")
    got, problem = render(root)
    assert got is None and problem is not None and "printed more than" in problem.message


def test_non_utf8_output_is_not_evaluated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _stand_in_root(tmp_path, monkeypatch, "#!/bin/sh\nprintf 'kind: Pod\\n\\377\\376\\n'\n")
    result = runner.invoke(app, ["audit", str(root)])
    assert result.exit_code == 3, result.stdout
    assert (
        f"`kustomize build -- {root}` printed output that is not UTF-8 text (byte 10)"
    ) in result.stdout


# ---- remote references ----------------------------------------------------------------

REMOTE_FORMS = [
    ("flow.yaml", "https://flow.example.com/deploy.yaml"),
    ("tagged.yaml", "https://tagged.example.com/deploy.yaml"),
    ("folded.yaml", "https://folded.example.com/deploy.yaml"),
    ("patches.yaml", "https://patches.example.com/patch.yaml"),
    ("kustomization.json", "https://json.example.com/deploy.yaml"),
    ("git.yaml", "git::https://git.example.com/org/repo//deploy?ref=v1"),
]


def _remote_root(folder: Path, fixture: str) -> Path:
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / fixture, folder / "kustomization.yaml")
    shutil.copy(FIXTURES / "app.yaml", folder / "app.yaml")
    return folder


@pytest.mark.parametrize(("fixture", "entry"), REMOTE_FORMS)
def test_a_remote_reference_in_any_form_is_refused_before_rendering(
    tmp_path: Path, fixture: str, entry: str
) -> None:
    log = tmp_path / "argv.log"
    for tool in ("kustomize", "kubectl"):
        _recorder(tmp_path / "bin", tool, log, "kind: ConfigMap\n")
    root = _remote_root(tmp_path / "k", fixture)
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", str(root)], env=env)
    assert result.exit_code == 3, result.stdout
    assert f"not rendered: it names the remote resource {entry}, which kustomize" in (result.stdout)
    assert _calls(log) == []


def test_a_remote_reference_deeper_than_the_walk_is_refused(tmp_path: Path) -> None:
    # a chain of MAX_FILES + 1 local bases, the remote one at the end: the walk stops at
    # its bound, so the root is refused (not evaluated) rather than rendered unchecked
    log = tmp_path / "argv.log"
    for tool in ("kustomize", "kubectl"):
        _recorder(tmp_path / "bin", tool, log, "kind: ConfigMap\n")
    chain = tmp_path / "chain"
    count = kustomize.MAX_FILES + 1
    for i in range(count):
        (chain / f"b{i}").mkdir(parents=True)
        nxt = f"../b{i + 1}" if i + 1 < count else "https://deep.example.com/x.yaml"
        (chain / f"b{i}" / "kustomization.yaml").write_text(f"resources:\n- {nxt}\n")
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", str(chain / "b0"), "--format", "json"], env=env)
    assert result.exit_code == 3, result.stdout
    report = json.loads(result.stdout)
    assert [u["message"].split(": render it")[0] for u in report["unevaluated"]] == [
        "a kustomize folder: not rendered: it names more than 200 files through its bases, "
        "more than kvalign checks for remote resources"
    ]
    assert _calls(log) == []


@pytest.mark.parametrize(("fixture", "entry"), REMOTE_FORMS[:2])
def test_a_remote_reference_with_the_real_kubectl(tmp_path: Path, fixture: str, entry: str) -> None:
    kubectl = _kubectl()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "kubectl").symlink_to(kubectl)
    root = _remote_root(tmp_path / "k", fixture)
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", str(root)], env=env)
    assert result.exit_code == 3, result.stdout
    assert f"it names the remote resource {entry}" in result.stdout


@pytest.mark.parametrize(
    ("entry", "planted"),
    [
        ("github.com/org/repo", "github.com/org/repo"),
        ("git@github.com:org/repo", "git@github.com:org/repo"),
        ("https://github.com/org/repo", "https:/github.com/org/repo"),
    ],
)
def test_a_planted_folder_does_not_make_a_remote_entry_local(
    tmp_path: Path, entry: str, planted: str
) -> None:
    # found by trying the merged tree as an attacker: a local folder spelled like the
    # entry (``Path`` folds ``//``) made kvalign render it, and kubectl then ran git
    # (kustomize tries a folder entry as a Git repository before it looks on disk)
    kubectl = _kubectl()
    log = tmp_path / "argv.log"
    _recorder(tmp_path / "bin", "git", log)
    (tmp_path / "bin" / "kubectl").symlink_to(kubectl)
    root = tmp_path / "k"
    (root / planted).mkdir(parents=True)
    (root / planted / "kustomization.yaml").write_text("resources: []\n")
    (root / "kustomization.yaml").write_text(f"resources:\n- {entry}\n")
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", str(root)], env=env)
    assert result.exit_code == 3, result.stdout
    assert f"it names the remote resource {entry}, which kustomize" in result.stdout
    assert _calls(log) == []  # git never started


# ---- inputs and locations -------------------------------------------------------------


def _chart(tmp_path: Path) -> Path:
    chart = tmp_path / "charts" / "vllm-pd"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: vllm-pd\nversion: 0.1.0\n")
    for name in ("prefill.yaml", "decode.yaml"):
        shutil.copy(SPLIT_GOOD / name, chart / "templates" / name)
    (chart / "templates" / "_helpers.tpl").write_text('{{- define "x" -}}x{{- end -}}\n')
    (chart / "values.schema.json").write_text('{"type": "object"}\n')
    return chart


def _helm(tmp_path: Path, chart: Path, sources: tuple[str, str]) -> None:
    rendered = "".join(
        f"---\n# Source: {source}\n" + (chart / "templates" / name).read_text()
        for source, name in zip(sources, ("decode.yaml", "prefill.yaml"), strict=True)
    )
    (tmp_path / "rendered.yaml").write_text(rendered)
    _tool(tmp_path / "bin", "helm", f"#!/bin/sh\ncat {tmp_path / 'rendered.yaml'}\n")


def test_a_values_file_linked_out_of_the_tree_never_reaches_helm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # found by an attacker run on the merged tree: values-prod.yaml -> a file elsewhere on
    # the host was copied into helm's private values file; now it is no values file of
    # the chart, and the scan lists the link as not read (exit 3)
    tree = tmp_path / "tree"
    chart = _chart(tree)
    secret = tmp_path / "host" / "cred.yaml"
    secret.parent.mkdir()
    secret.write_text("apiKey: sk-HOSTSECRET\n")
    (chart.parent / "values-prod.yaml").symlink_to(secret)
    log = tmp_path / "argv.log"
    _recorder(tmp_path / "bin", "helm", log, (chart / "templates" / "prefill.yaml").read_text())
    monkeypatch.chdir(tree)
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", str(chart.parent), "--format", "json"], env=env)
    report = json.loads(result.stdout)
    assert [u["file"] for u in report["not_read"]] == [str(chart.parent / "values-prod.yaml")]
    assert all("--values" not in call for call in _calls(log))  # rendered without it
    assert result.exit_code == 3
    assert "HOSTSECRET" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "target",
    ["templates/_helpers.tpl", "values.schema.json", "../values-prod.yaml", "Chart.yaml"],
)
def test_files_only_helm_reads_are_inputs_output_never_replaces(
    tmp_path: Path, target: str
) -> None:
    chart = _chart(tmp_path)
    (chart.parent / "values-prod.yaml").write_text("tp: 8\n")
    _helm(tmp_path, chart, ("vllm-pd/templates/decode.yaml", "vllm-pd/templates/prefill.yaml"))
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    victim = chart / target
    before = victim.read_bytes()
    result = runner.invoke(app, ["audit", str(chart.parent), "--output", str(victim)], env=env)
    assert result.exit_code == 2, result.output
    assert "refusing to overwrite it" in result.output
    assert victim.read_bytes() == before


@pytest.mark.parametrize("target", ["patch.yaml", "app.env", "base/cm.yaml", "base/notes.txt"])
def test_files_only_kustomize_reads_are_inputs_output_never_replaces(
    tmp_path: Path, target: str
) -> None:
    pods = f"{SPLIT_GOOD / 'prefill.yaml'} {SPLIT_GOOD / 'decode.yaml'}"
    _tool(tmp_path / "bin", "kustomize", f"#!/bin/sh\necho ---; cat {pods}\n")
    deploy = tmp_path / "deploy"
    (deploy / "base").mkdir(parents=True)
    (deploy / "base" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (deploy / "base" / "cm.yaml").write_text("kind: ConfigMap\n")
    (deploy / "base" / "notes.txt").write_text("kept\n")
    overlay = deploy / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../base]\npatches: [{path: ../patch.yaml}]\n"
        "configMapGenerator: [{name: c, envs: [../app.env]}]\n"
    )
    (deploy / "patch.yaml").write_text("kind: ConfigMap\n")
    (deploy / "app.env").write_text("A=1\n")
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    victim = deploy / target
    before = victim.read_bytes()
    result = runner.invoke(app, ["audit", str(overlay), "--output", str(victim)], env=env)
    assert result.exit_code == 2, result.output
    assert "refusing to overwrite it" in result.output
    assert victim.read_bytes() == before


@pytest.mark.parametrize(
    "source", ["vllm-pd/../../../../etc/passwd", "/etc/passwd", "vllm-pd/../../outside.yaml"]
)
def test_a_source_path_out_of_the_chart_is_never_a_location(tmp_path: Path, source: str) -> None:
    chart = _chart(tmp_path)
    _helm(tmp_path, chart, (source, "vllm-pd/templates/prefill.yaml"))
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", str(chart.parent), "--format", "json"], env=env)
    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    files = [p["file"] for f in report["files"] for p in f["pools"]]
    assert len(files) == 2 and "passwd" not in result.stdout and "outside" not in result.stdout
    assert all(Path(f).resolve().is_relative_to(chart.resolve()) for f in files), files
    assert str(chart / "templates" / "prefill.yaml") in files


# ---- what helm itself would fetch or look up -------------------------------------------


def _tgz(members: dict[str, bytes]) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


LOOKUP = b'{{ getHostByName "attacker.example" }}\n'


@pytest.mark.parametrize(
    ("file", "data", "reason"),
    [
        ("templates/_helpers.tpl", LOOKUP,
         "templates/_helpers.tpl calls getHostByName, a DNS lookup while rendering"),
        ("values.schema.json", b'{"properties": {"a": {"$ref": "https://s.example/a.json"}}}',
         "its values schema values.schema.json refers to https://s.example/a.json, which helm "
         "would load"),
        ("values.schema.json", b'{"$id": "https://s.example/", "items": {"$ref": "a.json"}}',
         "its values schema values.schema.json refers to files under a URL ($id), which helm "
         "would load"),
        ("values.schema.json", b'{"$schema": "https://meta.example/s"}',
         "its values schema values.schema.json names the meta-schema https://meta.example/s, "
         "which helm would load"),
        ("charts/dep.tgz", _tgz({"dep/Chart.yaml": b"name: dep\n", "dep/templates/a.yaml": LOOKUP}),
         "charts/dep.tgz:dep/templates/a.yaml calls getHostByName, a DNS lookup while rendering"),
        ("charts/dep.tgz", _tgz({"dep/charts/inner.tgz": _tgz({"inner/values.schema.json":
         b'{"$ref": "file:///etc/passwd"}'})}),
         "its values schema charts/dep.tgz:dep/charts/inner.tgz:inner/values.schema.json refers "
         "to file:///etc/passwd, which helm would load"),
        ("charts/dep.tgz", b"not gzip",
         "charts/dep.tgz is not a packaged subchart kvalign can read"),
    ],
)  # fmt: skip
def test_a_chart_helm_would_reach_the_network_for_is_not_rendered(
    tmp_path: Path, file: str, data: bytes, reason: str
) -> None:
    log = tmp_path / "argv.log"
    _recorder(tmp_path / "bin", "helm", log, "kind: ConfigMap\n")
    chart = _chart(tmp_path)
    (chart / file).parent.mkdir(parents=True, exist_ok=True)
    (chart / file).write_bytes(data)
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", str(chart.parent), "--format", "json"], env=env)
    assert result.exit_code == 3, result.stdout
    report = json.loads(result.stdout)
    assert [u["message"].split(": render it")[0] for u in report["unevaluated"]] == [
        f"a Helm chart: not rendered: {reason}"
    ]
    assert _calls(log) == []


def test_a_values_file_that_looks_a_host_up_is_not_rendered(tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    _recorder(tmp_path / "bin", "helm", log, "")
    chart = _chart(tmp_path)
    (chart.parent / "values-prod.yaml").write_bytes(b"host: " + LOOKUP)
    (chart / "values.schema.json").write_text(
        '{"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/a"}'
    )  # a known meta-schema and a reference inside the file: rendered
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    result = runner.invoke(app, ["audit", str(chart.parent), "--format", "json"], env=env)
    report = json.loads(result.stdout)
    assert [u["message"].split(": render it")[0] for u in report["unevaluated"]] == [
        "a Helm chart with values-prod.yaml: not rendered: values-prod.yaml calls "
        "getHostByName, a DNS lookup while rendering"
    ]
    assert len(_calls(log)) == 1  # the chart alone was rendered
