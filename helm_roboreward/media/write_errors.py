"""When the media folder cannot take the files (full disk, quota, permissions): the video itself is fine."""

import errno

from helm_roboreward.media.decoding import VideoError


class MediaWriteError(VideoError):
    """Media that could not be written; the message names the video and the folder."""

    fix = ("Free space on the disk holding the media folder, or choose another output folder (helm-run -o / "
           "roboreward prepare --output-path); the videos already prepared stay cached.")


def write_error(path: str, target: str, error: OSError) -> MediaWriteError:
    """The error for a failed write of ``path``'s media into ``target``, saying plainly when the disk is full."""
    reason = "the disk is full" if error.errno in (errno.ENOSPC, errno.EDQUOT) else "cannot write"
    return MediaWriteError(f"{path}: {reason}: {target} ({error.strerror or error})")


def unwritable_folder(media_dir: str, error: OSError) -> PermissionError:
    """The error when the media folder cannot be created or written at all (checked before any video)."""
    return PermissionError(
        f"cannot write to the media folder {media_dir} ({error.strerror or error}). "
        "Choose a writable output folder (helm-run -o / roboreward prepare --output-path)."
    )
