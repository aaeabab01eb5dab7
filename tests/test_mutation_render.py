"""Helm chart and kustomize folders (kvalign/deploy/render.py) pinned where a wrong rule
changes the answer, for its mutants (tests/mutation/run.py render).

Expected values come from Helm's and kustomize's documented behaviour (a chart is a
folder with ``Chart.yaml`` and ``templates/``; ``helm template RELEASE CHART [-f VALUES]``
writes ``# Source: CHART/templates/FILE`` before each rendered template; a kustomize root
holds ``kustomization.yaml``, ``kustomization.yml`` or ``Kustomization`` and is rendered
by ``kustomize build DIR`` or ``kubectl kustomize DIR``), the module's docstrings (the
messages, the release naming, the fallbacks), and the folders, renderer stand-ins and
rendered texts written in each test, read by hand (their lines and names).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest

from kvalign.deploy import render as render_module
from kvalign.deploy.common import PoolInput, build_pool
from kvalign.deploy.model import Deployment, Location, Pool, Problem
from kvalign.deploy.render import (
    _as_given,
    command,
    hint,
    is_chart,
    referenced,
    release,
    relocate,
    render,
    roots,
    values_beside,
)


def _chart(folder: Path) -> Path:
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n")
    return folder


def _kustomize(folder: Path, text: str = "resources: []\n", name: str = "kustomization.yaml"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder


def _tool(bin_dir: Path, name: str, script: str) -> Path:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _pool(name: str, line: int | None) -> Pool:
    found = PoolInput(
        role="prefill", role_source="field", name=name, args=["m/x"],
        location=Location("-", line), env={},
    )  # fmt: skip
    pool, _ = build_pool(found)
    assert pool is not None
    return pool


# ---- folders --------------------------------------------------------------------------


def test_is_chart(tmp_path: Path) -> None:
    assert is_chart(_chart(tmp_path / "c"))
    (tmp_path / "d" / "Chart.yaml").mkdir(parents=True)  # a folder named Chart.yaml
    (tmp_path / "d" / "templates").mkdir()
    assert not is_chart(tmp_path / "d")
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "Chart.yaml").write_text("name: e\n")
    (tmp_path / "e" / "templates").write_text("")  # a file named templates
    assert not is_chart(tmp_path / "e")
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "Chart.yaml").write_text("name: f\n")
    assert not is_chart(tmp_path / "f")


def test_roots(tmp_path: Path) -> None:
    chart = _chart(tmp_path / "chart")
    _kustomize(chart / "sub")  # inside a chart: part of it
    _chart(chart / "charts" / "dep")  # a subchart: part of it
    k = _kustomize(tmp_path / "k")
    overlay = _kustomize(k / "overlay", name="kustomization.yml")  # kustomize in kustomize
    b = _kustomize(tmp_path / "b", name="Kustomization")
    inner = _chart(k / "inner")  # a chart inside a kustomize folder is a root
    _kustomize(tmp_path / ".hidden")
    _kustomize(tmp_path / "a" / ".git" / "x")
    (tmp_path / "plain").mkdir()
    # outermost first: sorted paths (b < chart < k < k/inner < k/overlay)
    assert roots(tmp_path) == [b, chart, k, inner, overlay]
    assert roots(chart) == [chart]
    assert roots(tmp_path / "plain") == []


def test_referenced(tmp_path: Path) -> None:
    base = _kustomize(tmp_path / "base")
    text = "resources:\n- ../base\n- prefill.yaml\n- ../missing\n"
    overlay = _kustomize(tmp_path / "overlay", text)
    (overlay / "prefill.yaml").write_text("kind: Pod\n")
    assert referenced(overlay) == {base.resolve()}
    assert referenced(base) == set()
    assert referenced(tmp_path) == set()  # no kustomization


def test_values_beside(tmp_path: Path) -> None:
    deploy = tmp_path / "deploy"
    root = _chart(deploy / "falcon-pd")
    for name in ("values-prod.yaml", "my-VALUES.yml", "values.json", "other.yaml"):
        (deploy / name).write_text("tp: 2\n")
    (deploy / "values-dir.yaml").mkdir()  # a folder, not a file
    assert values_beside(root) == [deploy / "my-VALUES.yml", deploy / "values-prod.yaml"]
    assert values_beside(_kustomize(tmp_path / "k")) == []  # not a chart
    _chart(deploy / "other-chart")  # two charts: which one a file is for is unknown
    assert values_beside(root) == []


def test_release_command_and_hint(tmp_path: Path) -> None:
    root = _chart(tmp_path / "falcon-pd")
    values = tmp_path / "values-prod.yaml"
    k = _kustomize(tmp_path / "k")
    assert release(root) == "falcon-pd"
    assert release(root, values) == "falcon-pd-values-prod"
    every = {"helm": "/h/helm", "kustomize": "/k/kustomize", "kubectl": "/k/kubectl"}
    assert command(root, every.get) == ["/h/helm", "template", "--", "falcon-pd", str(root)]
    assert command(root, every.get, values) == [
        "/h/helm", "template", "--values", str(values), "--", "falcon-pd-values-prod", str(root),
    ]  # fmt: skip
    # a chart is rendered by helm only
    assert command(root, {"kustomize": "/k/kustomize", "kubectl": "/k/kubectl"}.get) is None
    assert command(k, every.get) == ["/k/kustomize", "build", "--", str(k)]
    assert command(k, {"kubectl": "/k/kubectl"}.get) == ["/k/kubectl", "kustomize", "--", str(k)]
    assert command(k, {"helm": "/h/helm"}.get) is None
    assert hint(root) == f"helm template falcon-pd {root} | kvalign audit -"
    assert hint(root, values) == (
        f"helm template falcon-pd-values-prod {root} -f {values} | kvalign audit -"
    )
    assert hint(k) == f"kubectl kustomize {k} | kvalign audit -   (or: kustomize build {k} | …)"


# ---- render ---------------------------------------------------------------------------


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return folder


def test_render_without_a_renderer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    root = _chart(tmp_path / "falcon-pd")
    values = tmp_path / "values-prod.yaml"
    assert render(root) == (None, Problem(
        Location(str(root / "Chart.yaml")),
        "a Helm chart: not rendered (helm is not on PATH): render it and pipe the output: "
        f"`helm template falcon-pd {root} | kvalign audit -`",
    ))  # fmt: skip
    assert render(root, values) == (None, Problem(
        Location(str(values)),
        f"a Helm chart with values-prod.yaml: not rendered (helm is not on PATH): render it "
        f"and pipe the output: `helm template falcon-pd-values-prod {root} -f {values} | "
        "kvalign audit -`",
    ))  # fmt: skip
    k = _kustomize(tmp_path / "k", name="Kustomization")
    assert render(k) == (None, Problem(
        Location(str(k / "Kustomization")),
        "a kustomize folder: not rendered (kustomize or kubectl is not on PATH): render it "
        f"and pipe the output: `kubectl kustomize {k} | kvalign audit -   (or: kustomize "
        f"build {k} | …)`",
    ))  # fmt: skip


def test_a_remote_kustomization_is_not_rendered(tmp_path: Path, bin_dir: Path) -> None:
    _tool(bin_dir, "kustomize", "#!/bin/sh\necho rendered\n")
    remote = "https://github.com/org/repo//base?ref=v1"
    k = _kustomize(tmp_path / "k", f"resources:\n- {remote}\n- github.com/org/other\n")
    tail = (
        ", which kustomize would fetch (kvalign reaches no network): render it and pipe the "
        f"output: `kubectl kustomize {k} | kvalign audit -   (or: kustomize build {k} | …)`"
    )
    where = Location(str(k / "kustomization.yaml"))
    assert render(k) == (None, Problem(
        where, f"a kustomize folder: not rendered: it names the remote resource {remote} "
        f"(and 1 more){tail}",
    ))  # fmt: skip
    one = _kustomize(tmp_path / "one", f"resources:\n- {remote}\n")
    assert render(one) == (None, Problem(
        Location(str(one / "kustomization.yaml")),
        f"a kustomize folder: not rendered: it names the remote resource {remote}"
        + tail.replace(str(k), str(one)),
    ))  # fmt: skip


def test_render_runs_the_renderer(tmp_path: Path, bin_dir: Path) -> None:
    _tool(bin_dir, "helm", '#!/bin/sh\necho "helm $*"\n')
    _tool(bin_dir, "kustomize", '#!/bin/sh\necho "kustomize $*"\n')
    root = _chart(tmp_path / "falcon-pd")
    values = tmp_path / "values-prod.yaml"
    assert render(root) == (f"helm template -- falcon-pd {root}\n", None)
    values.write_text("tp: 2\n")
    # helm reads kvalign's private copy of the values file (in its temporary HOME)
    _tool(
        bin_dir, "helm",
        '#!/bin/sh\ncase "$3" in "$HOME"/*) ;; *) exit 7;; esac\necho "helm $1 $2 $4 $5 $6"\n'
        'cat "$3"\n',
    )  # fmt: skip
    text, problem = render(root, values)
    assert problem is None
    assert text == f"helm template --values -- falcon-pd-values-prod {root}\ntp: 2\n"
    k = _kustomize(tmp_path / "k")
    assert render(k) == (f"kustomize build -- {k}\n", None)


@pytest.mark.parametrize(
    ("stderr", "first"),
    [
        # kubectl's klog lines first: the "Error:" line is the cause
        ("E1202 01:12:03 loader.go:1] err=<\n   \n  Error: accumulating resources\n",
         "Error: accumulating resources"),
        ("\n  first line  \nsecond\n", "first line"),
        ("", "no message"),
        ("  \n", "no message"),
    ],
)  # fmt: skip
def test_a_failing_renderer(tmp_path: Path, bin_dir: Path, stderr: str, first: str) -> None:
    (tmp_path / "stderr.txt").write_text(stderr)
    _tool(bin_dir, "kustomize", f"#!/bin/sh\ncat {tmp_path / 'stderr.txt'} >&2\nexit 2\n")
    k = _kustomize(tmp_path / "k")
    assert render(k) == (None, Problem(
        Location(str(k / "kustomization.yaml")),
        f"a kustomize folder: `kustomize build -- {k}` exited 2: {first}",
    ))  # fmt: skip


def test_a_renderer_that_cannot_run(
    tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helm = _tool(bin_dir, "helm", "#!/nonexistent/interpreter\n")
    root = _chart(tmp_path / "falcon-pd")
    text, problem = render(root)
    assert text is None and problem is not None
    assert problem.location == Location(str(root / "Chart.yaml")) and problem.blocking
    assert problem.message.startswith(
        f"a Helm chart: `{helm} template -- falcon-pd {root}` failed ("
    )
    assert problem.message.endswith(f"); try `helm template falcon-pd {root} | kvalign audit -`")
    values = tmp_path / "values-prod.yaml"
    values.write_text("tp: 2\n")
    _, problem = render(root, values)
    assert problem is not None and problem.location == Location(str(values))
    assert problem.message.endswith(
        f"); try `helm template falcon-pd-values-prod {root} -f {values} | kvalign audit -`"
    )
    # a renderer that takes longer than TIMEOUT seconds
    _tool(bin_dir, "helm", "#!/bin/sh\nexec sleep 5\n")
    monkeypatch.setattr(render_module, "TIMEOUT", 0.3)
    text, problem = render(root)
    assert text is None and problem is not None and "timed out after 0.3 seconds" in problem.message


# ---- relocate -------------------------------------------------------------------------

HELM = """\
---
# Source: falcon-pd/templates/prefill.yaml
apiVersion: v1
kind: Pod
metadata:
  name: prefill
