"""HttpClient 5 for Iceberg Java's RESTCatalog in the oracle's Spark.

The Iceberg Spark runtime jar the oracle uses (from PyPI) lacks the HttpClient 5 classes that the
upstream jar bundles under ``org.apache.iceberg.shaded.org.apache.hc``. Debian packages
HttpClient 5 (``libhttpclient5-java``, ``libhttpcore5-java``); this module copies those jars with
every class moved to the shaded package: each ``CONSTANT_Utf8`` entry of each class file (class
names, descriptors, signatures, strings) has the package prefix rewritten, and entries are
renamed. The result is added to Spark with ``ORACLE_EXTRA_JARS``.

Debian has HttpClient 5.2; Iceberg 1.10 is built against 5.5, whose
``ssl.TlsSocketStrategy`` interface (5.4+) its ``HTTPClient`` names on the path that installs a
custom TLS configurer (``rest.client.tls.configurer-impl``). The JVM's verifier loads that type
when it links ``HTTPClient``, so the jar gets an empty interface of that name; the path itself
runs only with a custom TLS configurer, which these tests do not use.

``python tests/interop/rest_java_jars.py OUT.jar`` builds it by hand.
"""

from __future__ import annotations

import struct
import sys
import zipfile
from pathlib import Path

DEBIAN_JARS = (
    "/usr/share/java/httpclient5.jar",
    "/usr/share/java/httpcore5.jar",
    "/usr/share/java/httpcore5-h2.jar",
)
OLD = (b"org/apache/hc/", b"org.apache.hc.")
NEW = (b"org/apache/iceberg/shaded/org/apache/hc/", b"org.apache.iceberg.shaded.org.apache.hc.")

# bytes taken by each constant-pool entry kind after its tag (Utf8 handled apart)
_ENTRY_SIZE = {
    3: 4,
    4: 4,
    5: 8,
    6: 8,
    7: 2,
    8: 2,
    9: 4,
    10: 4,
    11: 4,
    12: 4,
    15: 3,
    16: 2,
    17: 4,
    18: 4,
    19: 2,
    20: 2,
}


def _move(text: bytes) -> bytes:
    for old, new in zip(OLD, NEW, strict=True):
        text = text.replace(old, new)
    return text


def relocate_class(data: bytes) -> bytes:
    """The class file with the HttpClient package prefix moved in its constant pool."""
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    (count,) = struct.unpack_from(">H", data, 8)
    out = bytearray(data[:10])
    pos, index = 10, 1
    while index < count:
        tag = data[pos]
        if tag == 1:
            (length,) = struct.unpack_from(">H", data, pos + 1)
            text = _move(data[pos + 3 : pos + 3 + length])
            out += bytes([1]) + struct.pack(">H", len(text)) + text
            pos += 3 + length
        else:
            size = _ENTRY_SIZE[tag]
            out += data[pos : pos + 1 + size]
            pos += 1 + size
            if tag in (5, 6):  # long and double take two slots
                index += 1
        index += 1
    out += data[pos:]
    return bytes(out)


STUB_INTERFACES = ("org/apache/iceberg/shaded/org/apache/hc/client5/http/ssl/TlsSocketStrategy",)


def empty_interface(name: str) -> bytes:
    """A class file (Java 8 format) declaring ``public interface <name> {}``."""

    def utf8(text: str) -> bytes:
        raw = text.encode()
        return bytes([1]) + struct.pack(">H", len(raw)) + raw

    pool = (
        utf8(name)
        + bytes([7])
        + struct.pack(">H", 1)
        + utf8("java/lang/Object")
        + bytes([7])
        + struct.pack(">H", 3)
    )
    head = b"\xca\xfe\xba\xbe" + struct.pack(">HHH", 0, 52, 5)
    # access: public | interface | abstract; this = #2; super = #4; no interfaces/fields/methods/attributes
    return head + pool + struct.pack(">HHHHHHH", 0x0601, 2, 4, 0, 0, 0, 0)


def build(out: Path, jars: tuple[str, ...] = DEBIAN_JARS) -> Path:
    """Write the relocated jar to ``out`` (once; reused while it exists)."""
    missing = [j for j in jars if not Path(j).is_file()]
    if missing:
        raise FileNotFoundError(
            f"HttpClient 5 jars missing: {missing} (apt-get install libhttpclient5-java libhttpcore5-java)"
        )
    tmp = out.with_suffix(".tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as target:
        for jar in jars:
            with zipfile.ZipFile(jar) as source:
                for info in source.infolist():
                    name = info.filename
                    if name.startswith("META-INF/") and not name.startswith("META-INF/services/"):
                        continue
                    data = source.read(info)
                    new_name = _move(name.encode()).decode()
                    if name.endswith(".class"):
                        data = relocate_class(data)
                    elif name.startswith("META-INF/services/"):
                        data = _move(data)
                    if new_name in seen or info.is_dir():
                        continue
                    seen.add(new_name)
                    target.writestr(new_name, data)
        for stub in STUB_INTERFACES:
            if f"{stub}.class" not in seen:
                target.writestr(f"{stub}.class", empty_interface(stub))
    tmp.replace(out)
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))
