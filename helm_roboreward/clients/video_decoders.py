"""Which decoder turns a video into frames for the in-process Qwen3-VL client: torchcodec (official) or PyAV.

transformers' processor decodes a video path with torchcodec only, which needs FFmpeg's shared libraries; PyAV
(:mod:`~helm_roboreward.clients.pyav_decoder`) runs where it cannot load (docs/clients.md, "Video decoder").
"""

import importlib.metadata

from helm.proxy.retry import NonRetriableException

AUTO = "auto"
TORCHCODEC = "torchcodec"
PYAV = "pyav"
VIDEO_DECODERS = (AUTO, TORCHCODEC, PYAV)

INSTALL_HINT = 'pip install "helm-roboreward[transformers]" (transformers, torchcodec, accelerate)'
FFMPEG_HINT = "FFmpeg's shared libraries, which torchcodec loads (Debian/Ubuntu: apt-get install ffmpeg)"


class VideoDecoderError(NonRetriableException):
    """The decoder asked for cannot run here."""


def torchcodec_usable() -> bool:
    """Whether torchcodec is installed and loads FFmpeg, i.e. transformers' processor can decode a video path."""
    try:
        from transformers.utils import is_torchcodec_usable
    except ImportError:  # transformers < 5 (4.57, the official run's) has no such check: import torchcodec instead
        return _torchcodec_imports()
    return bool(is_torchcodec_usable("video"))


def choose_video_decoder(video_decoder: str) -> tuple[str, str]:
    """The decoder that runs for ``video_decoder`` (``auto``: torchcodec where it loads) and its version.

    Raises:
        ValueError: ``video_decoder`` is not one of :data:`VIDEO_DECODERS`.
        VideoDecoderError: ``torchcodec`` was asked for and cannot load.
    """
    if video_decoder not in VIDEO_DECODERS:
        raise ValueError(f"TransformersQwen3VLClient: video_decoder must be one of {VIDEO_DECODERS}, got "
                         f"{video_decoder!r}")
    if video_decoder == PYAV or not torchcodec_usable():
        if video_decoder == TORCHCODEC:
            raise VideoDecoderError(
                "TransformersQwen3VLClient: video_decoder='torchcodec', but torchcodec is not installed or cannot "
                f"load FFmpeg. Install: {INSTALL_HINT} and {FFMPEG_HINT}; or use video_decoder='auto' (PyAV where "
                "torchcodec cannot load).")
        return PYAV, importlib.metadata.version("av")
    return TORCHCODEC, importlib.metadata.version("torchcodec")


def _torchcodec_imports() -> bool:
    try:
        import torchcodec
        from torchcodec.decoders import VideoDecoder  # noqa: F401  (fails without FFmpeg before torchcodec 0.16)
    except Exception:  # torchcodec raises RuntimeError or OSError when its libraries do not load
        return False
    return getattr(torchcodec, "ffmpeg_major_version", 0) is not None
