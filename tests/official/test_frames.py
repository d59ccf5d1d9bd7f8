"""``helm_roboreward.protocol.rules``: the official frame rule and its named options (PROTOCOL section 4)."""

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helm_roboreward.protocol.rules import (
    OFFICIAL_FRAMES_PER_SECOND,
    FrameOptions,
    frame_stride,
    scaled_size,
    select_frame_indices,
)

OFFICIAL = FrameOptions()
NTSC = float(Fraction(30000, 1001))  # 29.97002997...

# --------------------------------------------------------------------------- the official rule


def test_protocol_example_73_frames_at_10_fps() -> None:
    assert select_frame_indices(73, 10.0) == [0, 10, 20, 30, 40, 50, 60, 70]
    assert select_frame_indices(73, 10.0, OFFICIAL) == [0, 10, 20, 30, 40, 50, 60, 70]


@pytest.mark.parametrize(
    ("native_fps", "stride"),
    [
        (10.0, 10),
        (5.0, 5),
        (15.0, 15),
        (30.0, 30),
        (NTSC, 29),  # max(int(29.97 // 1), 1) = 29, not 30
        (29.97, 29),
        (23.976, 23),
        (59.94, 59),
        (10.5, 10),
        (1.0, 1),
        (1.999, 1),
        (0.5, 1),  # fps < 1 keeps every frame
        (0.01, 1),
        (0.0, 1),  # broken rate keeps every frame
        (-10.0, 1),
        (math.nan, 1),
        (math.inf, 1),
    ],
)
def test_official_stride(native_fps: float, stride: int) -> None:
    assert frame_stride(native_fps) == stride
    assert frame_stride(native_fps, OFFICIAL_FRAMES_PER_SECOND) == stride
    assert select_frame_indices(200, native_fps) == list(range(0, 200, stride))


