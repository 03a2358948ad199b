"""The checks the documents share: types, keys, bounds and where they are."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ibsnmp.agent.config import ConfigError
from ibsnmp.documents import (
    JSON,
    DocumentError,
    boolean,
    check_keys,
    choice,
    expect,
    hex_digits,
    hex_number,
    integer,
    lookup,
    number,
    text,
    type_name,
)
from ibsnmp.mqtt.fields import PayloadError
from ibsnmp.providers.scenario import ScenarioError
from ibsnmp.state.overrides import StateFormatError


def _problem(check: Callable[..., object], *args: Any, **kwargs: Any) -> DocumentError:
    with pytest.raises(DocumentError) as caught:
        check(*args, **kwargs)
    return caught.value


def test_the_message_is_document_key_path_and_problem() -> None:
    error = DocumentError("must not be negative", "limits.max_varbinds", "agent.toml")
    assert str(error) == "agent.toml: limits.max_varbinds: must not be negative"
    assert (error.document, error.where, error.problem) == \
        ("agent.toml", "limits.max_varbinds", "must not be negative")
    assert str(DocumentError("malformed JSON")) == "malformed JSON"
    assert str(DocumentError.at("ports[0].num", "missing")) == "ports[0].num: missing"


@pytest.mark.parametrize("error", [ConfigError, StateFormatError, PayloadError])
def test_each_document_error_is_one_and_a_value_error(error: type[DocumentError]) -> None:
    made = error.at("events[2].port", "missing")
    assert isinstance(made, DocumentError) and isinstance(made, ValueError)
    assert type(made) is error and made.where == "events[2].port"
    assert str(error("the whole message")) == "the whole message"


def test_a_scenario_error_keeps_its_file_event_and_key() -> None:
    error = ScenarioError("s.toml", "missing", 3, "port-down", "port")
    assert isinstance(error, DocumentError)
    assert str(error) == "s.toml: event 3 (port-down), key 'port': missing"
    assert (error.path, error.event, error.key, error.problem) == ("s.toml", 3, "port", "missing")


def test_a_boolean_is_not_an_integer() -> None:
    assert integer(7, "retries") == 7
    assert str(_problem(integer, True, "retries")) == "retries: expected an integer, got a boolean"
    assert "got a boolean" in str(_problem(expect, False, int, "x"))
    assert "expected a number, got a boolean" in str(_problem(number, True, "rate"))


def test_a_type_is_named_in_the_document_language() -> None:
    assert type_name({}) == "a table" and type_name({}, JSON) == "an object"
    values: tuple[object, ...] = (True, "s", 1, 1.5, [], None)
    assert [type_name(v) for v in values] == \
        ["a boolean", "a string", "an integer", "a float", "an array", "null"]
    assert str(_problem(expect, [], dict, "sm", syntax=JSON)) == "sm: expected an object, got an array"
    assert str(_problem(expect, 5, dict, "limits")) == "limits: expected a table, got an integer"


def test_a_refused_value_is_never_quoted() -> None:
    secret = "community-s3cret"
    for check, args in ((integer, ()), (number, ()), (boolean, ()), (choice, (("read", "write"),)),
                        (hex_number, (64,)), (hex_digits, (16,)), (text, ())):
        error = _problem(check, secret if check is not text else [secret], "key", *args)
        assert secret not in str(error), check.__name__


def test_an_unknown_key_is_named_with_its_path_and_the_keys_allowed() -> None:
    check_keys({"max_varbinds": 8}, ("max_varbinds", "walk_cache"), "limits")
    error = _problem(check_keys, {"max_varbinds": 8, "max_varbind": 1}, ("max_varbinds", "walk_cache"),
                     "limits")
    assert str(error) == "limits.max_varbind: unknown key (expected one of: max_varbinds, walk_cache)"
    assert _problem(check_keys, {"lisen": 1}, ("listen",), "").where == "lisen"


@pytest.mark.parametrize("value, low, high, words", [
    (-1, 0, None, "must not be negative"),
    (0, 1, None, "must be at least 1"),
    (70000, None, 65535, "must be at most 65535"),
    (300, 0, 254, "300 is out of range 0..254"),
    (-1, 0, (1 << 64) - 1, "-1 is out of range 0..0xffffffffffffffff"),
    (2_000_000_000, 0, 1_000_000_000, "2000000000 is out of range 0..1000000000"),  # not a mask: decimal
])
def test_integer_bounds(value: int, low: int | None, high: int | None, words: str) -> None:
    assert str(_problem(integer, value, "k", low=low, high=high)) == f"k: {words}"


def test_integer_bounds_are_inclusive() -> None:
    assert integer(0, "k", low=0, high=254) == 0 and integer(254, "k", low=0, high=254) == 254


def test_number_bounds_and_finiteness() -> None:
    assert number(3, "t", low=0) == 3.0 and isinstance(number(3, "t"), float)
    assert number(0.001, "rate", low=0.001) == 0.001
    assert str(_problem(number, 0.0005, "rate", low=0.001)) == "rate: must be at least 0.001"
    assert str(_problem(number, 0, "period", above=0.0)) == "period: must be more than 0"
    assert number(0.5, "period", above=0.0) == 0.5
    assert "expected a finite number" in str(_problem(number, float("nan"), "t"))
    assert "expected a finite number" in str(_problem(number, float("inf"), "t", low=0))
    assert str(_problem(number, "fast", "rate")) == "rate: expected a number, got a string"


def test_text_limits() -> None:
    assert text("é" * 127, "name", max_octets=254) == "é" * 127
    assert str(_problem(text, "é" * 128, "name", max_octets=255)) == "name: longer than 255 octets"
    assert str(_problem(text, "a\nb", "name", printable=True)) == "name: contains control characters"
    assert text("a\nb", "name") == "a\nb"
    assert str(_problem(text, 5, "name")) == "name: expected a string, got an integer"


def test_boolean_refuses_zero_and_one() -> None:
    assert boolean(False, "grh") is False
    assert str(_problem(boolean, 1, "grh")) == "grh: expected true or false, got an integer"


def test_choice_lists_the_choices() -> None:
    assert choice("2c", "version", ("1", "2c", "3")) == "2c"
    assert str(_problem(choice, "2", "version", ("1", "2c", "3"))) == 'version: expected "1", "2c" or "3"'
    assert str(_problem(choice, 1, "access", ("read", "write"))) == 'access: expected "read" or "write"'


def test_lookup_gives_what_the_choice_means() -> None:
    admin = {"enable": False, "disable": True}
    assert lookup("disable", "sm[0].admin", admin) is True
    assert str(_problem(lookup, "off", "sm[0].admin", admin)) == 'sm[0].admin: expected "enable" or "disable"'


def test_hex_number_takes_up_to_its_bits() -> None:
    assert hex_number("0x8001", "pkey", 16) == 0x8001 and hex_number("FFFF", "pkey", 16) == 0xFFFF
    assert str(_problem(hex_number, "0x18001", "pkey", 16)) == "pkey: more than 16 bits"
    assert str(_problem(hex_number, "0x" + "f" * 100, "guid", 64)) == "guid: more than 64 bits"
    assert str(_problem(hex_number, "-0x1", "pkey", 16)) == "pkey: expected a hexadecimal number"
    assert str(_problem(hex_number, "zz", "pkey", 16)) == "pkey: expected a hexadecimal number"
    assert "got an integer" in str(_problem(hex_number, 5, "pkey", 16))


def test_hex_digits_takes_one_spelling_only() -> None:
    assert hex_digits("0002c90300a1b2c3", "guid", 16) == 0x0002C90300A1B2C3
    for spelling in ("0x02c90300a1b2c3", "0002C90300A1B2C3", "2c90300a1b2c3"):
        assert str(_problem(hex_digits, spelling, "guid", 16)) == "guid: expected 16 lower-case hex digits"
    assert str(_problem(hex_digits, 7, "guid", 16, syntax=JSON)) == \
        "guid: expected 16 lower-case hex digits, got an integer"


def test_the_fail_given_makes_the_error() -> None:
    with pytest.raises(PayloadError, match=r"^ports\[0\]\.num: must be at most 255$"):
        integer(300, "ports[0].num", PayloadError.at, high=255)

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(problem, key, "agent.toml")

    with pytest.raises(ConfigError, match=r"^agent\.toml: traps\.if_mib: expected true or false"):
        boolean("yes", "traps.if_mib", fail)

