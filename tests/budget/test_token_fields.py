"""The token fields of a call's usage are named once (``Usage``) and its prompt summed once (``prompt_tokens``)."""

from __future__ import annotations

import dataclasses

from hango.db.schema import usage_records
from hango.messages import TOKEN_FIELDS, Usage, prompt_tokens
from hango.providers.prices import Tokens
from hango.store.model_calls import REPORTED_PROMPT

USAGE = {"input_tokens": 1, "output_tokens": 20, "cache_read_tokens": 300, "cache_write_tokens": 4000}


def test_one_token_field_list_names_usage_the_usage_dict_the_columns_and_the_prices() -> None:
    assert tuple(f.name for f in dataclasses.fields(Usage)) == TOKEN_FIELDS
    assert set(TOKEN_FIELDS) <= set(usage_records.c.keys())
    assert Tokens.of(USAGE) == Tokens(input=1, cache_read=300, cache_write=4000, output=20)


def test_prompt_tokens_is_one_sum_for_a_usage_a_mapping_and_the_stored_columns() -> None:
    assert Usage(**USAGE).prompt_tokens == prompt_tokens(USAGE) == 4301
    assert Usage(**USAGE).total == 4321
    assert Tokens.of(USAGE).prompt == 4301
    summed = "usage_records.input_tokens + usage_records.cache_read_tokens + usage_records.cache_write_tokens"
    assert str(prompt_tokens(usage_records.c)) == summed
    assert str(REPORTED_PROMPT.element) == summed
