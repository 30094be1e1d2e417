"""icefloe errors as the REST spec's error responses, and the spec's error types back.

Every non-2xx answer of the server is an ``IcebergErrorResponse``::

    {"error": {"message": "...", "type": "NoSuchTableException", "code": 404}}

The ``type`` names are the exception names Iceberg Java uses, which is what clients match on
(PyIceberg and DuckDB go by the status code). A stack trace is never sent: unexpected failures
are logged on the server and answered with a generic 500. A stored file that does not decode
(`CorruptFileError`) is a 500 ``InternalServerError`` naming the file (the table's own file, so
the name tells the client nothing its table's location does not).
"""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.errors import (
    AlreadyExistsError,
    CommitFailedError,
    CommitStateUnknownError,
    ConflictError,
    CorruptFileError,
    FileIOError,
    IcefloeError,
    InvalidMetadataError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotFoundError,
    UnsupportedFeatureError,
    ValidationError,
)

__all__ = ["HINT_MARK", "RestError", "bad_request", "error_body", "to_rest_error"]


@dataclass
class RestError(Exception):
    """An error answer: HTTP status, the spec's error type and a message for people."""

    status: int
    type: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return f"{self.status} {self.type}: {self.message}"


def error_body(status: int, type_: str, message: str) -> dict[str, object]:
    return {"error": {"message": message, "type": type_, "code": status}}


HINT_MARK = " (hint: "


def _message(e: IcefloeError) -> str:
    # the error model has no field for hints; clients split them off again (see HINT_MARK)
    return f"{e.message}{HINT_MARK}{e.hint})" if e.hint else e.message


def to_rest_error(e: IcefloeError) -> RestError:
    """The status and type an icefloe error is answered with."""
    message = _message(e)
    if e.context.get("status") == 403 and e.context.get("error_type") == "ForbiddenException":
        # a REST catalog behind this server refused the operation itself (icefloe's REST client
        # keeps the answer's status and type): the client is refused the same way
        return RestError(403, "ForbiddenException", message)
    if isinstance(e, NoSuchNamespaceError):
        return RestError(404, "NoSuchNamespaceException", message)
    if isinstance(e, NoSuchTableError):
        return RestError(404, "NoSuchTableException", message)
    if isinstance(e, NotFoundError):
        return RestError(404, "NotFoundException", message)
    if isinstance(e, AlreadyExistsError):
        return RestError(409, "AlreadyExistsException", message)
    if isinstance(e, NamespaceNotEmptyError):
        return RestError(409, "NamespaceNotEmptyException", message)
    if isinstance(e, CommitStateUnknownError):
        return RestError(500, "CommitStateUnknownException", message)
    if isinstance(e, CommitFailedError | ConflictError):
        return RestError(409, "CommitFailedException", message)
    if isinstance(e, UnsupportedFeatureError):
        return RestError(406, "UnsupportedOperationException", message)
    if isinstance(e, CorruptFileError) and e.context.get("path"):
        # a file the server holds (a table's own file) does not decode: the server's problem, not
        # the request's. Register, where the client names the file, answers 400 (`bad_request`).
        return RestError(500, "InternalServerError", message)
    if isinstance(e, ValidationError | InvalidMetadataError):
        # bad input: an unknown update, metadata the updates would break, a bad schema
        return RestError(400, "BadRequestException", message)
    if isinstance(e, FileIOError):
        if e.context.get("not_found"):
            # a metadata file the request names is missing (Java answers NotFoundException too)
            return RestError(404, "NotFoundException", message)
        # storage failed before any pointer moved: nothing was committed
        return RestError(503, "ServiceUnavailableException", message)
    return RestError(500, "InternalServerError", message)


def bad_request(e: IcefloeError) -> RestError:
    """A 400 for an error the request caused, whatever its kind."""
    return RestError(400, "BadRequestException", _message(e))
