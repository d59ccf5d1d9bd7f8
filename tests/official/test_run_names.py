"""Run names: every non-default argument appears exactly, so two different configurations never share a folder.

HELM writes a run into ``runs/<suite>/<run name>/``; two entries whose names collide overwrite each other. The
names are built in ``helm_roboreward/helm_frontend/run_specs.py`` (subset, data label, revision, video, failed) and
``helm_frontend/routing.py`` (the final video mode, the frame options of ``FrameOptions.run_name_options``, the
options served by option deployments).
"""

import math
from pathlib import Path

import pytest
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA
from helm.benchmark.run_spec import RunSpec
from helm.benchmark.run_spec_factory import construct_run_specs
from helm.common.object_spec import parse_object_spec
from hypothesis import given, settings
from hypothesis import strategies as st

import helm_roboreward.helm_frontend.plugin  # noqa: F401  (what helm-run's entry point loading does)
from helm_roboreward.helm_frontend.run_specs import get_roboreward_spec
from helm_roboreward.protocol.rules import FrameOptions

CONSTANT = "baseline/constant-3"


@pytest.fixture(scope="module", autouse=True)
def _helm_builtins() -> None:
    if "openai/gpt-5-mini-2025-08-07" not in MODEL_NAME_TO_MODEL_METADATA:
        register_builtin_configs_from_helm_package()


def expand_one(description: str) -> RunSpec:
    specs = construct_run_specs(parse_object_spec(description))
    assert len(specs) == 1, [spec.name for spec in specs]
    return specs[0]


def name_parts(name: str) -> dict[str, str]:
    """``roboreward:a=1,b=2`` -> ``{"a": "1", "b": "2"}``."""
    return dict(part.split("=", 1) for part in name.split(":", 1)[1].split(","))


@pytest.mark.parametrize(("first", "second"), [
    ("0.25", "0.2500001"),
    ("1", "1.0000001"),
    ("1e-7", "1.0000001e-7"),
    ("2", "2.000000000001"),
    ("0.5", "0.50000000000001"),
])
def test_entries_differing_only_in_fps_get_different_names(first: str, second: str) -> None:
    one = expand_one(f"roboreward:subset=bridge,fps={first},model={CONSTANT}")
    other = expand_one(f"roboreward:subset=bridge,fps={second},model={CONSTANT}")
    assert one.name != other.name
    for spec, text in ((one, first), (other, second)):
        shown = name_parts(spec.name).get("fps", "1")  # fps=1 is the default: not in the name
        assert float(shown) == float(text) == spec.scenario_spec.args.get("frames_per_second", 1.0)


@pytest.mark.parametrize(("fps", "shown"), [(2, "2"), (2.0, "2"), (0.5, "0.5"), (0.25, "0.25"), (4.0, "4"),
                                            (0.1, "0.1"), (1e-7, "1e-07"), (30.0, "30")])
def test_common_fps_values_keep_their_names(fps: float, shown: str) -> None:
    assert FrameOptions(frames_per_second=fps).run_name_options() == [f"fps={shown}"]


positive_floats = st.floats(min_value=5e-324, max_value=1.7e308, allow_nan=False, allow_infinity=False)


@settings(max_examples=2000, deadline=None)
@given(fps=positive_floats)
def test_fps_in_the_name_round_trips(fps: float) -> None:
    parts = FrameOptions(frames_per_second=fps).run_name_options()
    if fps == 1.0:
        assert parts == []
        return
    assert len(parts) == 1 and parts[0].startswith("fps=")
    text = parts[0][len("fps="):]
    assert float(text) == fps
    assert "," not in text and "/" not in text and " " not in text


@settings(max_examples=1000, deadline=None)
@given(first=positive_floats, second=positive_floats)
def test_different_fps_never_share_a_name(first: float, second: float) -> None:
    names = [FrameOptions(frames_per_second=value).run_name_options() for value in (first, second)]
    assert (names[0] == names[1]) == (first == second)


