"""Password reset by mail, against a real local SMTP server (aiosmtpd): plain, STARTTLS with
AUTH, implicit TLS."""

from __future__ import annotations

import email
import email.policy
import re
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from support import Api, Server, assert_error, unique

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only

PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new secret"
_TOKEN = re.compile(r"/#/reset\?token=([A-Za-z0-9_-]+)")


@dataclass
class Mailbox:
    """An aiosmtpd handler that keeps what it receives."""

    messages: list[tuple[Envelope, email.message.EmailMessage]] = field(default_factory=list)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        parsed = email.message_from_bytes(
            envelope.original_content or b"", policy=email.policy.default
        )
        self.messages.append((envelope, parsed))  # type: ignore[arg-type]
        return "250 OK"

    def wait(
        self, count: int = 1, timeout: float = 15
    ) -> list[tuple[Envelope, email.message.EmailMessage]]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.messages) >= count, f"expected {count} mails, got {len(self.messages)}"
        return self.messages


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class MailServer:
    mailbox: Mailbox
    controller: Controller
    port: int
    logins: list[tuple[bytes, bytes]] = field(default_factory=list)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path]:
    authority = trustme.CA()
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    return authority, pem


@pytest.fixture(scope="module")
def mail_servers(ca: tuple[trustme.CA, Path]) -> Iterator[Callable[..., MailServer]]:
    """Start local SMTP servers: plain, STARTTLS (+AUTH) or implicit TLS."""
    running: list[Controller] = []

    def start(mode: str = "plain", users: dict[str, str] | None = None) -> MailServer:
        mailbox, port = Mailbox(), free_port()
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca[0].issue_cert("127.0.0.1", "localhost").configure_cert(server_context)
        logins: list[tuple[bytes, bytes]] = []

        def authenticate(
            server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
        ) -> AuthResult:
            assert isinstance(auth_data, LoginPassword)
            logins.append((auth_data.login, auth_data.password))
            ok = (
                users is not None
                and users.get(auth_data.login.decode()) == auth_data.password.decode()
            )
            return AuthResult(success=ok)

        kwargs: dict[str, Any] = {}
        if mode == "starttls":
            kwargs = {
                "tls_context": server_context,
                "require_starttls": True,
                "auth_require_tls": True,
            }
        elif mode == "ssl":
            kwargs = {"ssl_context": server_context}
        if users is not None:
            kwargs.update(authenticator=authenticate, auth_required=True)
        controller = Controller(mailbox, hostname="127.0.0.1", port=port, **kwargs)
        controller.start()
        running.append(controller)
        return MailServer(mailbox, controller, port, logins)

    yield start
    for controller in running:
        controller.stop()


def smtp_env(mail: MailServer, security: str = "none", **extra: str) -> dict[str, str]:
    return {
        "AIRWAVE_SMTP_HOST": "127.0.0.1",
        "AIRWAVE_SMTP_PORT": str(mail.port),
        "AIRWAVE_SMTP_SECURITY": security,
        "AIRWAVE_SMTP_FROM": "Airwave <radio@airwave.example>",
        "AIRWAVE_SMTP_TIMEOUT": "5",
        **extra,
    }


@pytest.fixture(scope="module")
def plain(mail_servers: Callable[..., MailServer]) -> MailServer:
    return mail_servers("plain")


@pytest.fixture(scope="module")
def server(start_server: Callable[..., Server], plain: MailServer) -> Server:
    return start_server(
        "--open-registration",
        env=smtp_env(
            plain,
            AIRWAVE_PASSWORD_RESET_LIMIT="3",
            AIRWAVE_LOGIN_MAX_FAILURES_PER_USER="3",
            AIRWAVE_LOGIN_MAX_ACCOUNTS_PER_ADDRESS="100000",
        ),
    )


def account(server: Server, email_setting: bool = True) -> Api:
    """A listener whose resets go to NAME@example.org (through the email setting, or as the
    username)."""
    api = server.client()
    name = unique("reset")
    if email_setting:
        api.register(name)
        api.ok("v1/listener/updateSettings", {"email": f"{name}@example.org"})
    else:
        name = f"{name}@example.org"
        api.register(name)
    api.username = name  # type: ignore[attr-defined]
    return api


def mails_to(mailbox: Mailbox, address: str, count: int = 1) -> list[email.message.EmailMessage]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        found = [m for env, m in mailbox.messages if address in env.rcpt_tos]
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no mail to {address}")


def token_of(message: email.message.EmailMessage) -> str:
    body = message.get_content()
    match = _TOKEN.search(body)
    assert match, body
    assert match.group(1) in body.replace(
        match.group(0), ""
    )  # the code is in the text on its own too
    return match.group(1)