def test_official_matches_reference_formula() -> None:
    for native_fps in [1.0, 4.9, 5.0, 7.5, 10.0, 12.0, 14.99, 15.0, 24.0, 25.0, NTSC, 30.0, 60.0, 120.0]:
        stride = max(int(native_fps // 1), 1)
        for num_frames in [1, 2, 9, 10, 11, 29, 30, 31, 73, 100, 301]:
            assert select_frame_indices(num_frames, native_fps) == list(range(0, num_frames, stride))


def test_ntsc_clip() -> None:
    assert select_frame_indices(100, NTSC) == [0, 29, 58, 87]


@pytest.mark.parametrize("native_fps", [0.5, 0.0, math.nan])
def test_every_frame_kept_when_rate_is_low_or_broken(native_fps: float) -> None:
    assert select_frame_indices(7, native_fps) == [0, 1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("num_frames", [0, -1, -100])
def test_no_frames(num_frames: int) -> None:
    assert select_frame_indices(num_frames, 10.0) == []
    assert select_frame_indices(num_frames, 10.0, FrameOptions(include_last_frame=True, max_frames=3)) == []


def test_single_frame() -> None:
    assert select_frame_indices(1, 10.0) == [0]
    assert select_frame_indices(1, 10.0, FrameOptions(include_last_frame=True)) == [0]
    assert select_frame_indices(1, 10.0, FrameOptions(include_last_frame=True, max_frames=1)) == [0]


def test_final_frame_not_forced_in_by_default() -> None:
    indices = select_frame_indices(73, 10.0)
    assert 72 not in indices
    assert indices[-1] == 70


def test_default_options_are_official() -> None:
    """The defaults are the official rule, and the run name names every option that changes it."""
    assert OFFICIAL.frames_per_second == 1.0
    assert OFFICIAL.include_last_frame is False
    assert OFFICIAL.max_frames == 0
    assert OFFICIAL.max_side == 0
    assert OFFICIAL.run_name_options() == []
    assert FrameOptions(include_last_frame=True).run_name_options() == ["last_frame=1"]
    assert FrameOptions(max_frames=8).run_name_options() == ["max_frames=8"]
    assert FrameOptions(max_side=512).run_name_options() == ["max_side=512"]
    assert FrameOptions(frames_per_second=2.0).run_name_options() == ["fps=2"]
    assert FrameOptions(frames_per_second=1) == OFFICIAL  # an int rate is the official one


# --------------------------------------------------------------------------- include_last_frame


def test_include_last_frame_appends_the_final_frame() -> None:
    options = FrameOptions(include_last_frame=True)
    assert select_frame_indices(73, 10.0, options) == [0, 10, 20, 30, 40, 50, 60, 70, 72]


def test_include_last_frame_does_not_duplicate() -> None:
    options = FrameOptions(include_last_frame=True)
    assert select_frame_indices(71, 10.0, options) == [0, 10, 20, 30, 40, 50, 60, 70]
    assert select_frame_indices(5, 0.0, options) == [0, 1, 2, 3, 4]


def test_include_last_frame_short_clip() -> None:
    assert select_frame_indices(9, 10.0, FrameOptions(include_last_frame=True)) == [0, 8]


# --------------------------------------------------------------------------- max_frames


def test_max_frames_evenly_spaced_keeps_first_and_last_selected() -> None:
    # uncapped: 0, 10, ..., 100 (11 frames); capped to 3: first, middle, last of the selection
    assert select_frame_indices(101, 10.0, FrameOptions(max_frames=3)) == [0, 50, 100]
    assert select_frame_indices(101, 10.0, FrameOptions(max_frames=2)) == [0, 100]


def test_max_frames_one_keeps_first_or_last() -> None:
    assert select_frame_indices(73, 10.0, FrameOptions(max_frames=1)) == [0]
    assert select_frame_indices(73, 10.0, FrameOptions(max_frames=1, include_last_frame=True)) == [72]


def test_max_frames_with_include_last_keeps_the_final_frame() -> None:
    options = FrameOptions(max_frames=4, include_last_frame=True)
    indices = select_frame_indices(73, 10.0, options)
    assert len(indices) == 4
    assert indices[0] == 0
    assert indices[-1] == 72
    assert set(indices) <= set(select_frame_indices(73, 10.0, FrameOptions(include_last_frame=True)))


def test_max_frames_not_reached_changes_nothing() -> None:
    assert select_frame_indices(73, 10.0, FrameOptions(max_frames=8)) == select_frame_indices(73, 10.0)
    assert select_frame_indices(73, 10.0, FrameOptions(max_frames=100)) == select_frame_indices(73, 10.0)


def test_max_frames_spacing_is_even() -> None:
    indices = select_frame_indices(1000, 0.0, FrameOptions(max_frames=11))  # every frame, then 11 of 1000
    assert indices[0] == 0 and indices[-1] == 999
    gaps = [b - a for a, b in zip(indices, indices[1:], strict=False)]
    assert max(gaps) - min(gaps) <= 1


# --------------------------------------------------------------------------- frames_per_second


@pytest.mark.parametrize(
    ("frames_per_second", "native_fps", "stride"),
    [
        (2.0, 10.0, 5),
        (0.5, 10.0, 20),
        (0.25, 10.0, 40),
        (5.0, 10.0, 2),
        (10.0, 10.0, 1),
        (20.0, 10.0, 1),  # more than native: every frame
        (3.0, 30.0, 10),
        (0.1, 3.0, 30),  # 3 / 0.1 = 29.999... in floating point; must still be 30
        (3.0, 10.0, 3),
        (2.0, NTSC, 14),
        (1.0, NTSC, 29),
        (2.0, 0.0, 1),
        (2.0, math.nan, 1),
    ],
)
def test_frames_per_second_option(frames_per_second: float, native_fps: float, stride: int) -> None:
    assert frame_stride(native_fps, frames_per_second) == stride
    options = FrameOptions(frames_per_second=frames_per_second)
    assert select_frame_indices(120, native_fps, options) == list(range(0, 120, stride))


# --------------------------------------------------------------------------- FrameOptions validation


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"frames_per_second": 0.0}, "fps"),
        ({"frames_per_second": -1.0}, "fps"),
        ({"frames_per_second": math.nan}, "fps"),
        ({"frames_per_second": math.inf}, "fps"),
        ({"max_frames": -1}, "max_frames"),
        ({"max_side": -1}, "max_side"),
        ({"max_side": 1}, "max_side"),
        ({"max_side": 15}, "max_side"),
        ({"jpeg_quality": 0}, "jpeg_quality"),
        ({"jpeg_quality": 101}, "jpeg_quality"),
    ],
)
def test_frame_options_validation(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        FrameOptions(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_side": 0}, {"max_side": 16}, {"jpeg_quality": 1}, {"jpeg_quality": 100}, {"max_frames": 1},
     {"frames_per_second": 1e-3}],
)
def test_frame_options_valid_edges(kwargs: dict) -> None:
    FrameOptions(**kwargs)


def test_the_frame_cache_key_covers_every_setting() -> None:
    from helm_roboreward.protocol.frame_cache import frames_key

    assert set(vars(FrameOptions())) == {"frames_per_second", "include_last_frame", "max_frames", "max_side",
                                         "jpeg_quality"}
    variants = [
        FrameOptions(),
        FrameOptions(frames_per_second=2.0),
        FrameOptions(include_last_frame=True),
        FrameOptions(max_frames=4),
        FrameOptions(max_side=64),
        FrameOptions(jpeg_quality=80),
    ]
    assert len({frames_key("0" * 64, options) for options in variants}) == len(variants)


# --------------------------------------------------------------------------- properties

