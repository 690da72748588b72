"""Tests of the provider adapters against local fake OpenAI / Anthropic servers."""