def request_reset(server: Server, username: str) -> None:
    assert server.client().ok("v1/listener/emailPassword", {"username": username}) == {}


def test_reset_by_mail_end_to_end(server: Server, plain: MailServer) -> None:
    api = account(server)
    phone = server.client()
    phone.login(api.username, PASSWORD)  # type: ignore[attr-defined]
    address = f"{api.username}@example.org"  # type: ignore[attr-defined]
    request_reset(server, api.username.upper())  # type: ignore[attr-defined]  # names are case-insensitive

    message = mails_to(plain.mailbox, address)[0]
    assert message["To"] == address and "radio@airwave.example" in message["From"]
    assert message["Subject"] and message["Message-ID"] and message["Date"]
    body = message.get_content()
    assert f"{server.url}/#/reset?token=" in body and api.username in body  # type: ignore[attr-defined]
    assert "60 minutes" in body  # password_reset_lifetime
    token = token_of(message)
    assert len(token) >= 22  # at least 128 random bits

    assert server.client().ok("v1/listener/validatePasswordResetToken", {"token": token}) == {}
    # a weak password is refused and leaves the token usable
    weak = server.client().call(
        "v1/listener/resetPassword", {"token": token, "newPassword": "short"}
    )
    assert_error(weak, 400, "INVALID_PASSWORD")
    assert server.client().ok("v1/listener/validatePasswordResetToken", {"token": token}) == {}
    assert (
        server.client().ok(
            "v1/listener/resetPassword", {"token": token, "newPassword": NEW_PASSWORD}
        )
        == {}
    )

    for old in (api, phone):
        assert_error(old.call("v1/listener/getProfile", {}), 401, "AUTH_INVALID_TOKEN")
    assert_error(
        server.client().call("v1/auth/login", {"username": api.username, "password": PASSWORD}),  # type: ignore
        401,
        "AUTH_INVALID_USERNAME_PASSWORD",
    )
    assert server.client().login(api.username, NEW_PASSWORD)  # type: ignore[attr-defined]

    # single use
    assert_error(
        server.client().call("v1/listener/validatePasswordResetToken", {"token": token}),
        410,
        "CONTENT_HAS_EXPIRED",
    )
    again = server.client().call(
        "v1/listener/resetPassword", {"token": token, "newPassword": "yet another secret"}
    )
    assert_error(again, 410, "CONTENT_HAS_EXPIRED")
    assert server.client().login(api.username, NEW_PASSWORD)  # type: ignore[attr-defined]


def test_username_that_is_an_address_gets_the_mail(server: Server, plain: MailServer) -> None:
    api = account(server, email_setting=False)
    request_reset(server, api.username)  # type: ignore[attr-defined]
    token = token_of(mails_to(plain.mailbox, api.username)[0])  # type: ignore[attr-defined]
    assert (
        server.client().ok(
            "v1/listener/resetPassword", {"token": token, "newPassword": NEW_PASSWORD}
        )
        == {}
    )
    assert server.client().login(api.username, NEW_PASSWORD)  # type: ignore[attr-defined]


def test_unknown_tokens_and_request_errors(server: Server) -> None:
    client = server.client()
    assert_error(
        client.call("v1/listener/validatePasswordResetToken", {"token": "x" * 43}), 404, "NOT_FOUND"
    )
    assert_error(
        client.call("v1/listener/resetPassword", {"token": "x" * 43, "newPassword": NEW_PASSWORD}),
        404,
        "NOT_FOUND",
    )
    assert_error(client.call("v1/listener/validatePasswordResetToken", {}), 400, "INVALID_REQUEST")
    assert_error(
        client.call("v1/listener/validatePasswordResetToken", {"token": ""}), 400, "INVALID_REQUEST"
    )
    assert_error(client.call("v1/listener/resetPassword", {"token": "abc"}), 400, "INVALID_REQUEST")
    assert_error(client.call("v1/listener/emailPassword", {}), 400, "INVALID_REQUEST")
    assert_error(client.call("v1/listener/emailPassword", {"username": 12}), 400, "INVALID_REQUEST")


def test_a_newer_request_retires_the_older_link(server: Server, plain: MailServer) -> None:
    api = account(server)
    address = f"{api.username}@example.org"  # type: ignore[attr-defined]
    request_reset(server, api.username)  # type: ignore[attr-defined]
    first = token_of(mails_to(plain.mailbox, address, 1)[0])
    request_reset(server, api.username)  # type: ignore[attr-defined]
    second = token_of(mails_to(plain.mailbox, address, 2)[1])
    assert first != second
    assert_error(
        server.client().call("v1/listener/validatePasswordResetToken", {"token": first}),
        410,
        "CONTENT_HAS_EXPIRED",
    )
    assert server.client().ok("v1/listener/validatePasswordResetToken", {"token": second}) == {}


