"""CNI errors: spec codes, the error JSON, and reading it back."""

from __future__ import annotations

import pytest

from pycni import errors
from pycni.errors import CNIError, error_from_dict

SPEC_CODES = {
    errors.IncompatibleVersion: 1,
    errors.UnsupportedField: 2,
    errors.UnknownContainer: 3,
    errors.InvalidEnvironment: 4,
    errors.IOFailure: 5,
    errors.DecodingFailure: 6,
    errors.InvalidNetworkConfig: 7,
    errors.InvalidNetNS: 8,
    errors.TryAgainLater: 11,
    errors.PluginNotAvailable: 50,
    errors.LimitedConnectivity: 51,
    errors.InternalError: 999,
}


@pytest.mark.parametrize(("cls", "code"), SPEC_CODES.items())
def test_each_class_carries_the_spec_code_and_round_trips(cls: type[CNIError], code: int) -> None:
    err = cls("something broke", "more words")
    assert err.code == code
    assert isinstance(err, CNIError)
    doc = err.to_dict("1.0.0")
    assert doc == {"cniVersion": "1.0.0", "code": code, "msg": "something broke",
                   "details": "more words"}
    back = error_from_dict(doc)
    assert type(back) is cls
    assert (back.msg, back.details) == ("something broke", "more words")


def test_details_are_omitted_when_empty() -> None:
    assert errors.IOFailure("disk").to_dict("0.4.0") == {
        "cniVersion": "0.4.0", "code": 5, "msg": "disk"}


def test_unknown_code_keeps_its_number() -> None:
    err = error_from_dict({"code": 117, "msg": "plugin specific"})
    assert err.code == 117
    assert err.msg == "plugin specific"
    assert err.to_dict("1.0.0")["code"] == 117


def test_garbage_error_json_still_gives_an_error() -> None:
    err = error_from_dict({"code": "seven", "msg": None})
    assert err.code == 999
    assert err.msg == ""


def test_str_includes_details() -> None:
    assert str(errors.InvalidNetNS("no netns", "/run/netns/x")) == "no netns; /run/netns/x"
