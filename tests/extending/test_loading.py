"""Loading plugins of one's own: entry points, paths, directories, modules; clashes, import
failures and version refusals (upstream's Registry Merge, and what a profile naming an
unavailable plugin gets)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kubeberth.config import ConfigError, default_spec, parse_spec
from kubeberth.framework import API_VERSION, SchedulerContext
from kubeberth.plugins import PluginLoadError, in_tree_registry, plugin_registry, register, use_plugins
from kubeberth.plugins._loading import load
from kubeberth.profile import PluginUnavailable, build_framework

from .conftest import score_plugin


def loaded(*sources: str, entry_points: bool = True):  # type: ignore[no-untyped-def]
    return load(in_tree_registry(), sources, entry_points=entry_points)


def profile_with(name: str) -> dict:  # type: ignore[type-arg]
    return {"schedulerName": "mine", "plugins": {"score": {"enabled": [{"name": name}]}}}


def test_an_entry_point_naming_a_class(install: Callable[..., Path]) -> None:
    install("tier-plugins", "0.3", {"tierplug": score_plugin("TierGold")}, {"TierGold": "tierplug:TierGold"})
    got = loaded()
    spec = got.registry.get("TierGold")
    assert spec is not None and got.failures == []
    assert spec.origin == "distribution tier-plugins 0.3 (entry point TierGold = tierplug:TierGold)"
    assert spec.points() == ["score"]


def test_an_entry_point_naming_a_module_with_plugins(install: Callable[..., Path]) -> None:
    source = score_plugin("A") + score_plugin("B") + "\nPLUGINS = [B]\n"
    install("two", "1.0", {"pkg.mod": source}, {"mine": "pkg.mod"})
    got = loaded()
    assert got.registry.get("B") is not None
    assert got.registry.get("A") is None  # PLUGINS says which
    assert [m for m in got.modules if m.startswith("pkg.")] == ["pkg.mod"]  # (other installed plugins too)


def test_an_entry_point_whose_import_fails_leaves_its_plugins_unavailable(install: Callable[..., Path]) -> None:
    install("broken", "2.0", {"brokenplug": "import no_such_dependency\n" + score_plugin("Broken")},
            {"Broken": "brokenplug:Broken"})
    got = loaded()
    assert [str(f) for f in got.failures] == [
        "distribution broken 2.0 (entry point Broken = brokenplug:Broken): import failed: "
        "ModuleNotFoundError: No module named 'no_such_dependency'"]
    with pytest.raises(PluginUnavailable) as err:
        build_framework(parse_spec(profile_with("Broken")), got.registry, SchedulerContext())
    assert str(err.value) == (
        "spec.plugins.score.enabled[0].name: plugin 'Broken' is unavailable: distribution broken 2.0 "
        "(entry point Broken = brokenplug:Broken): import failed: ModuleNotFoundError: No module named "
        "'no_such_dependency'")
    # The other profiles still build.
    build_framework(default_spec(), got.registry, SchedulerContext())


@pytest.mark.parametrize("layout, source, expected", [
    ("file", "one.py", ["Alpha"]),
    ("directory", ".", ["Alpha", "Beta"]),
    ("module", "plugpkg.alpha", ["Alpha"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_paths_directories_and_modules(write: Callable[[str, str], Path], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch, layout: str, source: str,
                                       expected: list[str]) -> None:
    if layout == "module":
        write("plugpkg/__init__.py", "")
        write("plugpkg/alpha.py", score_plugin("Alpha"))
        monkeypatch.syspath_prepend(str(tmp_path))
        origin = "module plugpkg.alpha"
    else:
        write("dir/one.py", score_plugin("Alpha"))
        write("dir/two.py", score_plugin("Beta"))
        write("dir/_helpers.py", "raise RuntimeError('helpers are not plugins')\n")
        source = str(tmp_path / "dir" / source)
        origin = f"path {tmp_path / 'dir' / 'one.py'}"
    got = loaded(source, entry_points=False)
    assert got.failures == []
    ours = [s for s in got.registry.specs() if s.origin != "in-tree"]
    assert sorted(s.name for s in ours) == expected
    assert got.registry.get("Alpha").origin == origin  # type: ignore[union-attr]


@pytest.mark.parametrize("missing", ["nowhere/plug.py", "no_such_module_xyz", "gone.py"])
def test_a_source_that_names_nothing_is_an_error(tmp_path: Path, missing: str) -> None:
    with pytest.raises(PluginLoadError, match="no such file"):
        loaded(str(tmp_path / missing) if "/" in missing else missing, entry_points=False)


def test_a_name_taken_in_tree_is_an_error_naming_both_origins(write: Callable[[str, str], Path]) -> None:
    path = write("fit.py", score_plugin("NodeResourcesFit", cls="Fit"))
    with pytest.raises(PluginLoadError) as err:
        loaded(str(path), entry_points=False)
    assert str(err.value) == (f"a plugin named 'NodeResourcesFit' already exists: in-tree has it, "
                              f"path {path} brings another")


def test_a_name_taken_by_two_sources_is_an_error(write: Callable[[str, str], Path],
                                                 install: Callable[..., Path]) -> None:
    install("tier-plugins", "0.3", {"tierplug": score_plugin("TierGold")}, {"TierGold": "tierplug:TierGold"})
    path = write("tier.py", score_plugin("TierGold"))
    with pytest.raises(PluginLoadError, match=r"'TierGold' already exists: distribution tier-plugins 0.3 "
                                              r"\(entry point TierGold = tierplug:TierGold\) has it, path .*tier.py"):
        loaded(str(path))


def test_a_file_whose_import_fails_names_the_plugins_it_declares(write: Callable[[str, str], Path]) -> None:
    path = write("bad.py", score_plugin("Gold") + "\n1 / 0\n")
    got = loaded(str(path), entry_points=False)
    assert [str(f) for f in got.failures] == [f"path {path}: import failed: ZeroDivisionError: division by zero"]
    assert got.registry.unknown("Gold") == (f"plugin 'Gold' is unavailable: path {path}: import failed: "
                                            "ZeroDivisionError: division by zero")


def test_a_failure_that_names_no_plugin_is_told_with_unknown_names(write: Callable[[str, str], Path]) -> None:
    path = write("syntax.py", "def (:\n")
    got = loaded(str(path), entry_points=False)
    assert got.registry.unknown("Whatever").startswith(
        f"plugin 'Whatever' does not exist (plugins that failed to load: path {path}: import failed: SyntaxError")


def pinned(write: Callable[[str, str], Path], attribute: str, requires: str, refused: str | None) -> None:
    """A plugin pinned by `attribute` (requires_api, requires_vector_api) loads, or is refused as `refused` says."""
    source = score_plugin("Pinned").replace("    args_model =", f"    {attribute} = {requires!r}\n    args_model =")
    path = write("pinned.py", source)
    got = loaded(str(path), entry_points=False)
    if refused is None:
        assert got.registry.get("Pinned") is not None and got.failures == []
        return
    assert got.registry.get("Pinned") is None
    assert got.registry.unknown("Pinned") == f"plugin 'Pinned' is unavailable: path {path}: {refused}"


@pytest.mark.parametrize("requires, refused", [
    (">=1.0,<2", None),
    (">=1.0", None),
    (">=1.1,<2", None),  # 1.1 added the names the in-tree plugins took from private modules
    (">=1.3,<2", None),  # 1.3 added the annotations' masks and node_column
    (">=1.4,<2", None),  # 1.4 moved the vectorised path's names to kubeberth.framework.vector
    (">=1.5,<2", None),  # 1.5 added ClusterClient.annotate_pod and Plugin.sample_metrics
    (">=2.0", f"plugin 'Pinned' requires kubeberth.framework API >=2.0 but this kubeberth has API {API_VERSION}"),
    ("<1.0", f"plugin 'Pinned' requires kubeberth.framework API <1.0 but this kubeberth has API {API_VERSION}"),
    ("<1.1", f"plugin 'Pinned' requires kubeberth.framework API <1.1 but this kubeberth has API {API_VERSION}"),
    ("one point oh", "plugin 'Pinned': requires_api 'one point oh' is not a version specifier (e.g. \">=1.0,<2\")"),
])
def test_api_version_refusal(write: Callable[[str, str], Path], requires: str, refused: str | None) -> None:
    pinned(write, "requires_api", requires, refused)


@pytest.mark.parametrize("requires, refused", [
    (">=1.0,<2", None),
    ("~=1.0", None),
    (">=2.0", "plugin 'Pinned' requires kubeberth.framework.vector API >=2.0 but this kubeberth has API 1.0"),
    ("vector", "plugin 'Pinned': requires_vector_api 'vector' is not a version specifier (e.g. \">=1.0,<2\")"),
])
def test_vector_api_version_refusal(write: Callable[[str, str], Path], requires: str, refused: str | None) -> None:
    pinned(write, "requires_vector_api", requires, refused)


@pytest.mark.parametrize("body, why", [
    ("class Nameless(ScorePlugin):\n    pass\nPLUGINS = [Nameless]\n", "plugin class Nameless has no name"),
    ("class Pointless(Plugin):\n    name = 'Pointless'\nPLUGINS = [Pointless]\n",
     "plugin 'Pointless' extends no extension point"),
    ("PLUGINS = [dict]\n", "is not a subclass of kubeberth.framework.Plugin"),
    ("class BadArgs(ScorePlugin):\n    name = 'BadArgs'\n    args_model = dict\nPLUGINS = [BadArgs]\n",
     "args_model must be a pydantic BaseModel subclass"),
    ("class BadReads(ScorePlugin):\n    name = 'BadReads'\n    reads = ('PodGroup',)\nPLUGINS = [BadReads]\n",
     "reads must be a tuple of kubeberth.framework.ObjectKind"),
])
def test_malformed_plugin_classes_are_reported(write: Callable[[str, str], Path], body: str, why: str) -> None:
    path = write("odd.py", "from kubeberth.framework import Plugin, ScorePlugin\n" + body)
    got = loaded(str(path), entry_points=False)
    assert len(got.failures) == 1 and why in got.failures[0].error


def test_register_adds_to_the_process_registry_and_in_tree_stays_in_tree(
        write: Callable[[str, str], Path]) -> None:
    path = write("reg.py", score_plugin("Registered"))
    use_plugins([], entry_points=False)
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    register(namespace["Registered"])  # type: ignore[arg-type]
    assert plugin_registry().get("Registered") is not None
    assert in_tree_registry().get("Registered") is None
    with pytest.raises(PluginLoadError, match="already exists"):
        register(namespace["Registered"].__class__("Registered", (namespace["Registered"],), {}))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="not a subclass"):
        register(dict)  # type: ignore[arg-type]


def test_use_plugins_feeds_plugin_registry(write: Callable[[str, str], Path]) -> None:
    path = write("fed.py", score_plugin("Fed"))
    assert plugin_registry().get("Fed") is None
    use_plugins([str(path)], entry_points=False)
    spec = plugin_registry().get("Fed")
    assert spec is not None and spec.origin == f"path {path}"
    fw = build_framework(parse_spec(profile_with("Fed")), plugin_registry(), SchedulerContext())
    assert "Fed" in fw.plugins


def test_an_unknown_plugin_without_failures_does_not_exist() -> None:
    with pytest.raises(ConfigError) as err:
        build_framework(parse_spec(profile_with("Nope")), loaded(entry_points=False).registry, SchedulerContext())
    assert not isinstance(err.value, PluginUnavailable)
    assert err.value.detail == "plugin 'Nope' does not exist"


def test_the_operator_refuses_a_profile_naming_an_unavailable_plugin(write: Callable[[str, str], Path]) -> None:
    from kubeberth.operator.profiles import ProfileManager
    from kubeberth.scheduler import Scheduler

    path = write("broken.py", score_plugin("Broken") + "\nraise ImportError('libfoo.so: cannot open')\n")
    sched = Scheduler()
    manager = ProfileManager(sched, loaded(str(path), entry_points=False).registry)
    manager.apply("mine", {"metadata": {"name": "mine", "generation": 1}, "spec": profile_with("Broken")})
    manager.apply("other", {"metadata": {"name": "other", "generation": 1},
                            "spec": {"schedulerName": "other"}})
    verdict = manager.verdicts["mine"]
    assert (verdict.accepted, verdict.reason) == (False, "PluginUnavailable")
    assert verdict.message == (f"spec.plugins.score.enabled[0].name: plugin 'Broken' is unavailable: path {path}: "
                               "import failed: ImportError: libfoo.so: cannot open")
    assert manager.verdicts["other"].accepted and "other" in sched.profiles and "mine" not in sched.profiles


def test_a_plugin_whose_init_raises_refuses_its_profile(write: Callable[[str, str], Path]) -> None:
    source = score_plugin("Fragile").replace("        self.args = args\n",
                                             "        self.args = args\n        raise KeyError('kubeconfig')\n")
    path = write("fragile.py", source)
    with pytest.raises(PluginUnavailable) as err:
        build_framework(parse_spec(profile_with("Fragile")), loaded(str(path), entry_points=False).registry,
                        SchedulerContext())
    assert str(err.value) == '''initializing plugin "Fragile": KeyError: 'kubeconfig\''''