native_rates = st.one_of(
    st.sampled_from([0.0, math.nan, 0.5, 1.0, 5.0, 10.0, 15.0, NTSC, 30.0, 60.0]),
    st.floats(min_value=0.01, max_value=240.0, allow_nan=False),
)
option_sets = st.builds(
    FrameOptions,
    frames_per_second=st.sampled_from([1.0, 0.25, 0.5, 2.0, 3.0, 7.5]),
    include_last_frame=st.booleans(),
    max_frames=st.sampled_from([0, 1, 2, 3, 8, 32]),
)


@settings(max_examples=300, deadline=None)
@given(num_frames=st.integers(min_value=0, max_value=3000), extra=st.integers(min_value=0, max_value=500),
       native_fps=native_rates)
def test_official_selection_is_prefix_stable(num_frames: int, extra: int, native_fps: float) -> None:
    shorter = select_frame_indices(num_frames, native_fps)
    longer = select_frame_indices(num_frames + extra, native_fps)
    assert longer[: len(shorter)] == shorter
    assert all(index >= num_frames for index in longer[len(shorter):])


@settings(max_examples=400, deadline=None)
@given(num_frames=st.integers(min_value=-3, max_value=3000), native_fps=native_rates, options=option_sets)
def test_selection_properties(num_frames: int, native_fps: float, options: FrameOptions) -> None:
    indices = select_frame_indices(num_frames, native_fps, options)
    if num_frames <= 0:
        assert indices == []
        return
    assert indices, "a video with frames must give at least one frame"
    assert all(b > a for a, b in zip(indices, indices[1:], strict=False)), "strictly increasing"
    assert 0 <= indices[0] and indices[-1] < num_frames, "within range"
    stride = frame_stride(native_fps, options.frames_per_second)
    uncapped = math.ceil(num_frames / stride) + (1 if options.include_last_frame else 0)
    assert len(indices) <= uncapped
    if options.max_frames:
        assert len(indices) <= options.max_frames
    if options.include_last_frame:
        assert indices[-1] == num_frames - 1
    if not (options.include_last_frame and options.max_frames == 1):
        assert indices[0] == 0


@settings(max_examples=300, deadline=None)
@given(num_frames=st.integers(min_value=1, max_value=3000), native_fps=native_rates, options=option_sets)
def test_cap_is_an_evenly_spaced_subset(num_frames: int, native_fps: float, options: FrameOptions) -> None:
    uncapped_options = FrameOptions(frames_per_second=options.frames_per_second,
                                    include_last_frame=options.include_last_frame)
    uncapped = select_frame_indices(num_frames, native_fps, uncapped_options)
    capped = select_frame_indices(num_frames, native_fps, options)
    assert set(capped) <= set(uncapped)
    expected_count = min(options.max_frames, len(uncapped)) if options.max_frames else len(uncapped)
    assert len(capped) == expected_count
    if options.max_frames >= 2 and len(uncapped) > options.max_frames:
        assert capped[0] == uncapped[0] and capped[-1] == uncapped[-1]


@settings(max_examples=300, deadline=None)
@given(num_frames=st.integers(min_value=1, max_value=5000), native_fps=native_rates)
def test_official_count(num_frames: int, native_fps: float) -> None:
    stride = frame_stride(native_fps)
    assert stride >= 1
    assert len(select_frame_indices(num_frames, native_fps)) == math.ceil(num_frames / stride)


# --------------------------------------------------------------------------- scaled_size


@pytest.mark.parametrize(
    ("width", "height", "max_side", "expected"),
    [
        (640, 480, 0, (640, 480)),
        (640, 480, 640, (640, 480)),
        (640, 480, 1000, (640, 480)),  # never upscale
        (640, 480, 320, (320, 240)),
        (480, 640, 320, (240, 320)),  # portrait
        (224, 224, 112, (112, 112)),
        (640, 368, 224, (224, 129)),  # 368 * 0.35 = 128.8
        (64, 48, 32, (32, 24)),
        (1000, 10, 16, (16, 2)),  # extreme aspect: at least 2 pixels
    ],
)
def test_scaled_size(width: int, height: int, max_side: int, expected: tuple) -> None:
    assert scaled_size(width, height, max_side) == expected


@settings(max_examples=300, deadline=None)
@given(width=st.integers(2, 4000), height=st.integers(2, 4000), max_side=st.integers(16, 2000))
def test_scaled_size_properties(width: int, height: int, max_side: int) -> None:
    new_width, new_height = scaled_size(width, height, max_side)
    assert max(new_width, new_height) <= max(max_side, 2)
    assert new_width <= width and new_height <= height
    if max(width, height) <= max_side:
        assert (new_width, new_height) == (width, height)
    else:
        assert max(new_width, new_height) == max_side
        # aspect ratio kept to within rounding
        if min(new_width, new_height) > 2:
            assert abs(new_width / new_height - width / height) <= (width / height) * 2 / min(new_width, new_height)