def test_expired_token_is_refused(server: Server, plain: MailServer) -> None:
    api = account(server)
    request_reset(server, api.username)  # type: ignore[attr-defined]
    token = token_of(mails_to(plain.mailbox, f"{api.username}@example.org")[0])  # type: ignore[attr-defined]
    server.backend.execute(
        "UPDATE password_resets SET expires_at = '2001-01-01 00:00:00.000000', "
        "created_at = '2001-01-01 00:00:00.000000' WHERE used_at IS NULL"
    )
    assert_error(
        server.client().call("v1/listener/validatePasswordResetToken", {"token": token}),
        410,
        "CONTENT_HAS_EXPIRED",
    )
    expired = server.client().call(
        "v1/listener/resetPassword", {"token": token, "newPassword": NEW_PASSWORD}
    )
    assert_error(expired, 410, "CONTENT_HAS_EXPIRED")
    assert server.client().login(api.username, PASSWORD)  # type: ignore[attr-defined]


def test_unknown_names_get_the_same_answer_and_no_mail(server: Server, plain: MailServer) -> None:
    known = account(server)
    without_address = server.client()
    bare = unique("bare")
    without_address.register(bare)
    before = len(plain.mailbox.messages)
    answers = []
    for name in (unique("ghost"), bare, f"{unique('ghost')}@example.org", known.username):  # type: ignore
        response = server.client().call("v1/listener/emailPassword", {"username": name})
        answers.append((response.status_code, response.content, response.headers.get("set-cookie")))
    assert len(set(answers)) == 1 and answers[0][:2] == (200, b"{}")
    mails_to(plain.mailbox, f"{known.username}@example.org")  # type: ignore[attr-defined]
    time.sleep(0.5)
    assert (
        len(plain.mailbox.messages) == before + 1
    )  # only the known account with an address got one


def test_requests_are_rate_limited_per_name_and_per_address(server: Server) -> None:
    for name in (account(server).username, unique("ghost")):  # type: ignore[attr-defined]
        for _ in range(3):  # password_reset_limit
            request_reset(server, name)
        limited = server.client().call("v1/listener/emailPassword", {"username": name})
        assert_error(limited, 429, "RATE_LIMITED")
        assert 0 < int(limited.headers["Retry-After"]) <= 3600
    # per client address: 10 x password_reset_limit, whatever the names
    busy = 0
    for _ in range(40):
        response = server.client().call("v1/listener/emailPassword", {"username": unique("spray")})
        if response.status_code == 429:
            assert_error(response, 429, "RATE_LIMITED")
            busy += 1
        else:
            assert response.status_code == 200
    assert busy >= 40 - 30 + 8  # the 8 requests above count against the address too


@pytest.fixture(scope="module")
def strict(start_server: Callable[..., Server], plain: MailServer) -> Server:
    """A server whose login throttle answers RATE_LIMITED after two failures."""
    return start_server(
        "--open-registration",
        env=smtp_env(plain, AIRWAVE_LOGIN_FREE_FAILURES="2", AIRWAVE_LOGIN_BACKOFF_BASE="600"),
    )


def lock_out(server: Server, username: str) -> None:
    """Two wrong passwords: the right one is then refused for a while."""
    for _ in range(2):
        server.client().call("v1/auth/login", {"username": username, "password": "wrong wrong"})
    assert_error(
        server.client().call("v1/auth/login", {"username": username, "password": PASSWORD}),
        429,
        "RATE_LIMITED",
    )


def test_reset_lifts_login_throttling(strict: Server, plain: MailServer) -> None:
    server = strict
    api = account(server)
    lock_out(server, api.username)  # type: ignore[attr-defined]
    request_reset(server, api.username)  # type: ignore[attr-defined]
    token = token_of(mails_to(plain.mailbox, f"{api.username}@example.org")[0])  # type: ignore[attr-defined]
    server.client().ok("v1/listener/resetPassword", {"token": token, "newPassword": NEW_PASSWORD})
    assert server.client().login(api.username, NEW_PASSWORD)  # type: ignore[attr-defined]


