"""The request limits an OpenAIVideoClient deployment declares; imported only when it declares some."""

import os
from dataclasses import dataclass

from helm.common.request import Request

from helm_roboreward.clients.common import media_parts
from helm_roboreward.clients.file_transport import file_url
from helm_roboreward.core.request_limits import PlannedRequest, RequestLimits, declared_limits, limit_failure


@dataclass(frozen=True)
class DeclaredLimits(RequestLimits):
    """The declared limits, and whether the client sends its video by URL (not counted as base64)."""

    video_by_url: bool = False

    @classmethod
    def of(cls, max_images_per_prompt: int | None, max_videos_per_prompt: int | None, max_request_bytes: int | None,
           video_by_url: bool) -> "DeclaredLimits":
        """The limits of the declared (not None) arguments (ValueError: one is not a whole number >= 1)."""
        arguments = {"max_images_per_prompt": max_images_per_prompt, "max_videos_per_prompt": max_videos_per_prompt,
                     "max_request_bytes": max_request_bytes}
        fields = declared_limits({name: value for name, value in arguments.items() if value is not None},
                                 "OpenAIVideoClient")
        return cls(max_images=fields.get("max_images", 0), max_videos=fields.get("max_videos", 0),
                   max_request_bytes=fields.get("max_request_bytes", 0), video_by_url=video_by_url)

    def failure(self, request: Request) -> str | None:
        """Why ``request`` must not be sent under the limits (None: it fits); inline media count as base64."""
        if request.multimodal_prompt is None:
            return limit_failure(PlannedRequest(row="request", images=0, videos=0, media_file_bytes=(),
                                                text_bytes=len(request.prompt.encode("utf-8"))), self)
        parts = media_parts(request, "OpenAIVideoClient")
        by_url = [str(media.location) for kind, media in parts if kind == "video" and self.video_by_url]
        inline = [os.path.getsize(str(media.location)) for kind, media in parts
                  if kind != "text" and not (kind == "video" and self.video_by_url)]
        text = [media.text or "" for kind, media in parts if kind == "text"] + [file_url(path) for path in by_url]
        kinds = [kind for kind, _ in parts]
        return limit_failure(PlannedRequest(
            row="request", images=kinds.count("image"), videos=kinds.count("video"),
            media_file_bytes=tuple(size for size in inline if size),
            text_bytes=sum(len(piece.encode("utf-8")) for piece in text)), self)