@settings(max_examples=500, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False))
def test_exact_number_round_trips_every_finite_float(value: float) -> None:
    from helm_roboreward.protocol.rules import exact_number

    text = exact_number(value)
    assert float(text) == value
    if value.is_integer() and abs(value) < 1e16:
        assert text == str(int(value))  # integral values read like integers (fps=2, not fps=2.0)


def test_every_frame_option_appears_exactly() -> None:
    spec = expand_one(f"roboreward:subset=bridge,fps=0.3333333333333333,last_frame=1,max_frames=123456789,"
                      f"max_side=4097,model={CONSTANT}")
    parts = name_parts(spec.name)
    assert float(parts["fps"]) == 0.3333333333333333
    assert (parts["last_frame"], parts["max_frames"], parts["max_side"]) == ("1", "123456789", "4097")


def test_frame_options_survive_a_later_switch_from_native_to_frames() -> None:
    # model first (a native-video model), then a deployment whose client cannot send video: routing rebuilds the
    # name from the scenario arguments, with the exact fps.
    spec = expand_one("roboreward:subset=bridge,fps=0.2500001,model=qwen/qwen2.5-vl-7b-instruct,"
                      "model_deployment=huggingface/qwen2.5-vl-7b-instruct")
    parts = name_parts(spec.name)
    assert parts["video"] == "frames" and float(parts["fps"]) == 0.2500001


@pytest.mark.parametrize(("first", "second"), [
    ("refs/pr/1", "refs_pr_1"),
    ("refs/pr/1", "refs%2Fpr%2F1"),
    ("v1.0", "v1.0%"),
])
def test_revisions_get_distinct_slash_free_names(first: str, second: str) -> None:
    names: list[str] = []
    for revision in (first, second):
        spec = get_roboreward_spec(subset="bridge", revision=revision)
        assert "/" not in spec.name, spec.name
        assert spec.scenario_spec.args["revision"] == revision  # the scenario gets the revision as given
        names.append(spec.name)
    assert names[0] != names[1]


def test_ordinary_revisions_keep_their_names() -> None:
    spec = get_roboreward_spec(subset="bridge", revision="v1.0")
    assert spec.name == "roboreward:subset=bridge,revision=v1.0,video=auto"
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert f"revision={sha}," in get_roboreward_spec(subset="bridge", revision=sha).name


@pytest.mark.parametrize("subset", ["../../outside", "a/b", "..", ".", "a\\b", "", "x\x00y"])
def test_a_subset_that_is_not_a_folder_name_is_refused(subset: str, tmp_path: Path) -> None:
    # A local copy accepts any subset id, but one with a path separator would put the run folder
    # (runs/<suite>/<run name>/) somewhere else: refused before HELM creates it.
    with pytest.raises(ValueError, match=r"subset=.* is not a subset id"):
        get_roboreward_spec(subset=subset, data=str(tmp_path))


def test_integral_and_huge_fps_values() -> None:
    assert FrameOptions(frames_per_second=1e16).run_name_options() == ["fps=1e+16"]
    assert FrameOptions(frames_per_second=123456789.0).run_name_options() == ["fps=123456789"]
    assert math.isclose(float(FrameOptions(frames_per_second=1 / 3).run_name_options()[0][4:]), 1 / 3, rel_tol=0)


@pytest.mark.parametrize("options", ["", ",decoding=greedy", ",layout=one_message", ",score=expected"])
def test_a_deployment_helm_generates_routes_and_has_no_option_deployment(options: str) -> None:
    """HELM builds some deployments from their name's prefix (``openai/gpt-4o``) without registering them."""
    from helm.benchmark.model_deployment_registry import DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT

    assert "openai/gpt-4o" not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT  # generated on lookup, never registered
    spec = expand_one(f"roboreward:subset=sim_panda,data=sample{options},model=openai/gpt-4o")
    assert spec.adapter_spec.model_deployment == "openai/gpt-4o"
    assert spec.name.startswith("roboreward:subset=sim_panda,data=sample,video=frames") and "decoding" not in spec.name
