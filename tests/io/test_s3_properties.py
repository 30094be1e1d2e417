"""Iceberg's S3 property names become the options of pyarrow's S3 client (no server needed: the
client is built, not used). The same settings against a live store: tests/io/test_s3.py."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.errors import ConfigError
from icefloe.io import load_file_io


def s3_options(**properties: str) -> dict[str, Any]:
    io = load_file_io(properties, "s3://bucket/wh")
    fs, path = io.resolve("s3://bucket/wh/t/f.parquet")  # type: ignore[attr-defined]
    assert path == "bucket/wh/t/f.parquet"
    options: dict[str, Any] = fs.__reduce__()[1][0]
    return options


def test_iceberg_names() -> None:
    o = s3_options(
        **{
            "s3.endpoint": "http://127.0.0.1:9000",
            "s3.access-key-id": "AKID",
            "s3.secret-access-key": "SECRET",
            "s3.session-token": "TOKEN",
            "s3.region": "eu-west-1",
            "s3.path-style-access": "true",
            "s3.connect-timeout": "2.5",
            "s3.request-timeout": "30",
            "s3.proxy-uri": "http://proxy.internal:3128",
        }
    )
    assert (o["endpoint_override"], o["scheme"]) == ("127.0.0.1:9000", "http")
    assert (o["access_key"], o["secret_key"], o["session_token"]) == ("AKID", "SECRET", "TOKEN")
    assert o["region"] == "eu-west-1" and o["force_virtual_addressing"] is False
    assert (o["connect_timeout"], o["request_timeout"]) == (2.5, 30.0)
    assert o["proxy_options"]["scheme"] == "http" and o["proxy_options"]["host"] == "proxy.internal"


def test_role_to_assume(monkeypatch: pytest.MonkeyPatch) -> None:
    # pyarrow builds an STS client for a role right away (seconds): only the arguments are checked
    import pyarrow.fs as pafs

    seen: dict[str, Any] = {}
    monkeypatch.setattr(pafs, "S3FileSystem", lambda **kwargs: seen.update(kwargs))
    load_file_io(
        {"s3.role-arn": "arn:aws:iam::1:role/lake", "s3.role-session-name": "ice"}, "s3://b/w"
    ).resolve("s3://b/w/f")  # type: ignore[attr-defined]
    assert (seen["role_arn"], seen["session_name"]) == ("arn:aws:iam::1:role/lake", "ice")


def test_client_properties_are_fallbacks() -> None:
    """What REST catalogs vend (Iceberg Java's AwsClientProperties): ``client.*`` beside ``s3.*``."""
    o = s3_options(
        **{
            "client.region": "us-west-2",
            "client.access-key-id": "CLIENT",
            "client.secret-access-key": "CLIENT-SECRET",
            "client.session-token": "CLIENT-TOKEN",
        }
    )
    assert (o["region"], o["access_key"], o["secret_key"]) == ("us-west-2", "CLIENT", "CLIENT-SECRET")
    assert o["session_token"] == "CLIENT-TOKEN"
    both = s3_options(
        **{
            "client.region": "us-west-2",
            "s3.region": "eu-north-1",
            "s3.access-key-id": "S3",
            "s3.secret-access-key": "x",
        }
    )
    assert (both["region"], both["access_key"]) == ("eu-north-1", "S3")


def test_addressing_style() -> None:
    assert s3_options(**{"s3.path-style-access": "false"})["force_virtual_addressing"] is True
    assert s3_options(**{"s3.force-virtual-addressing": "true"})["force_virtual_addressing"] is True
    assert s3_options(**{"s3.force-virtual-addressing": "false"})["force_virtual_addressing"] is False


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("s3.connect-timeout", "soon", "positive number of seconds"),
        ("s3.request-timeout", "0", "positive number of seconds"),
        ("s3.remote-signing-enabled", "true", "vend credentials"),
    ],
)
def test_unusable_settings_are_config_errors(key: str, value: str, match: str) -> None:
    with pytest.raises(ConfigError) as e:
        s3_options(**{key: value})
    assert e.value.context["property"] == key
    assert match in (e.value.hint or "")
