"""What the in-process Qwen3-VL client can run on this machine: its video decoder, and accelerate for device_map.

transformers' processor decodes a video path with torchcodec only, which needs FFmpeg's shared libraries; PyAV
(:mod:`~helm_roboreward.clients.pyav_decoder`) runs where it cannot load (docs/clients.md, "Video decoder").
"""

import importlib.metadata

from helm_roboreward.clients.transformers_client import TransformersClientError

AUTO, TORCHCODEC, PYAV = "auto", "torchcodec", "pyav"
VIDEO_DECODERS = (AUTO, TORCHCODEC, PYAV)
INSTALL_HINT = 'pip install "helm-roboreward[transformers]" (transformers, torchcodec, accelerate)'
FFMPEG_HINT = "FFmpeg's shared libraries, which torchcodec loads (Debian/Ubuntu: apt-get install ffmpeg)"


def torchcodec_usable() -> bool:
    """Whether torchcodec is installed and loads FFmpeg, i.e. transformers' processor can decode a video path."""
    try:
        from transformers.utils import is_torchcodec_usable
    except ImportError:  # transformers < 5 (4.57, the official run's) has no such check: import torchcodec instead
        try:
            import torchcodec
            from torchcodec.decoders import VideoDecoder  # noqa: F401  (fails without FFmpeg before torchcodec 0.16)
        except Exception:  # torchcodec raises RuntimeError or OSError when its libraries do not load
            return False
        return getattr(torchcodec, "ffmpeg_major_version", 0) is not None
    return bool(is_torchcodec_usable("video"))


def check_environment(video_decoder: str, device_map: str | None) -> tuple[str, str]:
    """The decoder that runs for ``video_decoder`` (``auto``: torchcodec where it loads) and its version.

    Called under the client's lock: transformers' lazy modules are not safe to import from several threads at once.

    Raises:
        ValueError: ``video_decoder`` is not one of :data:`VIDEO_DECODERS`.
        TransformersClientError: ``torchcodec`` was asked for and cannot load, or ``device_map`` needs accelerate.
    """
    if video_decoder not in VIDEO_DECODERS:
        raise ValueError(f"TransformersQwen3VLClient: video_decoder must be one of {VIDEO_DECODERS}, got "
                         f"{video_decoder!r}")
    if video_decoder == PYAV or not torchcodec_usable():
        if video_decoder == TORCHCODEC:
            raise TransformersClientError(
                "TransformersQwen3VLClient: video_decoder='torchcodec', but torchcodec is not installed or cannot "
                f"load FFmpeg. Install: {INSTALL_HINT} and {FFMPEG_HINT}; or use video_decoder='auto' (PyAV where "
                "torchcodec cannot load).")
        chosen = PYAV, importlib.metadata.version("av")
    else:
        chosen = TORCHCODEC, importlib.metadata.version("torchcodec")
    import transformers.video_utils  # noqa: F401  (what the PyAV route reads)

    if device_map:
        from transformers.utils import is_accelerate_available

        if not is_accelerate_available():
            raise TransformersClientError(f"device_map={device_map!r} needs accelerate. Install: {INSTALL_HINT}.")
    return chosen
