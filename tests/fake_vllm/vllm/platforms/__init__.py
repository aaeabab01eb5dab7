from vllm.platforms.interface import Platform


class _StandInPlatform(Platform):
    device_name = "stand-in"


current_platform = _StandInPlatform()
