"""A Django password validator that checks Pwned Passwords offline.

A drop-in for ``pwned_passwords_django.validators.PwnedPasswordsValidator``
(same arguments, error code and parameters) that answers from a seekless
index on this machine instead of the online range API::

    AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "seekless.django.PwnedPasswordsValidator"},
    ]
    SEEKLESS_PWNED = {"INDEX": "/var/lib/seekless/pwned.idx", "MIN_COUNT": 1}

``MIN_COUNT``: a password seen fewer times than this passes (default 1: any
listed password fails). When the index is missing or damaged the validator
logs at ERROR and falls back to Django's ``CommonPasswordValidator``, as the
online validator does when the API is unreachable.
"""

import logging
import threading
import typing

from django.conf import settings
from django.contrib.auth.password_validation import CommonPasswordValidator
from django.core.exceptions import ValidationError
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_variables

from . import CorruptIndexError, PwnedIndex

logger = logging.getLogger(__name__)

# A message: a string, or a lazy translation that becomes one.
Message = typing.Union[str, Promise]
# A message, or its (singular, plural) forms.
PluralMessage = typing.Union[Message, typing.Tuple[Message, Message], typing.Dict[str, Message]]

_lock = threading.Lock()
# The index opened for this process, by the settings it was opened with;
# None while no attempt has been made.
_opened: typing.Optional[typing.Tuple[typing.Any, typing.Optional[PwnedIndex]]] = None


def _config() -> typing.Dict[str, typing.Any]:
    config = getattr(settings, "SEEKLESS_PWNED", None) or {}
    return {"INDEX": config.get("INDEX"), "MIN_COUNT": int(config.get("MIN_COUNT", 1))}


def get_index() -> typing.Optional[PwnedIndex]:
    """The index named by ``SEEKLESS_PWNED["INDEX"]``, opened once per
    process (again only if the setting changes); None, logged at ERROR,
    when it is not set, missing or damaged."""
    global _opened
    path = _config()["INDEX"]
    with _lock:
        if _opened is not None and _opened[0] == path:
            return _opened[1]
        index = None
        if not path:
            logger.error("SEEKLESS_PWNED['INDEX'] is not set: no Pwned Passwords index to check against")
        else:
            try:
                index = PwnedIndex(path)
            except (OSError, ValueError, CorruptIndexError) as error:
                logger.error("Cannot open the Pwned Passwords index %s: %s", path, error)
        _opened = (path, index)
        return index


def reset() -> None:
    """Forgets the opened index, so the next check opens it again (after
    the file was replaced, or in tests)."""
    global _opened
    with _lock:
        if _opened is not None and _opened[1] is not None:
            _opened[1].close()
        _opened = None


class PwnedPasswordsValidator:
    """Rejects passwords found in the Pwned Passwords corpus, offline."""

    default_error_message = _("This password is too common.")

    def __init__(
        self,
        error_message: typing.Optional[PluralMessage] = None,
        help_message: typing.Optional[Message] = None,
    ):
        self.fallback_validator = CommonPasswordValidator()
        self.help_message = help_message or self.fallback_validator.get_help_text()
        error_message = error_message or self.default_error_message
        if isinstance(error_message, (str, Promise)):
            singular, plural = error_message, error_message
        elif isinstance(error_message, dict):
            # As deconstruct() gives it back to a migration.
            singular, plural = error_message["singular"], error_message["plural"]
        else:
            singular, plural = error_message
        self.error_message = {"singular": singular, "plural": plural}

    # Django has no type information: the decorator is Any to mypy.
    @sensitive_variables()  # type: ignore[untyped-decorator]
    def validate(self, password: str, user: typing.Any = None) -> None:
        """Raises ``ValidationError`` (code ``password_compromised``,
        ``params={"amount": count}``) when the password is listed."""
        index = get_index()
        amount = None
        if index is not None:
            try:
                amount = index.count(password)
            except (OSError, ValueError, CorruptIndexError) as error:
                logger.error("Pwned Passwords index lookup failed: %s", error)
        if amount is None:
            logger.error("Falling back to Django CommonPasswordValidator: no usable Pwned Passwords index.")
            self.fallback_validator.validate(password)
            return
        if amount and amount >= _config()["MIN_COUNT"]:
            raise ValidationError(
                ngettext(self.error_message["singular"], self.error_message["plural"], amount),
                params={"amount": amount},
                code="password_compromised",
            )

    def get_help_text(self) -> Message:
        return self.help_message

    def deconstruct(self) -> typing.Tuple[str, typing.Tuple[()], typing.Dict[str, typing.Any]]:
        """For migrations: only the messages are kept."""
        return (
            "seekless.django.PwnedPasswordsValidator",
            (),
            {"help_message": self.help_message, "error_message": self.error_message},
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PwnedPasswordsValidator):
            return NotImplemented
        return self.error_message == other.error_message and self.help_message == other.help_message
