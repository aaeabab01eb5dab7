"""vLLM release profiles: which block-size and NIXL rules are in force for a release.

The one place that decides release-dependent behaviour. Each profile records facts read
from that release's published source (``pip download vllm==X --no-deps``).
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from kvalign.errors import InvalidSettings


@dataclass(frozen=True)
class Profile:
    """Rules of one vLLM release line.

    Attributes:
        name: profile name shown to users (e.g. ``"0.33"``).
        first: first release the profile applies to.
        nixl_hetero_hybrid: NIXL accepts different P/D block sizes for hybrid models.
        nixl_gcd_split: NIXL splits non-multiple block sizes into gcd-sized units
            (``nixl/base_worker.py`` ``_split_remote_blocks``).
        nixl_split_limit: most units one block may be split into (``_MAX_HYBRID_BLOCK_SPLIT``).
    """

    name: str
    first: str
    nixl_hetero_hybrid: bool
    nixl_gcd_split: bool
    nixl_split_limit: int


#: known profiles, oldest first. The newest is the default.
PROFILES: tuple[Profile, ...] = (
    Profile(
        name="0.33",
        first="0.33.0",
        nixl_hetero_hybrid=True,
        nixl_gcd_split=True,
        nixl_split_limit=128,
    ),
)

DEFAULT_PROFILE = PROFILES[-1]


@dataclass(frozen=True)
class Resolved:
    """A profile chosen for a requested version, with a note on how it was chosen."""

    profile: Profile
    note: str


def resolve(version: str | None) -> Resolved:
    """The profile for ``--vllm-version`` (``None`` → the newest profile).

    Versions newer than every profile use the newest with a warning note; versions older
    than every profile are refused.

    Raises:
        InvalidSettings: an unparsable version, or one older than every profile.
    """
    if version is None:
        return Resolved(DEFAULT_PROFILE, f"vLLM {DEFAULT_PROFILE.name} rules (default profile)")
    try:
        wanted = Version(version.strip().lstrip("v"))
    except InvalidVersion:
        raise InvalidSettings(f"--vllm-version: {version!r} is not a version like 0.33.0") from None
    chosen: Profile | None = None
    for profile in PROFILES:
        if wanted >= Version(profile.first):
            chosen = profile
    if chosen is None:
        raise InvalidSettings(
            f"--vllm-version {version}: older than every profile kvalign knows "
            f"(oldest: {PROFILES[0].first})"
        )
    newest = Version(DEFAULT_PROFILE.first)
    if chosen is DEFAULT_PROFILE and wanted.release[:2] > newest.release[:2]:
        return Resolved(
            chosen,
            f"warning: vLLM {version} is newer than every profile; using the {chosen.name} rules",
        )
    return Resolved(chosen, f"vLLM {chosen.name} rules (for --vllm-version {version})")
