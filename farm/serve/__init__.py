"""Remote policy inference: an OpenAI-compatible server for VLM policies (``server``,
``distrl serve``) and the learner's adapter loader (``lora``). Farm hosts act through
:class:`distrl_sdk.policies.remote.RemotePolicy`."""
