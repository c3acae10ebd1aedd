"""seekless.django.PwnedPasswordsValidator inside a configured Django."""

import logging

import django
import pytest
from django.conf import settings

if not settings.configured:
    settings.configure(
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes"],
        DATABASES={},
        USE_I18N=True,
        AUTH_PASSWORD_VALIDATORS=[{"NAME": "seekless.django.PwnedPasswordsValidator"}],
        SEEKLESS_PWNED={},
    )
    django.setup()

from django.contrib.auth.password_validation import (  # noqa: E402
    get_default_password_validators,
    password_validators_help_texts,
    validate_password,
)
from django.core.exceptions import ValidationError  # noqa: E402
from django.test import override_settings  # noqa: E402

import seekless.django  # noqa: E402
from seekless.django import PwnedPasswordsValidator  # noqa: E402


@pytest.fixture(autouse=True)
def fresh():
    seekless.django.reset()
    yield
    seekless.django.reset()


def codes(error: ValidationError):
    return [(e.code, e.params) for e in error.error_list]


def test_listed_password_fails_with_code_and_amount(sha1_index):
    with override_settings(SEEKLESS_PWNED={"INDEX": str(sha1_index)}):
        assert isinstance(get_default_password_validators()[0], PwnedPasswordsValidator)
        with pytest.raises(ValidationError) as caught:
            validate_password("password")
        assert codes(caught.value) == [("password_compromised", {"amount": 9545824})]
        assert caught.value.messages == ["This password is too common."]
        with pytest.raises(ValidationError) as caught:
            validate_password("letmein")
        assert codes(caught.value) == [("password_compromised", {"amount": 1})]
        validate_password("an unlisted passphrase 9d1c")
        # Opened once per process: the same object on every check.
        assert seekless.django.get_index() is seekless.django.get_index()


def test_min_count_lets_rare_passwords_through(sha1_index):
    with override_settings(SEEKLESS_PWNED={"INDEX": str(sha1_index), "MIN_COUNT": 20}):
        validate_password("hunter2")  # seen 17 times
        with pytest.raises(ValidationError):
            validate_password("password")


def test_singular_and_plural_messages(sha1_index):
    validator = PwnedPasswordsValidator(
        error_message=("Seen once.", "Seen %(amount)d times."), help_message="Pick another."
    )
    with override_settings(SEEKLESS_PWNED={"INDEX": str(sha1_index)}):
        with pytest.raises(ValidationError) as caught:
            validator.validate("letmein")
        assert caught.value.messages == ["Seen once."]
        with pytest.raises(ValidationError) as caught:
            validator.validate("hunter2")
        assert caught.value.messages == ["Seen 17 times."]
    assert validator.get_help_text() == "Pick another."


def test_missing_or_damaged_index_falls_back_to_common_passwords(tmp_path, caplog):
    damaged = tmp_path / "damaged.idx"
    damaged.write_bytes(b"not an index" * 1000)
    for index in [tmp_path / "absent.idx", damaged, None]:
        seekless.django.reset()
        config = {"INDEX": str(index)} if index else {}
        caplog.clear()
        with override_settings(SEEKLESS_PWNED=config), caplog.at_level(logging.ERROR, "seekless.django"):
            # Django's own list has "password"; the fallback catches it.
            with pytest.raises(ValidationError) as caught:
                validate_password("password")
            assert [e.code for e in caught.value.error_list] == ["password_too_common"]
            validate_password("an unlisted passphrase 9d1c")
        assert any(r.levelno == logging.ERROR for r in caplog.records), index


def test_deconstruct_equality_and_help():
    default = PwnedPasswordsValidator()
    assert default == PwnedPasswordsValidator()
    assert default != PwnedPasswordsValidator(error_message="Other.")
    path, args, kwargs = PwnedPasswordsValidator(error_message=("One.", "Many.")).deconstruct()
    assert path == "seekless.django.PwnedPasswordsValidator" and args == ()
    rebuilt = PwnedPasswordsValidator(*args, **kwargs)
    assert rebuilt == PwnedPasswordsValidator(error_message=("One.", "Many."))
    assert rebuilt.error_message == {"singular": "One.", "plural": "Many."}
    assert password_validators_help_texts() == [str(default.get_help_text())]
    # The password is hidden from error reports.
    assert getattr(PwnedPasswordsValidator.validate, "sensitive_variables", None) == "__ALL__"
