"""Compatibility suite: real phone-agent stacks' command sequences against sim phones."""