---
# Source: other/templates/decode.yaml
kind: Pod
"""


def test_relocate_helm_sources(tmp_path: Path) -> None:
    root = _chart(tmp_path / "falcon-pd")
    pools = (
        _pool("prefill", 6),
        _pool("at-source", 2),
        _pool("decode", 9),
        _pool("nameless", None),
    )
    deployment = Deployment(source="r", kind="kubernetes", pools=pools, launches=3)
    moved = relocate(deployment, root, HELM)
    # rendered line N after the `# Source:` line S is line N − S of the template; the
    # Source line itself maps to line 1; a source of another chart name stays below root
    assert [p.location for p in moved.pools] == [
        Location(str(root / "templates" / "prefill.yaml"), 4),
        Location(str(root / "templates" / "prefill.yaml"), 1),
        Location(str(root / "other" / "templates" / "decode.yaml"), 1),
        # no line: read as line 1, before every `# Source:` line; no file names it: kept
        Location("-", None),
    ]
    assert dataclasses.replace(moved, pools=pools) == deployment


def test_relocate_counts_a_leading_empty_line(tmp_path: Path) -> None:
    root = _chart(tmp_path / "falcon-pd")
    text = "\n# Source: falcon-pd/templates/a.yaml\nkind: Pod\n"
    moved = relocate(Deployment(source="r", kind="k", pools=(_pool("a", 3),)), root, text)
    # the Source line is line 2 (after the empty line 1): rendered line 3 is template line 1
    assert [p.location for p in moved.pools] == [Location(str(root / "templates/a.yaml"), 1)]


def test_relocate_kustomize_objects_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    base = _kustomize(tmp_path / "deploy" / "base")
    (base / "decode.yaml").write_text(
        "kind: Pod\nmetadata:\n  generateName: vllm-decode\n  name: vllm-decode-extra\n"
        '  name: "vllm-decode"\n'
    )
    (base / "a-notes.txt").write_text("  name: vllm-decode\n")  # not YAML: not searched
    (base / "a-dir.yaml").mkdir()  # a folder, not a file
    (base / "router.yml").write_text("kind: Pod\nmetadata:\n  name: vllm-router\n")
    (base / "prefill.yml").write_text("kind: Pod\nmetadata:\n  name: 'vllm-prefill'  \n")
    overlay = _kustomize(
        tmp_path / "deploy" / "overlay", "resources:\n- ../base\nnamePrefix: prod-\n"
    )
    (overlay / "patch.yaml").write_text("metadata:\n  name: prod-vllm-prefill\n")
    root = Path("deploy/overlay")
    pools = (
        _pool("prod-vllm-decode", 12),  # "vllm-decode" (less the prefix): base line 5
        _pool("prod-vllm-prefill", None),  # its full name in the overlay's own patch first
        _pool("unnamed", 3),
        _pool("prod-vllm-router", 7),  # in a .yml file: line 3
    )
    moved = relocate(Deployment(source="r", kind="kubernetes", pools=pools), root, "kind: Pod\n")
    assert [p.location for p in moved.pools] == [
        Location(str(Path("deploy/base/decode.yaml")), 5),
        Location(str(Path("deploy/overlay/patch.yaml")), 2),
        Location("-", 3),  # no file names it: kept
        Location(str(Path("deploy/base/router.yml")), 3),
    ]
    # the base found as the run names the overlay: relative stays relative
    assert _as_given(root, base.resolve()) == Path("deploy/base")


def test_relocate_without_a_source_line_before_the_pool(tmp_path: Path) -> None:
    root = _kustomize(tmp_path / "k")
    (root / "pod.yaml").write_text("kind: Pod\nmetadata:\n  name: vllm\n")
    text = "kind: Pod\nmetadata:\n  name: vllm\n---\n# Source: k/templates/x.yaml\nkind: Pod\n"
    moved = relocate(Deployment(source="r", kind="k", pools=(_pool("vllm", 3),)), root, text)
    # the only `# Source:` line (5) is after the pool's line 3: found by name instead
    assert [p.location for p in moved.pools] == [Location(str(root / "pod.yaml"), 3)]


# ---- hardening (issue #31) -------------------------------------------------------------


def test_hint_paths_are_typed_as_paths(tmp_path: Path) -> None:
    # a name that starts with "-" gets "./"; a blank or a shell character is quoted
    k = Path("--enable-helm")
    assert hint(k) == (
        "kubectl kustomize ./--enable-helm | kvalign audit -   (or: kustomize build "
        "./--enable-helm | …)"
    )
    chart = _chart(tmp_path / "my chart")
    assert hint(chart, Path("-f x.yaml")) == (
        f"helm template my-chart--f-x '{chart}' -f './-f x.yaml' | kvalign audit -"
    )


def test_release_edges() -> None:
    # 53 characters at most, no "-" left at the end after cutting; "." names the folder
    assert release(Path("a" * 52 + "-b")) == "a" * 52
    assert release(Path("x"), Path("-.yaml")) == "x"
    assert release(Path("/srv/Falcon_PD")) == "falcon-pd"
    assert release(Path(".")) == render_module.release(Path.cwd())


def test_stderr_is_kept_up_to_its_cap(
    tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert render_module.MAX_STDERR == 64 * 1024
    monkeypatch.setattr(render_module, "MAX_STDERR", 5)
    _tool(bin_dir, "kustomize", "#!/bin/sh\nprintf 'abcdefgh\\n' >&2\nexit 3\n")
    k = _kustomize(tmp_path / "k")
    assert render(k) == (None, Problem(
        Location(str(k / "kustomization.yaml")), f"a kustomize folder: `kustomize build -- {k}` "
        "exited 3: abcde",
    ))  # fmt: skip


def test_run_reports_the_exit_status_and_both_streams(tmp_path: Path) -> None:
    script = _tool(tmp_path / "bin", "r", "#!/bin/sh\necho out; echo err >&2; exit 5\n")
    done = render_module.run([str(script)], tmp_path)
    assert (done.returncode, done.stdout, done.stderr, done.stopped) == (
        5,
        b"out\n",
        b"err\n",
        None,
    )
    with pytest.raises(OSError):
        render_module.run([str(tmp_path / "missing")], tmp_path)


def test_a_kustomization_that_cannot_be_read_is_not_rendered(tmp_path: Path, bin_dir: Path) -> None:
    _tool(bin_dir, "kustomize", "#!/bin/sh\necho rendered\n")
    k = _kustomize(tmp_path / "k", "resources: [a\n")
    text, problem = render(k)
    assert text is None and problem is not None
    assert problem.message.startswith(
        f"a kustomize folder: not rendered: {k / 'kustomization.yaml'}:"
    )
    assert problem.message.endswith(f": render it and pipe the output: `{hint(k)}`")
