"""Settings from LEDGER_* variables: each number refused with the variable's name, the unit and the text."""

from __future__ import annotations

import pytest

from api.settings import Settings


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LEDGER_MAX_BODY": "1.5"}, r"LEDGER_MAX_BODY must be a positive integer \(bytes\), got '1.5'"),
        ({"LEDGER_MAX_BATCH": "0"}, r"LEDGER_MAX_BATCH must be a positive integer \(events\), got '0'"),
        ({"LEDGER_MAX_STRING": "-3"}, r"LEDGER_MAX_STRING must be a positive integer \(characters\)"),
        ({"LEDGER_BODY_TIMEOUT": "inf"}, r"LEDGER_BODY_TIMEOUT must be a positive number of seconds"),
        ({"LEDGER_IDLE_TIMEOUT": "nan"}, r"LEDGER_IDLE_TIMEOUT must be a positive number of seconds"),
        ({"LEDGER_SCRUB_INTERVAL": "soon"}, r"LEDGER_SCRUB_INTERVAL must be a positive number of seconds"),
        ({"LEDGER_RATE_LIMIT": "-1"}, r"LEDGER_RATE_LIMIT must be a positive number of events per second"),
        ({"LEDGER_MAX_DECOMPRESSED": "2G"}, r"LEDGER_MAX_DECOMPRESSED must be a positive integer \(bytes\)"),
        ({"LEDGER_MAX_EXPANSION": "0"}, r"LEDGER_MAX_EXPANSION must be a positive number \(times\), got '0'"),
    ],
)
def test_bad_numbers_are_refused_with_name_unit_and_text(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.from_env(env)


@pytest.mark.parametrize(
    ("env", "field", "value"),
    [
        ({}, "max_batch", Settings().max_batch),
        ({"LEDGER_MAX_BATCH": " 7 "}, "max_batch", 7),
        ({"LEDGER_BODY_MIN_RATE": "4096"}, "body_min_rate", 4096),
        ({"LEDGER_BODY_TIMEOUT": "2.5"}, "body_timeout", 2.5),
        ({"LEDGER_RATE_LIMIT": "0"}, "rate_limit", 0.0),
        ({}, "max_decompressed", Settings().max_ingest_body),
        ({}, "max_expansion", 100),
        ({"LEDGER_MAX_DECOMPRESSED": "1048576"}, "max_decompressed", 1 << 20),
        ({"LEDGER_MAX_EXPANSION": "12.5"}, "max_expansion", 12.5),
    ],
)
def test_numbers_parse_or_default(env: dict[str, str], field: str, value: float) -> None:
    assert getattr(Settings.from_env(env), field) == value


@pytest.mark.parametrize(
    ("env", "metrics", "log_format"),
    [
        ({}, "on", "text"),
        ({"LEDGER_METRICS": "OFF", "LEDGER_LOG_FORMAT": " json "}, "off", "json"),
        ({"LEDGER_METRICS": "token", "LEDGER_LOG_FORMAT": "text"}, "token", "text"),
        ({"LEDGER_METRICS": "", "LEDGER_LOG_FORMAT": ""}, "on", "text"),
    ],
)
def test_metrics_and_log_format_parse_or_default(env: dict[str, str], metrics: str, log_format: str) -> None:
    settings = Settings.from_env(env)
    assert (settings.metrics, settings.log_format) == (metrics, log_format)
    assert settings.counting is (metrics != "off") and settings.json_logs is (log_format == "json")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LEDGER_METRICS": "yes"}, r"LEDGER_METRICS must be one of on, token, off, got 'yes'"),
        ({"LEDGER_LOG_FORMAT": "logfmt"}, r"LEDGER_LOG_FORMAT must be one of text, json, got 'logfmt'"),
    ],
)
def test_bad_choices_are_refused_with_name_choices_and_text(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.from_env(env)


HEX = "ab" * 32


@pytest.mark.parametrize(
    ("text", "pairs"),
    [
        (f'{{"{HEX}": ["Ada Lovelace", " A. Lovelace "]}}', ((HEX, "Ada Lovelace"), (HEX, "A. Lovelace"))),
        (f'{{"sha256:{HEX.upper()}": "Grace Hopper"}}', ((HEX, "Grace Hopper"),)),
        ("", ()),
    ],
)
def test_person_names_are_digests_to_names(text: str, pairs: tuple[tuple[str, str], ...]) -> None:
    assert Settings.from_env({"LEDGER_PERSON_NAMES": text}).person_names == pairs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Ada", "LEDGER_PERSON_NAMES must be a JSON object .* not JSON"),
        ('["Ada"]', "LEDGER_PERSON_NAMES must be a JSON object"),
        ('{"my-token": ["Ada"]}', "LEDGER_PERSON_NAMES: each key must be a token's sha256"),
        (f'{{"{HEX}": []}}', "LEDGER_PERSON_NAMES: abababababab...'s names must be"),
        (f'{{"{HEX}": [" "]}}', "LEDGER_PERSON_NAMES: abababababab...'s names must be"),
        (f'{{"{HEX}": 7}}', "LEDGER_PERSON_NAMES: abababababab...'s names must be"),
    ],
)
def test_bad_person_names_are_refused_naming_the_variable(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.from_env({"LEDGER_PERSON_NAMES": text})


def test_a_token_in_place_of_a_digest_is_not_echoed() -> None:
    with pytest.raises(ValueError) as refused:
        Settings.from_env({"LEDGER_PERSON_NAMES": '{"s3cret-token": "Ada"}'})
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    ("env", "at_once", "per_minute"),
    [
        ({}, 2, 20_000),
        ({"LEDGER_RESOLVE_AT_ONCE": "4", "LEDGER_RESOLVE_PER_MINUTE": "600"}, 4, 600),
        ({"LEDGER_RESOLVE_PER_MINUTE": "0"}, 2, 0),
    ],
)
def test_resolve_bounds_parse_or_default(env: dict[str, str], at_once: int, per_minute: int) -> None:
    settings = Settings.from_env(env)
    assert (settings.resolve_at_once, settings.resolve_per_minute) == (at_once, per_minute)


@pytest.mark.parametrize("env", [{"LEDGER_RESOLVE_AT_ONCE": "0"}, {"LEDGER_RESOLVE_PER_MINUTE": "-3"}])
def test_bad_resolve_bounds_are_refused_naming_the_variable(env: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=next(iter(env))):
        Settings.from_env(env)