def test_starttls_and_auth(
    start_server: Callable[..., Server],
    mail_servers: Callable[..., MailServer],
    ca: tuple[trustme.CA, Path],
) -> None:
    mail = mail_servers("starttls", users={"airwave": "smtp secret"})
    env = smtp_env(
        mail,
        "starttls",
        AIRWAVE_SMTP_USERNAME="airwave",
        AIRWAVE_SMTP_PASSWORD="smtp secret",
        SSL_CERT_FILE=str(ca[1]),
    )  # the certificate is checked against the test CA
    server = start_server("--open-registration", env=env)
    api = account(server)
    request_reset(server, api.username)  # type: ignore[attr-defined]
    token = token_of(mails_to(mail.mailbox, f"{api.username}@example.org")[0])  # type: ignore[attr-defined]
    assert mail.logins == [(b"airwave", b"smtp secret")]
    assert server.client().ok("v1/listener/validatePasswordResetToken", {"token": token}) == {}

    # wrong SMTP credentials: the answer is the same, the failure is logged, no mail
    wrong = start_server("--open-registration", env={**env, "AIRWAVE_SMTP_PASSWORD": "not it"})
    other = account(wrong)
    request_reset(wrong, other.username)  # type: ignore[attr-defined]
    assert wrong.wait_for_log(lambda line: "mail not sent" in line, timeout=20)
    assert len(mail.mailbox.messages) == 1


def test_untrusted_certificate_is_refused_unless_verification_is_off(
    start_server: Callable[..., Server], mail_servers: Callable[..., MailServer]
) -> None:
    mail = mail_servers("ssl")
    checked = start_server("--open-registration", env=smtp_env(mail, "ssl"))
    api = account(checked)
    request_reset(checked, api.username)  # type: ignore[attr-defined]
    assert checked.wait_for_log(
        lambda line: "mail not sent" in line and "CERTIFICATE_VERIFY_FAILED" in line
    )
    assert mail.mailbox.messages == []

    unchecked = start_server(
        "--open-registration", env=smtp_env(mail, "ssl", AIRWAVE_SMTP_VERIFY_TLS="false")
    )
    api = account(unchecked)
    request_reset(unchecked, api.username)  # type: ignore[attr-defined]
    assert token_of(mails_to(mail.mailbox, f"{api.username}@example.org")[0])  # type: ignore[attr-defined]


def test_dead_mail_server_never_delays_the_answer(start_server: Callable[..., Server]) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does), never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        server = start_server(
            "--open-registration",
            env={
                "AIRWAVE_SMTP_HOST": "127.0.0.1",
                "AIRWAVE_SMTP_PORT": str(port),
                "AIRWAVE_SMTP_TIMEOUT": "8",
            },
        )
        api = account(server)
        started = time.monotonic()
        for _ in range(3):
            request_reset(server, api.username)  # type: ignore[attr-defined]
        assert time.monotonic() - started < 5  # less than one smtp_timeout for all three
        assert server.client().ok("v1/listener/getProfile", {}, token=api.token) is not None
        assert server.wait_for_log(lambda line: "mail not sent" in line, timeout=30)


def test_without_smtp_nothing_is_sent_and_it_is_logged(start_server: Callable[..., Server]) -> None:
    server = start_server("--open-registration")
    api = account(server)
    request_reset(server, api.username)  # type: ignore[attr-defined]
    assert server.wait_for_log(lambda line: "smtp_host is not set" in line)


def test_airwave_user_passwd_is_the_same_password_change(strict: Server, plain: MailServer) -> None:
    """The operator's `airwave user passwd` retires reset links, ends sessions, lifts throttling."""
    server = strict
    api = account(server)
    phone = server.client()
    phone.login(api.username, PASSWORD)  # type: ignore[attr-defined]
    request_reset(server, api.username)  # type: ignore[attr-defined]
    token = token_of(mails_to(plain.mailbox, f"{api.username}@example.org")[0])  # type: ignore[attr-defined]
    lock_out(server, api.username)  # type: ignore[attr-defined]

    done = server.cli("user", "passwd", api.username, "--password-stdin", input=NEW_PASSWORD + "\n")  # type: ignore
    assert done.returncode == 0, done.stderr
    assert f"changed the password of {api.username}" in done.stdout  # type: ignore[attr-defined]

    for link in ("v1/listener/validatePasswordResetToken", "v1/listener/resetPassword"):
        body = {"token": token, "newPassword": "a password of mine"}
        assert_error(server.client().call(link, body), 410, "CONTENT_HAS_EXPIRED")
    for old in (api, phone):
        assert_error(old.call("v1/listener/getProfile", {}), 401, "AUTH_INVALID_TOKEN")
    assert server.client().login(api.username, NEW_PASSWORD)  # type: ignore[attr-defined]
