"""The DistRL terminal UI: a Textual app and an MQTT client of the wire contract
(``distrl_sdk.wire``); it imports nothing from ``farm``. Start it with ``distrl tui``
or ``python -m tui``."""

__all__: list[str] = []
