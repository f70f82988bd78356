"""Outgoing mail through the operator's SMTP server (STARTTLS, implicit TLS or plain; optional
AUTH).

Mail leaves on a small pool of background threads: a slow or dead mail server delays only the mail
(by at most `smtp_timeout` per step), never the API call that asked for it.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from concurrent.futures import Future, ThreadPoolExecutor
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid

from airwave.config import Settings

log = logging.getLogger("airwave.mail")

_senders = ThreadPoolExecutor(max_workers=2, thread_name_prefix="airwave-mail")


def configured(settings: Settings) -> bool:
    return bool(settings.smtp_host)


def compose(settings: Settings, to: str, subject: str, text: str) -> EmailMessage:
    """A plain-text mail from `smtp_from`."""
    message = EmailMessage()
    message["From"] = settings.smtp_from
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(
        domain=_sender_domain(settings)
    )  # no DNS lookup for the local name
    message.set_content(text)
    return message


def _sender_domain(settings: Settings) -> str:
    address = getaddresses([settings.smtp_from])[0][1]
    domain = address.rpartition("@")[2]
    return domain if domain and all(c.isalnum() or c in ".-" for c in domain) else "airwave.invalid"


def _tls_context(settings: Settings) -> ssl.SSLContext:
    """The system's trust store (SSL_CERT_FILE/SSL_CERT_DIR are honoured); unchecked only when
    the operator says so."""
    context = ssl.create_default_context()
    if not settings.smtp_verify_tls:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def send(settings: Settings, message: EmailMessage) -> None:
    """Deliver one message now; raises OSError/smtplib.SMTPException on failure."""
    if not settings.smtp_host:
        raise ValueError("smtp_host is not set")
    host, port, timeout = settings.smtp_host, settings.smtp_port, settings.smtp_timeout
    client: smtplib.SMTP
    if settings.smtp_security == "ssl":
        client = smtplib.SMTP_SSL(host, port, timeout=timeout, context=_tls_context(settings))
    else:
        client = smtplib.SMTP(host, port, timeout=timeout)
    with client:
        client.ehlo()
        if settings.smtp_security == "starttls":
            client.starttls(context=_tls_context(settings))
            client.ehlo()
        if settings.smtp_username:
            client.login(settings.smtp_username, settings.smtp_password or "")
        client.send_message(message)


def send_later(settings: Settings, message: EmailMessage, purpose: str) -> Future[bool]:
    """Queue a message for the background senders; the future says whether it was delivered
    (failures are logged)."""
    return _senders.submit(_deliver, settings, message, purpose)


def _deliver(settings: Settings, message: EmailMessage, purpose: str) -> bool:
    context = {"purpose": purpose, "smtp_host": settings.smtp_host, "smtp_port": settings.smtp_port}
    try:
        send(settings, message)
    except (OSError, smtplib.SMTPException, ValueError) as exc:
        log.warning("mail not sent: %s", f"{type(exc).__name__}: {exc}", extra=context)
        return False
    log.info("mail sent", extra=context)
    return True
